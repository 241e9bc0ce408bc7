// Runs one reference kernel on host tensors, for the hand-computed kernel tests.
#pragma once

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "graph/ir.h"

namespace steadyocr::testing {

struct OutSpec {
  DType dtype = DType::kF32;
  Shape shape;
};

// Builds a one-node graph (inputs may be undefined Tensors for omitted optional inputs) and runs it with
// run_node_reference. The outputs' dtypes and shapes are given, as shape inference would set them.
inline Status run_reference_op(graph::OpKind op, graph::OpAttrs attrs, const std::vector<Tensor>& inputs,
                               const std::vector<OutSpec>& outs, std::vector<Tensor>* results) {
  graph::Graph g;
  std::vector<graph::Value*> in_values;
  std::vector<const Tensor*> in_ptrs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      in_values.push_back(nullptr);
      in_ptrs.push_back(nullptr);
      continue;
    }
    in_values.push_back(g.add_value("in" + std::to_string(i), inputs[i].dtype(), inputs[i].shape()));
    in_ptrs.push_back(&inputs[i]);
  }
  std::vector<graph::Value*> out_values;
  for (size_t i = 0; i < outs.size(); ++i) {
    out_values.push_back(g.add_value("out" + std::to_string(i), outs[i].dtype, outs[i].shape));
  }
  graph::Node* n = g.add_node(op, "node", in_values, out_values, std::move(attrs));
  return run_node_reference(*n, in_ptrs, results);
}

// Same, returning output 0 and failing the test on error.
inline Tensor reference_op(graph::OpKind op, graph::OpAttrs attrs, const std::vector<Tensor>& inputs, OutSpec out) {
  std::vector<Tensor> results;
  Status s = run_reference_op(op, std::move(attrs), inputs, {out}, &results);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return s.is_ok() ? results[0] : Tensor();
}

inline std::vector<float> floats(const Tensor& t) {
  return t.defined() ? t.to_floats() : std::vector<float>{};
}
inline std::vector<int64_t> ints(const Tensor& t) {
  return t.defined() ? t.to_int64s() : std::vector<int64_t>{};
}

}  // namespace steadyocr::testing

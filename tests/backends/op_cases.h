// Cross-backend op cases: each case is declared once as a builder of a tiny graph (graph inputs with static
// shapes, seeded constant weights, one node or a small fused pattern) and runs on every backend present,
// compared with the reference backend (in the spirit of ggml's test-backend-ops).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "graph/ir.h"

namespace steadyocr::testing {

// A built case: the graph and one tensor per graph input.
struct CaseGraph {
  graph::Graph graph;
  std::vector<Tensor> inputs;
};

struct OpCase {
  std::string name;  // readable, [A-Za-z0-9_] only: "Conv_k3_s2_g32_dw_pad1111_hardswish"
  graph::OpKind op;  // the op under test (support matrix and coverage)
  std::function<CaseGraph()> build;
  double max_nmse = 1e-7;          // fp32 backends
  double max_nmse_reduced = 3e-3;  // fp16/bf16 backends
};

// Builds case graphs: every value gets its dtype and static shape here, so the harness does not depend on
// shape inference.
class CaseBuilder {
 public:
  explicit CaseBuilder(uint32_t seed) : seed_(seed) {}

  // A graph input filled with uniform values in [lo, hi).
  graph::Value* input(const Shape& shape, float lo = -1.f, float hi = 1.f);
  // A graph input with given contents (any dtype).
  graph::Value* input(Tensor t);
  // A constant (weight) with uniform values in [lo, hi).
  graph::Value* weight(const Shape& shape, float lo = -1.f, float hi = 1.f);
  graph::Value* constant(Tensor t);
  // Adds a node with one output of the given shape and dtype; returns that output.
  graph::Value* node(graph::OpKind op, graph::OpAttrs attrs, std::vector<graph::Value*> inputs, const Shape& out,
                     DType dtype = DType::kF32);
  CaseGraph finish(std::vector<graph::Value*> outputs);

 private:
  uint32_t next_seed() { return seed_ * 7919u + counter_++; }
  graph::Graph graph_;
  std::vector<Tensor> inputs_;
  uint32_t seed_;
  uint32_t counter_ = 0;
};

// Every case, in a fixed order.
const std::vector<OpCase>& all_op_cases();

}  // namespace steadyocr::testing

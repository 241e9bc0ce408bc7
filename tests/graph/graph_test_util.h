// Helpers for the graph tests: running a graph through the reference backend and comparing two graphs.
#pragma once

#include <gtest/gtest.h>

#include <vector>

#include "backends/reference/reference_backend.h"
#include "graph/ir.h"
#include "graph/passes/passes.h"
#include "test_util.h"

namespace steadyocr::testing {

// Pass options as the runtime builds them: constant folding evaluates nodes with the reference kernels.
inline graph::PassOptions ref_passes(graph::PassOptions options = {}) {
  options.evaluate = run_node_reference;
  return options;
}

// Runs a statically shaped graph on the reference backend; empty on failure (with a test failure recorded).
inline std::vector<Tensor> run_graph(const graph::Graph& g, const std::vector<Tensor>& inputs) {
  auto prepared = make_reference_backend()->prepare(g);
  EXPECT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  if (!prepared.is_ok()) return {};
  std::vector<Tensor> out;
  Status s = (*prepared)->run(inputs, &out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return s.is_ok() ? out : std::vector<Tensor>{};
}

// Asserts both graphs compute the same outputs on `inputs` (NMSE below `max_nmse`).
inline void expect_same_outputs(const graph::Graph& before, const graph::Graph& after,
                                const std::vector<Tensor>& inputs, double max_nmse = 1e-10) {
  auto a = run_graph(before, inputs);
  auto b = run_graph(after, inputs);
  ASSERT_EQ(a.size(), b.size());
  ASSERT_FALSE(a.empty());
  for (size_t i = 0; i < a.size(); ++i) {
    auto c = compare(b[i], a[i]);
    EXPECT_TRUE(c.shape_match) << "output " << i << ": " << b[i].describe() << " vs " << a[i].describe();
    EXPECT_LE(c.nmse, max_nmse) << "output " << i << ": " << c.describe();
  }
}

}  // namespace steadyocr::testing

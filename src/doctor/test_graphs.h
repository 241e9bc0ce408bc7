// Small graphs the doctor runs on the CUDA backend and on the CPU oracle to compare outputs: one per
// kernel family, single convolutions cut out of the real models, and a worker graph for layer 4.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"

namespace steadyocr::doctor {

struct TestGraph {
  std::string name;
  graph::Graph graph;
  std::vector<Tensor> inputs;
};

// Deterministic values in [lo, hi).
Tensor random_values(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f);

// One graph per kernel family: elementwise with broadcast, activations, resize (nearest, linear),
// softmax, layernorm, conv (3x3+relu, depthwise+hardswish, 1x1), conv-transpose, matmul, pooling,
// transpose+concat. Shapes are static and small.
std::vector<Result<TestGraph>> make_kernel_test_graphs();

// A graph holding only `node` (a Conv or ConvTranspose of a specialised model): its non-constant inputs
// become graph inputs with random values; its constants (weights, bias) are kept.
Result<TestGraph> make_single_node_graph(const graph::Node& node, uint32_t seed);
// A key that is equal for two conv nodes exactly when they compute the same shape and configuration.
std::string conv_signature(const graph::Node& node);

// A few convs, a resize and a softmax: what a worker runs repeatedly in layer 4.
Result<TestGraph> make_worker_graph();

}  // namespace steadyocr::doctor

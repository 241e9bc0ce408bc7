// The reference backend: plain C++ kernels for every IR op in fp32. It is the oracle every other
// backend is compared with, and the constant folder's evaluator.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"

namespace steadyocr {

// Kernel contract: outputs are pre-allocated from the node's output Values (dtype, static shape);
// inputs[i] is null for an omitted optional input. Kernels are stateless and thread-safe.
using RefKernelFn = Status (*)(const graph::Node& node, const std::vector<const Tensor*>& inputs,
                               std::vector<Tensor>& outputs);

// The kernel for an op, or null when the reference backend lacks it.
RefKernelFn find_reference_kernel(graph::OpKind op);

// Allocates outputs from the node's Value shapes and runs the reference kernel.
Status run_node_reference(const graph::Node& node, const std::vector<const Tensor*>& inputs,
                          std::vector<Tensor>* outputs);

std::unique_ptr<Backend> make_reference_backend();

}  // namespace steadyocr

// Internal to the reference backend: the kernel functions (one file per op) and the helpers they share.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"

namespace steadyocr::reference {

using Inputs = std::vector<const Tensor*>;
using Outputs = std::vector<Tensor>;

// Kernels, grouped by the file that defines them. Each follows the RefKernelFn contract.
Status shape_kernel(const graph::Node& node, const Inputs& in, Outputs& out);            // shape.cpp
Status cast_kernel(const graph::Node& node, const Inputs& in, Outputs& out);             // cast.cpp
Status slice_kernel(const graph::Node& node, const Inputs& in, Outputs& out);            // slice.cpp
Status concat_kernel(const graph::Node& node, const Inputs& in, Outputs& out);           // concat.cpp
Status reshape_kernel(const graph::Node& node, const Inputs& in, Outputs& out);          // reshape.cpp (+Squeeze...)
Status binary_kernel(const graph::Node& node, const Inputs& in, Outputs& out);           // binary.cpp
Status sqrt_kernel(const graph::Node& node, const Inputs& in, Outputs& out);             // sqrt.cpp
Status activation_kernel(const graph::Node& node, const Inputs& in, Outputs& out);       // activation.cpp
Status conv_kernel(const graph::Node& node, const Inputs& in, Outputs& out);             // conv.cpp
Status conv_transpose_kernel(const graph::Node& node, const Inputs& in, Outputs& out);   // conv_transpose.cpp
Status batchnorm_kernel(const graph::Node& node, const Inputs& in, Outputs& out);        // batchnorm.cpp
Status global_avg_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out);  // pool.cpp
Status avg_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out);         // pool.cpp
Status max_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out);         // pool.cpp
Status resize_kernel(const graph::Node& node, const Inputs& in, Outputs& out);           // resize.cpp
Status transpose_kernel(const graph::Node& node, const Inputs& in, Outputs& out);        // transpose.cpp
Status matmul_kernel(const graph::Node& node, const Inputs& in, Outputs& out);           // matmul.cpp
Status softmax_kernel(const graph::Node& node, const Inputs& in, Outputs& out);          // softmax.cpp
Status top1_kernel(const graph::Node& node, const Inputs& in, Outputs& out);             // top1.cpp
Status image_lut_kernel(const graph::Node& node, const Inputs& in, Outputs& out);        // image_lut.cpp
Status reduce_mean_kernel(const graph::Node& node, const Inputs& in, Outputs& out);      // reduce_mean.cpp
Status layernorm_kernel(const graph::Node& node, const Inputs& in, Outputs& out);        // layernorm.cpp

// Fails unless input `i` is present and has dtype `t` (messages name the node and the input).
Status require_input(const graph::Node& node, const Inputs& in, size_t i, DType t);
// Fails unless input `i` is present (any dtype).
Status require_present(const graph::Node& node, const Inputs& in, size_t i);
// Fails unless the node has at least `n` outputs allocated and output 0 has dtype `t`.
Status require_output(const graph::Node& node, const Outputs& out, DType t);
// Fails unless the attrs variant holds A.
template <typename A>
Status require_attrs(const graph::Node& node) {
  if (!std::holds_alternative<A>(node.attrs)) {
    return invalid_argument(fmt::format("{}: attributes of the wrong kind for this op (import bug)", node.describe()));
  }
  return Status::ok();
}

// Work (elements or multiply-adds) below which a kernel runs on the calling thread: forking costs more than it
// saves for small tensors, and far more when the host is oversubscribed.
constexpr int64_t kMinParallelWork = int64_t{1} << 16;
// The parallel_for grain for items that each cost `work_per_item`.
inline int64_t parallel_grain(int64_t work_per_item) {
  return std::max<int64_t>(1, kMinParallelWork / std::max<int64_t>(work_per_item, 1));
}

// Axis in [-rank, rank) to [0, rank); false when out of range.
bool normalize_axis(int64_t axis, int64_t rank, int64_t* out);

// Strides (in elements) that read `in_shape` broadcast NumPy-style to `out_shape` (0 on broadcast axes);
// false when the shapes do not broadcast.
bool broadcast_strides(const Shape& in_shape, const Shape& out_shape, std::vector<int64_t>* strides);

// Copies a strided view of `src` (element strides per output axis, may be negative or 0; `src` points at the
// view's first element) into contiguous `dst` of `out_shape`. Works for any element size 1/2/4/8.
void strided_copy(const void* src, const std::vector<int64_t>& src_strides, const Shape& out_shape, void* dst,
                  size_t esize);

}  // namespace steadyocr::reference

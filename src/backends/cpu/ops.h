// Internal to the oneDNN CPU backend: one builder per op file. Each adds the step(s) for `node` to the plan
// (and may absorb following nodes it fuses, e.g. activations into a convolution).
#pragma once

#include "backends/common/op_table.h"
#include "backends/cpu/plan.h"
#include "graph/ir.h"

namespace steadyocr::cpu {

Status build_conv(PlanBuilder& b, const graph::Node& n);            // conv.cpp (oneDNN)
Status build_conv_transpose(PlanBuilder& b, const graph::Node& n);  // conv_transpose.cpp (oneDNN)
Status build_matmul(PlanBuilder& b, const graph::Node& n);          // matmul.cpp (oneDNN)
Status build_pool(PlanBuilder& b, const graph::Node& n);            // pool.cpp (oneDNN): Max/Avg/GlobalAvg
Status build_concat(PlanBuilder& b, const graph::Node& n);          // concat.cpp (oneDNN for f32)
Status build_transpose(PlanBuilder& b, const graph::Node& n);       // transpose.cpp (oneDNN reorder)
Status build_eltwise(PlanBuilder& b, const graph::Node& n);         // eltwise.cpp: binary/unary/BatchNorm chains
Status build_int_binary(PlanBuilder& b, const graph::Node& n);      // int_arith.cpp: i64/i32 Add/Sub/Mul/Div
bool int_binary_supported(const graph::Node& n);                    // int_arith.cpp
Status build_softmax(PlanBuilder& b, const graph::Node& n);         // softmax.cpp
Status build_layernorm(PlanBuilder& b, const graph::Node& n);       // layernorm.cpp
Status build_reduce_mean(PlanBuilder& b, const graph::Node& n);     // reduce_mean.cpp
Status build_resize(PlanBuilder& b, const graph::Node& n);          // resize.cpp
Status build_slice(PlanBuilder& b, const graph::Node& n);           // slice.cpp
Status build_view(PlanBuilder& b, const graph::Node& n);            // shape_ops.cpp: Reshape/Squeeze/Unsqueeze/Identity
Status build_shape(PlanBuilder& b, const graph::Node& n);           // shape_ops.cpp
Status build_cast(PlanBuilder& b, const graph::Node& n);            // shape_ops.cpp

// A oneDNN reorder between two buffers of the same logical dims (reorder.cpp).
Result<std::unique_ptr<CpuOp>> make_reorder_op(int src, const Md& src_md, int dst, const Md& dst_md);

// A strided copy (any dtype) from `in` (+offset elements) into dense `out` (transpose.cpp).
std::unique_ptr<CpuOp> make_strided_copy_op(int in, int out, std::vector<int64_t> strides, std::vector<int64_t> dims,
                                            int64_t offset, size_t elem, std::string label);

using CpuBuildFn = Status (*)(PlanBuilder& b, const graph::Node& n);
using CpuOpEntry = common::OpTable<CpuBuildFn>::Entry;
// The ops this backend runs, with their builders and conditions (op_table.cpp).
const common::OpTable<CpuBuildFn>& cpu_ops();
// Whether this backend has a builder for the node's op and dtypes (reads cpu_ops()).
bool cpu_supports(const graph::Node& n, std::string* why);
// Whether the op is built by build_eltwise (and so may join an elementwise chain).
bool is_eltwise(graph::OpKind op);

}  // namespace steadyocr::cpu

// Internal to the oneDNN CPU backend's symbolic plan: the op factories, one file per family.
#pragma once

#include "backends/cpu/symbolic_plan.h"

namespace steadyocr::cpu {

Status build_sym_conv(SymBuilder& b, const graph::Node& n);            // sym_conv.cpp
Status build_sym_conv_transpose(SymBuilder& b, const graph::Node& n);  // sym_conv.cpp
Status build_sym_depthwise(SymBuilder& b, const graph::Node& n);       // sym_depthwise.cpp
Status build_sym_pool(SymBuilder& b, const graph::Node& n);            // sym_pool.cpp: global average, average, max
Status build_sym_resize(SymBuilder& b, const graph::Node& n);          // sym_resize.cpp
Status build_sym_eltwise(SymBuilder& b, const graph::Node& n);         // sym_eltwise.cpp: unary and binary
Status build_sym_matmul(SymBuilder& b, const graph::Node& n);          // sym_matmul.cpp
Status build_sym_rows(SymBuilder& b, const graph::Node& n);            // sym_rows.cpp: Softmax, LayerNorm
Status build_sym_view(SymBuilder& b, const graph::Node& n);            // sym_layout_ops.cpp: Reshape and friends
Status build_sym_transpose(SymBuilder& b, const graph::Node& n);       // sym_layout_ops.cpp
Status build_sym_slice(SymBuilder& b, const graph::Node& n);           // sym_layout_ops.cpp
Status build_sym_concat(SymBuilder& b, const graph::Node& n);          // sym_layout_ops.cpp

// Converts between plain NCHW and NHWC (the builder's layout conversions).
std::unique_ptr<SymStep> make_layout_conversion(int from, int to, Layout to_layout);

}  // namespace steadyocr::cpu

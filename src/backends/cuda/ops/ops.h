// The op builders: each adds the steps of one node to the plan (one file per op).
#pragma once

#include "backends/cuda/plan_builder.h"
#include "graph/ir.h"

namespace steadyocr::cuda {

Status build_conv(PlanBuilder& b, const graph::Node& n);            // conv.cpp (cuDNN + fused epilogue)
Status build_conv_transpose(PlanBuilder& b, const graph::Node& n);  // conv_transpose.cpp (cuDNN backward data)
Status build_matmul(PlanBuilder& b, const graph::Node& n);          // matmul.cpp (cuBLAS)
Status build_binary(PlanBuilder& b, const graph::Node& n);          // elementwise.cpp
Status build_unary(PlanBuilder& b, const graph::Node& n);           // elementwise.cpp (Sqrt, activations)
Status build_batchnorm(PlanBuilder& b, const graph::Node& n);       // batchnorm.cpp
Status build_pool(PlanBuilder& b, const graph::Node& n);            // pool.cpp (GAP, AveragePool, MaxPool)
Status build_resize(PlanBuilder& b, const graph::Node& n);          // resize.cpp
Status build_softmax(PlanBuilder& b, const graph::Node& n);         // softmax.cpp
Status build_top1(PlanBuilder& b, const graph::Node& n);            // softmax.cpp
Status build_image_lut(PlanBuilder& b, const graph::Node& n);       // image_lut.cpp
Status build_reduce_mean(PlanBuilder& b, const graph::Node& n);     // reduce.cpp
Status build_layernorm(PlanBuilder& b, const graph::Node& n);       // layernorm.cpp
Status build_transpose(PlanBuilder& b, const graph::Node& n);       // transpose.cpp
Status build_concat(PlanBuilder& b, const graph::Node& n);          // concat.cpp
Status build_slice(PlanBuilder& b, const graph::Node& n);           // slice.cpp
Status build_reshape(PlanBuilder& b, const graph::Node& n);         // reshape.cpp (+Squeeze/Unsqueeze/Identity)
Status build_shape(PlanBuilder& b, const graph::Node& n);           // reshape.cpp
Status build_cast(PlanBuilder& b, const graph::Node& n);            // cast.cpp

}  // namespace steadyocr::cuda

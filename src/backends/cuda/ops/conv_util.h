// Shared by the convolution builders: the fused epilogue (bias + residual + activation) and the paths that skip
// cuDNN.
#pragma once

#include "backends/cuda/ops/cudnn_util.h"
#include "backends/cuda/plan.h"
#include "backends/cuda/plan_builder.h"
#include "graph/ir.h"

namespace steadyocr::cuda {

// Fills `e` with y = act(y + bias[c] + residual) over y's index space (acc = y, written back in place).
Status build_conv_epilogue(PlanBuilder& b, const graph::Node& n, const DevTensor& y, int64_t channels,
                           const graph::Activation& act, EwProgram* e);

// Depthwise convolutions (own kernel) and pointwise 1x1 ones (cuBLAS GEMM) run without cuDNN: cuDNN builds an
// execution plan on the first call of every new shape (tens of ms per shape bucket), these need none. Sets
// *handled when it took the node. BackendConfig::own_conv = false (STEADYOCR_CUDA_OWN_CONV=0) sends every
// convolution to cuDNN.
// With BackendConfig::cudnn = false (STEADYOCR_CUDA_CUDNN=0) it takes every convolution: the others as im2col +
// cuBLAS GEMM (kernels/im2col.cu).
// `force`: take this convolution whatever the configuration (cuDNN has no algorithm for it: conv_fallback below).
Status build_conv_without_cudnn(PlanBuilder& b, const graph::Node& n, bool* handled, bool force = false);
// ConvTranspose as cuBLAS GEMM + col2im, taken only with BackendConfig::cudnn = false.
Status build_conv_transpose_without_cudnn(PlanBuilder& b, const graph::Node& n, bool* handled, bool force = false);

// A convolution cuDNN cannot plan (no algorithm for the shape, a descriptor it refuses) runs on our own kernels
// instead, inside the cuDNN backend: a WARN line naming the node and cuDNN's error, and the counter
// steadyocr_cuda_conv_cudnn_fallbacks_total{op}. Errors that are not cuDNN's (out of memory, a lost context, a
// malformed node) are returned as they are.
Status conv_fallback(PlanBuilder& b, const graph::Node& n, const Status& cudnn_error, bool transposed);
// cuDNN's part of a convolution's plan, which adds nothing to the plan: the descriptors and the algorithm (the fault
// kind cudnn_no_algo makes it fail as a cuDNN without an algorithm for the shape would).
Status plan_with_cudnn(PlanBuilder& b, const ConvProblem& p, ConvDescriptors* d, ConvAlgoChoice* algo);

}  // namespace steadyocr::cuda

#include "backends/cuda/ops/cudnn_util.h"

#include "backends/cuda/cudnn_api.h"

#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::cuda {
namespace {

constexpr size_t kMaxWorkspace = size_t{256} << 20;

// fp32 plans must match the fp32 reference: FMA math only (CUDNN_DEFAULT_MATH permits TF32 on Ampere and later);
// `relaxed` accepts default math when cuDNN offers nothing else.
bool math_allowed(cudnnMathType_t m, DType dt, bool relaxed) {
  if (dt == DType::kF32) return m == CUDNN_FMA_MATH || (relaxed && m == CUDNN_DEFAULT_MATH);
  return true;
}

// Forward algorithms that run any spatial size of a layer they run at all, with a workspace that does not shrink as
// the problem grows (none or precomputed indices: the GEMM forms): a problem no larger in any dim than one queried
// before takes that query's workspace instead of asking cuDNN again. The others (FFT, Winograd, direct) are asked
// for every new size: whether they run it at all can depend on the size.
bool size_free_algo(const ConvProblem& p, int algo) {
  return !p.backward_data &&
         (algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM ||
          algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM || algo == CUDNN_CONVOLUTION_FWD_ALGO_GEMM);
}

CudaDevice::ConvDims dims_of(const ConvProblem& p) {
  return {p.n, p.h, p.w, p.oh, p.ow};
}

}  // namespace

ConvDescriptors::~ConvDescriptors() {
  if (x) SO_GPU_TRY(dnn().cudnnDestroyTensorDescriptor(x));
  if (y) SO_GPU_TRY(dnn().cudnnDestroyTensorDescriptor(y));
  if (w) SO_GPU_TRY(dnn().cudnnDestroyFilterDescriptor(w));
  if (conv) SO_GPU_TRY(dnn().cudnnDestroyConvolutionDescriptor(conv));
}

cudnnDataType_t cudnn_type(DType t) {
  return t == DType::kF16 ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
}

std::string ConvProblem::key() const {
  return fmt::format("{} {} x{}x{}x{}x{} w{}x{}x{} y{}x{} p{},{} s{},{} d{},{} g{}", backward_data ? "bwd" : "fwd",
                     dtype_name(dtype), n, c, h, w, k, kh, kw, oh, ow, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w,
                     group);
}

std::string ConvProblem::family() const {
  return fmt::format("{} {} c{} w{}x{}x{} p{},{} s{},{} d{},{} g{}", backward_data ? "bwd" : "fwd", dtype_name(dtype),
                     c, k, kh, kw, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, group);
}

Status make_conv_descriptors(const ConvProblem& p, ConvDescriptors* d) {
  const cudnnDataType_t dt = cudnn_type(p.dtype);
  SO_GPU_CHECK(dnn().cudnnCreateTensorDescriptor(&d->x));
  SO_GPU_CHECK(dnn().cudnnCreateTensorDescriptor(&d->y));
  SO_GPU_CHECK(dnn().cudnnCreateFilterDescriptor(&d->w));
  SO_GPU_CHECK(dnn().cudnnCreateConvolutionDescriptor(&d->conv));
  SO_GPU_CHECK(dnn().cudnnSetTensor4dDescriptor(d->x, CUDNN_TENSOR_NCHW, dt, static_cast<int>(p.n),
                                                static_cast<int>(p.c), static_cast<int>(p.h), static_cast<int>(p.w)));
  SO_GPU_CHECK(dnn().cudnnSetTensor4dDescriptor(d->y, CUDNN_TENSOR_NCHW, dt, static_cast<int>(p.n),
                                                static_cast<int>(p.k), static_cast<int>(p.oh), static_cast<int>(p.ow)));
  SO_GPU_CHECK(dnn().cudnnSetFilter4dDescriptor(d->w, dt, CUDNN_TENSOR_NCHW, static_cast<int>(p.k),
                                                static_cast<int>(p.c / p.group), static_cast<int>(p.kh),
                                                static_cast<int>(p.kw)));
  // Accumulate in fp32 also for fp16 data ("pseudo-half").
  SO_GPU_CHECK(dnn().cudnnSetConvolution2dDescriptor(d->conv, static_cast<int>(p.pad_h), static_cast<int>(p.pad_w),
                                                     static_cast<int>(p.stride_h), static_cast<int>(p.stride_w),
                                                     static_cast<int>(p.dil_h), static_cast<int>(p.dil_w),
                                                     CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  SO_GPU_CHECK(dnn().cudnnSetConvolutionGroupCount(d->conv, static_cast<int>(p.group)));
  SO_GPU_CHECK(
      dnn().cudnnSetConvolutionMathType(d->conv, p.dtype == DType::kF16 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  if (!p.backward_data) {
    int n, c, h, w;
    SO_GPU_CHECK(dnn().cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &n, &c, &h, &w));
    if (n != p.n || c != p.k || h != p.oh || w != p.ow) {
      return invalid_argument(fmt::format("cuDNN computes output {}x{}x{}x{} but the graph says {}x{}x{}x{}", n, c, h,
                                          w, p.n, p.k, p.oh, p.ow));
    }
  }
  return Status::ok();
}

Result<ConvAlgoChoice> choose_conv_algo(CudaDevice& dev, const std::function<Result<cudnnHandle_t>()>& handle_of,
                                        const ConvProblem& p, ConvDescriptors* d) {
  ConvAlgoKey key{p.key()};
  ConvAlgoChoice choice;
  if (dev.find_algo(key, &choice)) {
    SO_GPU_CHECK(dnn().cudnnSetConvolutionMathType(d->conv, static_cast<cudnnMathType_t>(choice.math_type)));
    return choice;
  }
  // The same layer at another size: reuse its algorithm when cuDNN accepts it for this shape (no heuristics run).
  const std::string family = p.family();
  if (dev.find_algo_family(family, &choice)) {
    size_t ws = 0;
    cudnnStatus_t rc;
    if (dnn().cudnnSetConvolutionMathType(d->conv, static_cast<cudnnMathType_t>(choice.math_type)) !=
        CUDNN_STATUS_SUCCESS) {
      rc = CUDNN_STATUS_BAD_PARAM;
    } else if (size_free_algo(p, choice.algo) && dev.workspace_bound(family, choice.algo, dims_of(p), &ws)) {
      choice.workspace = ws;  // a larger problem of this layer needed no more: cuDNN is not asked
      dev.store_algo(key, family, choice);
      metrics::inc("steadyocr_cuda_conv_workspace_queries_total", {{"result", "bounded"}});
      return choice;
    } else if (auto h = handle_of(); !h.is_ok()) {
      return h.status();
    } else if (cudnnHandle_t handle = *h; !p.backward_data) {
      rc = dnn().cudnnGetConvolutionForwardWorkspaceSize(handle, d->x, d->w, d->conv, d->y,
                                                         static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), &ws);
    } else {
      rc = dnn().cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, d->w, d->y, d->conv, d->x, static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), &ws);
    }
    if (rc == CUDNN_STATUS_SUCCESS && ws <= kMaxWorkspace) {
      choice.workspace = ws;
      dev.store_algo(key, family, choice);
      if (size_free_algo(p, choice.algo)) dev.note_workspace(family, choice.algo, dims_of(p), ws);
      metrics::inc("steadyocr_cuda_conv_workspace_queries_total", {{"result", "asked"}});
      return choice;
    }
  }
  bool found = false;
  ASSIGN_OR_RETURN(cudnnHandle_t handle, handle_of());
  if (!p.backward_data) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int returned = 0;
    SO_GPU_CHECK(dnn().cudnnGetConvolutionForwardAlgorithm_v7(handle, d->x, d->w, d->conv, d->y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &returned, perf));
    for (int pass = 0; pass < 2 && !found; ++pass) {
      for (int i = 0; i < returned && !found; ++i) {
        const auto& r = perf[i];
        if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace) continue;
        if (!math_allowed(r.mathType, p.dtype, pass == 1) || r.determinism != CUDNN_DETERMINISTIC) continue;
        choice = {static_cast<int>(r.algo), static_cast<int>(r.mathType), r.memory};
        found = true;
      }
    }
  } else {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    int returned = 0;
    // Backward data: w, dy (the node's input, described by d->y) -> dx (the node's output, d->x).
    SO_GPU_CHECK(dnn().cudnnGetConvolutionBackwardDataAlgorithm_v7(
        handle, d->w, d->y, d->conv, d->x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf));
    for (int pass = 0; pass < 2 && !found; ++pass) {
      for (int i = 0; i < returned && !found; ++i) {
        const auto& r = perf[i];
        if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace) continue;
        if (!math_allowed(r.mathType, p.dtype, pass == 1) || r.determinism != CUDNN_DETERMINISTIC) continue;
        choice = {static_cast<int>(r.algo), static_cast<int>(r.mathType), r.memory};
        found = true;
      }
    }
  }
  if (!found) {
    return Status(StatusCode::kUnsupported,
                  fmt::format("cuDNN offers no deterministic algorithm for convolution {} within {} MiB of workspace",
                              p.key(), kMaxWorkspace >> 20));
  }
  SO_GPU_CHECK(dnn().cudnnSetConvolutionMathType(d->conv, static_cast<cudnnMathType_t>(choice.math_type)));
  // The heuristic's workspace estimate can differ from the exact query; take the exact one.
  if (!p.backward_data) {
    SO_GPU_CHECK(dnn().cudnnGetConvolutionForwardWorkspaceSize(
        handle, d->x, d->w, d->conv, d->y, static_cast<cudnnConvolutionFwdAlgo_t>(choice.algo), &choice.workspace));
  } else {
    SO_GPU_CHECK(dnn().cudnnGetConvolutionBackwardDataWorkspaceSize(
        handle, d->w, d->y, d->conv, d->x, static_cast<cudnnConvolutionBwdDataAlgo_t>(choice.algo), &choice.workspace));
  }
  dev.store_algo(key, family, choice);
  if (size_free_algo(p, choice.algo)) dev.note_workspace(family, choice.algo, dims_of(p), choice.workspace);
  metrics::inc("steadyocr_cuda_algo_selections_total", {{"kind", p.backward_data ? "deconv" : "conv"}});
  log::debug("cuda", "conv {}: algo {} math {} workspace {} B", p.key(), choice.algo, choice.math_type,
             choice.workspace);
  return choice;
}

}  // namespace steadyocr::cuda

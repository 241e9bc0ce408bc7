// Doctor checks on cuDNN and the reduced-precision paths: a small cuDNN convolution against a CPU reference,
// and fp16 (cuBLAS GEMM with fp32 accumulation, cuDNN fp16 convolution) against the same.
#include <cuda_fp16.h>
#include <fmt/format.h>

#include <cmath>
#include <memory>

#include "backends/cuda/check.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/diagnostics_kernels.h"
#include "backends/cuda/diagnostics_util.h"

namespace steadyocr::cuda::diag {

namespace {
constexpr double kNmseFp32 = 1e-5;  // fp32 conv vs a double-precision CPU reference (TF32 would pass too)
constexpr double kNmseFp16 = 1e-3;  // fp16 data, fp32 accumulation vs the CPU reference on the same fp16 inputs

// cuDNN descriptors and handle, destroyed on scope exit.
struct CudnnConv {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ~CudnnConv() {
    if (conv) SO_GPU_TRY(dnn().cudnnDestroyConvolutionDescriptor(conv));
    if (w) SO_GPU_TRY(dnn().cudnnDestroyFilterDescriptor(w));
    if (y) SO_GPU_TRY(dnn().cudnnDestroyTensorDescriptor(y));
    if (x) SO_GPU_TRY(dnn().cudnnDestroyTensorDescriptor(x));
    if (handle) SO_GPU_TRY(dnn().cudnnDestroy(handle));
  }
};

#define DIAG_CUDNN(expr)                                                         \
  do {                                                                           \
    cudnnStatus_t so_st_ = (expr);                                               \
    if (so_st_ != CUDNN_STATUS_SUCCESS) return cudnn_failure(so_st_, #expr, ev); \
  } while (0)
#define DIAG_CUDA(expr)                                              \
  do {                                                               \
    cudaError_t so_e_ = (expr);                                      \
    if (so_e_ != cudaSuccess) return cuda_failure(so_e_, #expr, ev); \
  } while (0)

// The outcome of a cuDNN check where cuDNN did not load: the loader's finding and error.
Outcome cudnn_unusable(const char* status, const std::string& prefix, json ev) {
  ev["cudnn"] = cudnn_load().error;
  Outcome o;
  o.status = status;
  o.code = cudnn_load().finding;
  o.summary = prefix + cudnn_load().error;
  o.evidence = std::move(ev);
  return o;
}

}  // namespace

Outcome run_cudnn_conv(const ConvShape& p, cudnnDataType_t type, const std::vector<float>& x,
                       const std::vector<float>& w, std::vector<float>* y, json ev) {
  // cuDNN is loaded at run time (cudnn_api.h): without it a convolution through it fails with the loader's finding.
  if (!cudnn_load().usable) return cudnn_unusable("fail", "cuDNN is not usable: ", ev);
  CudnnConv d;
  bool half = type == CUDNN_DATA_HALF;
  size_t esize = half ? sizeof(__half) : sizeof(float);
  DIAG_CUDNN(dnn().cudnnCreate(&d.handle));
  DIAG_CUDNN(dnn().cudnnCreateTensorDescriptor(&d.x));
  DIAG_CUDNN(dnn().cudnnCreateTensorDescriptor(&d.y));
  DIAG_CUDNN(dnn().cudnnCreateFilterDescriptor(&d.w));
  DIAG_CUDNN(dnn().cudnnCreateConvolutionDescriptor(&d.conv));
  DIAG_CUDNN(dnn().cudnnSetTensor4dDescriptor(d.x, CUDNN_TENSOR_NCHW, type, p.n, p.c, p.h, p.w));
  DIAG_CUDNN(dnn().cudnnSetFilter4dDescriptor(d.w, type, CUDNN_TENSOR_NCHW, p.k, p.c / p.group, p.r, p.s));
  DIAG_CUDNN(dnn().cudnnSetConvolution2dDescriptor(d.conv, p.pad, p.pad, p.stride, p.stride, p.dilation, p.dilation,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
  DIAG_CUDNN(dnn().cudnnSetConvolutionGroupCount(d.conv, p.group));
  DIAG_CUDNN(dnn().cudnnSetConvolutionMathType(d.conv, half ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
  int on = 0, oc = 0, oh = 0, ow = 0;
  DIAG_CUDNN(dnn().cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &on, &oc, &oh, &ow));
  DIAG_CUDNN(dnn().cudnnSetTensor4dDescriptor(d.y, CUDNN_TENSOR_NCHW, type, on, oc, oh, ow));
  if (fault("cudnn_not_supported")) {
    ev["injected"] = true;
    return cudnn_failure(CUDNN_STATUS_NOT_SUPPORTED, "cudnnGetConvolutionForwardAlgorithm_v7 (injected)", ev);
  }
  cudnnConvolutionFwdAlgoPerf_t perf[8];
  int found = 0;
  DIAG_CUDNN(dnn().cudnnGetConvolutionForwardAlgorithm_v7(d.handle, d.x, d.w, d.conv, d.y, 8, &found, perf));
  int pick = -1;
  for (int i = 0; i < found && pick < 0; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS) pick = i;
  if (pick < 0) return cudnn_failure(CUDNN_STATUS_NOT_SUPPORTED, "no cuDNN forward algorithm for this shape", ev);
  ev["algorithm"] = static_cast<int>(perf[pick].algo);
  ev["math_type"] = static_cast<int>(perf[pick].mathType);
  size_t ws_bytes = 0;
  DIAG_CUDNN(
      dnn().cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, perf[pick].algo, &ws_bytes));
  size_t ny = static_cast<size_t>(on) * oc * oh * ow;
  DeviceBuffer fx, fw, fy, hx, hw, hy, ws;
  DIAG_CUDA(fx.allocate(x.size() * sizeof(float)));
  DIAG_CUDA(fw.allocate(w.size() * sizeof(float)));
  DIAG_CUDA(fy.allocate(ny * sizeof(float)));
  if (ws_bytes) DIAG_CUDA(ws.allocate(ws_bytes));
  DIAG_CUDA(cudaMemcpy(fx.as<float>(), x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice));
  DIAG_CUDA(cudaMemcpy(fw.as<float>(), w.data(), w.size() * sizeof(float), cudaMemcpyHostToDevice));
  void *px = fx.as<void>(), *pw = fw.as<void>(), *py = fy.as<void>();
  if (half) {
    DIAG_CUDA(hx.allocate(x.size() * esize));
    DIAG_CUDA(hw.allocate(w.size() * esize));
    DIAG_CUDA(hy.allocate(ny * esize));
    DIAG_CUDA(launch_to_half(fx.as<float>(), hx.as<__half>(), static_cast<int>(x.size()), nullptr));
    DIAG_CUDA(launch_to_half(fw.as<float>(), hw.as<__half>(), static_cast<int>(w.size()), nullptr));
    px = hx.as<void>(), pw = hw.as<void>(), py = hy.as<void>();
  }
  float alpha = 1.f, beta = 0.f;
  DIAG_CUDNN(dnn().cudnnConvolutionForward(d.handle, &alpha, d.x, px, d.w, pw, d.conv, perf[pick].algo, ws.as<void>(),
                                           ws_bytes, &beta, d.y, py));
  if (half) DIAG_CUDA(launch_to_float(hy.as<__half>(), fy.as<float>(), static_cast<int>(ny), nullptr));
  DIAG_CUDA(cudaDeviceSynchronize());
  y->resize(ny);
  DIAG_CUDA(cudaMemcpy(y->data(), fy.as<float>(), ny * sizeof(float), cudaMemcpyDeviceToHost));
  Outcome ok;
  ok.evidence = ev;
  return ok;
}

namespace {
std::vector<float> round_to_half(const std::vector<float>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = __half2float(__float2half_rn(v[i]));
  return out;
}

Outcome compared(Outcome o, const std::string& what, const Comparison& c, double limit, const char* mismatch_code,
                 const char* mismatch_status) {
  o.evidence["what"] = what;
  o.evidence["nmse"] = c.nmse;
  o.evidence["max_abs_diff"] = c.max_abs_diff;
  o.evidence["non_finite"] = c.non_finite;
  o.evidence["nmse_limit"] = limit;
  if (c.non_finite || !(c.nmse <= limit)) {
    o.status = mismatch_status;
    o.code = mismatch_code;
    o.summary = fmt::format("{}: nmse {:.3g} > {:.0e} (max |diff| {:.3g}, non-finite {})", what, c.nmse, limit,
                            c.max_abs_diff, c.non_finite);
  } else {
    o.summary = fmt::format("{}: nmse {:.3g} <= {:.0e} vs the CPU reference", what, c.nmse, limit);
  }
  return o;
}
}  // namespace

Outcome check_cudnn_conv(const json& args) {
  json ev;
  // cuDNN is optional: the GPU serves without it (the -nocudnn rung), so the check only warns.
  if (!cudnn_load().usable) {
    return cudnn_unusable("warn", "cuDNN is not usable, convolutions run without it (im2col/col2im + cuBLAS): ", ev);
  }
  cudaError_t e = use_device(args.value("device", 0), &ev);
  if (e != cudaSuccess) return cuda_failure(e, "cudaSetDevice", ev);
  ConvShape p = conv_shape_from(args);
  ev["shape"] = p.str();
  ev["cudnn_version"] = static_cast<int64_t>(cudnn_load().version);
  ev["injected"] = fault("cudnn_not_supported") || fault("numeric_mismatch");
  auto x = random_floats(static_cast<size_t>(p.n) * p.c * p.h * p.w, 1);
  auto w = random_floats(static_cast<size_t>(p.k) * (p.c / p.group) * p.r * p.s, 2, -0.5f, 0.5f);
  std::vector<float> y;
  Outcome o = run_cudnn_conv(p, CUDNN_DATA_FLOAT, x, w, &y, ev);
  if (o.status != "pass") return o;
  if (fault("numeric_mismatch") && !y.empty()) y[y.size() / 2] += 10.f;
  return compared(o, "cuDNN fp32 convolution " + p.str(), compare_floats(y, conv_reference(p, x, w)), kNmseFp32,
                  "L3_NUMERIC_MISMATCH", "fail");
}

Outcome check_fp16(const json& args) {
  json ev;
  cudaError_t e = use_device(args.value("device", 0), &ev);
  if (e != cudaSuccess) return cuda_failure(e, "cudaSetDevice", ev);
  // cuBLAS: C = A * B with fp16 A, B, C and fp32 accumulation (column-major, m = n = k = 128).
  constexpr int kDim = 128;
  auto a = round_to_half(random_floats(kDim * kDim, 3));
  auto b = round_to_half(random_floats(kDim * kDim, 4));
  std::vector<float> ref(kDim * kDim);
  for (int col = 0; col < kDim; ++col)
    for (int row = 0; row < kDim; ++row) {
      double acc = 0;
      for (int i = 0; i < kDim; ++i) acc += static_cast<double>(a[i * kDim + row]) * b[col * kDim + i];
      ref[col * kDim + row] = static_cast<float>(acc);
    }
  DeviceBuffer fa, fb, fc, ha, hb, hc;
  size_t n = kDim * kDim;
  DIAG_CUDA(fa.allocate(n * sizeof(float)));
  DIAG_CUDA(fb.allocate(n * sizeof(float)));
  DIAG_CUDA(fc.allocate(n * sizeof(float)));
  DIAG_CUDA(ha.allocate(n * sizeof(__half)));
  DIAG_CUDA(hb.allocate(n * sizeof(__half)));
  DIAG_CUDA(hc.allocate(n * sizeof(__half)));
  DIAG_CUDA(cudaMemcpy(fa.as<float>(), a.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  DIAG_CUDA(cudaMemcpy(fb.as<float>(), b.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  DIAG_CUDA(launch_to_half(fa.as<float>(), ha.as<__half>(), static_cast<int>(n), nullptr));
  DIAG_CUDA(launch_to_half(fb.as<float>(), hb.as<__half>(), static_cast<int>(n), nullptr));
  cublasHandle_t handle = nullptr;
  cublasStatus_t st = cublasCreate(&handle);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_failure(st, "cublasCreate", ev);
  auto destroy = [](cublasContext* h) { SO_GPU_TRY(cublasDestroy(h)); };
  std::unique_ptr<cublasContext, decltype(destroy)> guard(handle, destroy);
  float alpha = 1.f, beta = 0.f;
  st = cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, kDim, kDim, kDim, &alpha, ha.as<void>(), CUDA_R_16F, kDim,
                    hb.as<void>(), CUDA_R_16F, kDim, &beta, hc.as<void>(), CUDA_R_16F, kDim, CUBLAS_COMPUTE_32F,
                    CUBLAS_GEMM_DEFAULT);
  if (st != CUBLAS_STATUS_SUCCESS) return cublas_failure(st, "cublasGemmEx(fp16, compute fp32)", ev);
  DIAG_CUDA(launch_to_float(hc.as<__half>(), fc.as<float>(), static_cast<int>(n), nullptr));
  DIAG_CUDA(cudaDeviceSynchronize());
  std::vector<float> got(n);
  DIAG_CUDA(cudaMemcpy(got.data(), fc.as<float>(), n * sizeof(float), cudaMemcpyDeviceToHost));
  Outcome gemm;
  gemm.evidence = ev;
  gemm =
      compared(gemm, "cuBLAS fp16 GEMM 128x128x128", compare_floats(got, ref), kNmseFp16, "L3_FP16_MISMATCH", "warn");
  json gemm_ev = gemm.evidence;

  // cuDNN: an fp16 convolution with channel counts that suit tensor cores.
  ConvShape p;
  p.c = 16;
  p.k = 32;
  p.h = p.w = 24;
  auto x = round_to_half(random_floats(static_cast<size_t>(p.c) * p.h * p.w, 5));
  auto w = round_to_half(random_floats(static_cast<size_t>(p.k) * p.c * p.r * p.s, 6, -0.5f, 0.5f));
  std::vector<float> y;
  Outcome conv = run_cudnn_conv(p, CUDNN_DATA_HALF, x, w, &y, ev);
  if (conv.status == "pass") {
    conv = compared(conv, "cuDNN fp16 convolution " + p.str(), compare_floats(y, conv_reference(p, x, w)), kNmseFp16,
                    "L3_FP16_MISMATCH", "warn");
  } else if (conv.code != "L3_STICKY_FAULT") {
    conv.evidence["error"] = conv.summary;
    conv.status = "warn";
    conv.code = "L3_FP16_UNAVAILABLE";
  }
  // The worse of the two decides; both are in the evidence.
  Outcome out = (gemm.status == "pass" && conv.status != "pass") ? conv : gemm;
  if (gemm.status == "pass" && conv.status == "pass")
    out.summary = fmt::format("fp16 GEMM nmse {:.3g}, fp16 conv nmse {:.3g} (limit {:.0e})",
                              gemm_ev["nmse"].get<double>(), conv.evidence["nmse"].get<double>(), kNmseFp16);
  out.evidence["gemm"] = gemm_ev;
  out.evidence["conv"] = conv.evidence;
  return out;
}

}  // namespace steadyocr::cuda::diag

// Shared pieces of the plugin's doctor checks (diagnostics*.cpp): the result type, error classification,
// fault switches, device buffers and the CPU reference convolution.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/compare.h"

namespace steadyocr::cuda::diag {

using json = nlohmann::json;

// One check's answer, as the doctor reads it (diagnostics.h).
struct Outcome {
  std::string status = "pass";  // pass | warn | fail | skipped
  std::string code;
  std::string summary;
  json evidence = json::object();
  json to_json() const;
};

// Whether the running check's args name `fault` in "faults" (comma-separated; the doctor passes its
// STEADYOCR_DOCTOR_FAULT / --inject there: the plugin reads no environment).
bool fault(const std::string& name);

std::string error_text(cudaError_t e);  // "cudaErrorNoDevice (100): no CUDA-capable device is detected"
std::string error_text(cudnnStatus_t s);
std::string error_text(cublasStatus_t s);

// The finding for a failed call: sticky CUDA errors -> L3_STICKY_FAULT; no kernel image / PTX too new ->
// L3_NO_KERNEL_IMAGE; allocation -> L3_OUT_OF_MEMORY; CUDNN_STATUS_NOT_SUPPORTED -> L3_CUDNN_NOT_SUPPORTED;
// other cuDNN / cuBLAS errors -> L3_CUDNN_FAILED / L3_CUBLAS_FAILED; anything else -> L3_CUDA_ERROR.
Outcome cuda_failure(cudaError_t e, const std::string& what, json evidence);
Outcome cudnn_failure(cudnnStatus_t s, const std::string& what, json evidence);
Outcome cublas_failure(cublasStatus_t s, const std::string& what, json evidence);

// cudaSetDevice plus the device's name, compute capability and memory, for evidence.
cudaError_t use_device(int device, json* evidence);

// Deterministic values in [lo, hi).
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.f, float hi = 1.f);

struct ConvShape {
  int n = 1, c = 8, h = 32, w = 32, k = 16, r = 3, s = 3, pad = 1, stride = 1, dilation = 1, group = 1;
  int out_h() const { return (h + 2 * pad - dilation * (r - 1) - 1) / stride + 1; }
  int out_w() const { return (w + 2 * pad - dilation * (s - 1) - 1) / stride + 1; }
  std::string str() const;
};
ConvShape conv_shape_from(const json& args);
// Direct NCHW cross-correlation in double precision (the oracle of the conv checks).
std::vector<float> conv_reference(const ConvShape& p, const std::vector<float>& x, const std::vector<float>& w);

// cudaMalloc'd memory freed on scope exit (unless leak() was called).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; }
  cudaError_t allocate(size_t bytes);
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }
  void leak() { ptr_ = nullptr; }

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// Runs y = conv(x, w) with cuDNN (fresh handle and descriptors), data in `type` (float, or half with fp32
// accumulation), and returns y as floats; a failure comes back as the Outcome.
Outcome run_cudnn_conv(const ConvShape& p, cudnnDataType_t type, const std::vector<float>& x,
                       const std::vector<float>& w, std::vector<float>* y, json evidence);

// The checks (diagnostics.cpp, diagnostics_conv.cpp, diagnostics_streams.cpp).
Outcome check_kernel_image(const json& args);
Outcome check_cudnn_conv(const json& args);
Outcome check_fp16(const json& args);
Outcome check_streams(const json& args);
Outcome check_memory(const json& args);
Outcome check_mem_info(const json& args);
Outcome check_budget(const json& args);

}  // namespace steadyocr::cuda::diag

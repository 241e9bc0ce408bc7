#include "backends/cuda/check.h"

#include <fmt/format.h>

#include <mutex>

#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::cuda {
namespace {

thread_local GpuErrorRecord t_last;
std::mutex g_sticky_mu;
GpuErrorRecord g_first_sticky;

const char* base_name(const char* file) {
  const char* slash = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') slash = p + 1;
  }
  return slash;
}

Status finish(GpuErrorRecord r) {
  if (r.sticky) {
    r.status = StatusCode::kDeviceFault;
  } else if (r.status == StatusCode::kOk) {
    r.status = StatusCode::kDeviceError;
  }
  std::string text = fmt::format("{} failed: {} ({}) at {}:{}: {}{}", r.library, r.name, r.code, r.file, r.line,
                                 r.message, r.sticky ? " [sticky: the CUDA context is lost; restart the worker]" : "");
  text += fmt::format(" [call: {}]", r.expression);
  metrics::inc("steadyocr_cuda_errors_total",
               {{"library", r.library}, {"error", r.name}, {"sticky", r.sticky ? "true" : "false"}});
  if (r.sticky) {
    std::lock_guard<std::mutex> lock(g_sticky_mu);
    if (g_first_sticky.code == 0) {
      g_first_sticky = r;
      log::error("cuda", "sticky device error, the context is lost: {}", text);
    }
  }
  StatusCode code = r.status;
  t_last = std::move(r);
  return Status(code, std::move(text));
}

GpuErrorRecord make(const char* lib, int code, const char* expr, const char* file, int line) {
  GpuErrorRecord r;
  r.library = lib;
  r.code = code;
  r.expression = expr;
  r.file = base_name(file);
  r.line = line;
  return r;
}

// A cuDNN/cuBLAS execution failure may hide a sticky CUDA error underneath; look without clearing it.
void absorb_cuda_state(GpuErrorRecord* r) {
  cudaError_t ce = cudaPeekAtLastError();
  if (ce != cudaSuccess && is_sticky(ce)) {
    r->sticky = true;
    r->message += fmt::format(" (underlying CUDA error {}: {})", cudaGetErrorName(ce), cudaGetErrorString(ce));
  }
}

}  // namespace

bool is_sticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorLaunchTimeout:
    case cudaErrorECCUncorrectable:
    case cudaErrorNvlinkUncorrectable:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorContextIsDestroyed:
    case cudaErrorExternalDevice:
    case cudaErrorDevicesUnavailable:
    case cudaErrorUnknown:
      return true;
    default:
      return false;
  }
}

Status gpu_status(cudaError_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cuda", static_cast<int>(e), expr, file, line);
  r.name = cudaGetErrorName(e);
  r.message = cudaGetErrorString(e);
  r.sticky = is_sticky(e);
  if (e == cudaErrorMemoryAllocation) r.status = StatusCode::kOutOfMemory;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) r.status = StatusCode::kUnavailable;
  // A failed launch leaves a non-sticky error behind; clear it so the next call on this thread starts clean.
  if (!r.sticky) (void)cudaGetLastError();
  return finish(std::move(r));
}

Status gpu_status(cudnnStatus_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cudnn", static_cast<int>(e), expr, file, line);
  r.name = cudnnGetErrorString(e);
  char buf[512] = {0};
  cudnnGetLastErrorString(buf, sizeof(buf));
  r.message = buf[0] ? buf : r.name;
  if (e == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      e == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    r.status = StatusCode::kOutOfMemory;
  }
  if (CUDNN_STATUS_CATEGORY(e) == CUDNN_STATUS_EXECUTION_FAILED || CUDNN_STATUS_CATEGORY(e) == 4000) {
    absorb_cuda_state(&r);
  }
  return finish(std::move(r));
}

Status gpu_status(cublasStatus_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cublas", static_cast<int>(e), expr, file, line);
  r.name = cublasGetStatusName(e);
  r.message = cublasGetStatusString(e);
  if (e == CUBLAS_STATUS_ALLOC_FAILED) r.status = StatusCode::kOutOfMemory;
  if (e == CUBLAS_STATUS_EXECUTION_FAILED || e == CUBLAS_STATUS_INTERNAL_ERROR) absorb_cuda_state(&r);
  return finish(std::move(r));
}

GpuErrorRecord last_gpu_error() {
  return t_last;
}

GpuErrorRecord first_sticky_error() {
  std::lock_guard<std::mutex> lock(g_sticky_mu);
  return g_first_sticky;
}

bool device_lost() {
  std::lock_guard<std::mutex> lock(g_sticky_mu);
  return g_first_sticky.code != 0;
}

}  // namespace steadyocr::cuda

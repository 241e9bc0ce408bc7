#include "backends/cuda/check.h"
#include "backends/cuda/cudnn_api.h"

#include <fmt/format.h>

#include <mutex>

#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::cuda {
namespace {

thread_local GpuErrorRecord t_first;  // since reset_gpu_errors()
std::mutex g_sticky_mu;
GpuErrorRecord g_first_sticky;

const char* base_name(const char* file) {
  const char* slash = file;
  for (const char* p = file; *p; ++p) {
    if (*p == '/') slash = p + 1;
  }
  return slash;
}

Status finish(GpuErrorRecord r, const GpuErrorClass& c) {
  r.sticky = c.sticky;
  r.status = c.status;
  r.finding = c.finding;
  if (!c.underlying.empty()) r.message += " (the context is lost underneath: " + c.underlying + ")";
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
  if (t_first.code == 0) t_first = std::move(r);
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

// Marks `c` sticky when the context is lost underneath a failure that is not sticky itself. Failures that mean
// there is no usable driver or device have no context to ask.
void look_underneath(GpuErrorClass* c) {
  if (c->sticky || c->status == StatusCode::kUnavailable) return;
  cudaError_t lost = sticky_context_error();
  if (lost == cudaSuccess) return;
  c->sticky = true;
  c->underlying = fmt::format("{}: {}", cudaGetErrorName(lost), cudaGetErrorString(lost));
}

void finish_class(GpuErrorClass* c) {
  look_underneath(c);
  if (c->sticky) {
    c->status = StatusCode::kDeviceFault;
    c->finding = "L3_STICKY_FAULT";
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

cudaError_t sticky_context_error() {
  cudaError_t e = cudaPeekAtLastError();
  if (is_sticky(e)) return e;
  // Any call into a lost context returns its sticky error; a query of the default stream is the cheapest one that
  // reaches the context and never waits (cudaErrorNotReady only says work is in flight).
  e = cudaStreamQuery(nullptr);
  if (is_sticky(e)) return e;
  if (e != cudaSuccess && e != cudaErrorNotReady) (void)cudaGetLastError();
  return cudaSuccess;
}

GpuErrorClass classify(cudaError_t e) {
  GpuErrorClass c;
  c.sticky = is_sticky(e);
  if (e == cudaErrorMemoryAllocation) {
    c.status = StatusCode::kOutOfMemory;
    c.finding = "L3_OUT_OF_MEMORY";
  } else if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    c.status = StatusCode::kUnavailable;
    c.finding = e == cudaErrorNoDevice ? "L1_NO_DEVICE" : "L2_DRIVER_TOO_OLD";
  } else if (e == cudaErrorNoKernelImageForDevice || e == cudaErrorUnsupportedPtxVersion ||
             e == cudaErrorInvalidKernelImage) {
    c.finding = "L3_NO_KERNEL_IMAGE";
  }
  finish_class(&c);
  return c;
}

GpuErrorClass classify(cudnnStatus_t s) {
  GpuErrorClass c;
  c.finding = "L3_CUDNN_FAILED";
  if (s == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED ||
      s == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED) {
    c.status = StatusCode::kOutOfMemory;
    c.finding = "L3_OUT_OF_MEMORY";
  } else if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED) {
    c.finding = "L3_CUDNN_NOT_SUPPORTED";
  }
  finish_class(&c);
  return c;
}

GpuErrorClass classify(cublasStatus_t s) {
  GpuErrorClass c;
  c.finding = "L3_CUBLAS_FAILED";
  if (s == CUBLAS_STATUS_ALLOC_FAILED) {
    c.status = StatusCode::kOutOfMemory;
    c.finding = "L3_OUT_OF_MEMORY";
  }
  finish_class(&c);
  return c;
}

Status gpu_status(cudaError_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cuda", static_cast<int>(e), expr, file, line);
  r.name = cudaGetErrorName(e);
  r.message = cudaGetErrorString(e);
  // A failed launch leaves a non-sticky error behind; clear it so the next call on this thread starts clean.
  if (!is_sticky(e)) (void)cudaGetLastError();
  return finish(std::move(r), classify(e));
}

Status gpu_status(cudnnStatus_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cudnn", static_cast<int>(e), expr, file, line);
  if (cudnn_load().usable) {
    r.name = dnn().cudnnGetErrorString(e);
    char buf[512] = {0};
    dnn().cudnnGetLastErrorString(buf, sizeof(buf));
    r.message = buf[0] ? buf : r.name;
  } else {
    // An injected cuDNN failure on a backend without cuDNN: the code alone.
    r.name = fmt::format("cudnnStatus_t {}", static_cast<int>(e));
    r.message = r.name;
  }
  return finish(std::move(r), classify(e));
}

Status gpu_status(cublasStatus_t e, const char* expr, const char* file, int line) {
  GpuErrorRecord r = make("cublas", static_cast<int>(e), expr, file, line);
  r.name = cublasGetStatusName(e);
  r.message = cublasGetStatusString(e);
  return finish(std::move(r), classify(e));
}

Status with_context_state(Status s) {
  // Only outcomes of device work can hide a lost context; the caller's own mistakes stay what they are.
  const StatusCode c = s.code();
  if (c != StatusCode::kDeviceError && c != StatusCode::kOutOfMemory && c != StatusCode::kInternal &&
      c != StatusCode::kResourceExhausted) {
    return s;
  }
  if (device_lost()) {
    GpuErrorRecord first = first_sticky_error();
    return Status(StatusCode::kDeviceFault,
                  fmt::format("{}; the CUDA context of this process was lost ({} at {}:{} in '{}') [sticky: the CUDA "
                              "context is lost; restart the worker]",
                              s.message(), first.name, first.file, first.line, first.expression));
  }
  cudaError_t lost = sticky_context_error();
  if (lost == cudaSuccess) return s;
  Status found = gpu_status(lost, "the context's state after the failure", __FILE__, __LINE__);
  return Status(StatusCode::kDeviceFault, s.message() + "; " + found.message());
}

void report_unreturned(const Status& s) {
  if (s.code() == StatusCode::kDeviceFault && device_lost()) {
    log::debug("cuda", "{}", s.message());  // the first sticky error was logged at ERROR already
  } else {
    log::warn("cuda", "{}", s.message());
  }
}

void reset_gpu_errors() {
  t_first = GpuErrorRecord{};
}

GpuErrorRecord first_gpu_error() {
  return t_first;
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

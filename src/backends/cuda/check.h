// The one check for every CUDA runtime, cuDNN and cuBLAS call: records the expression, file, line, library,
// error name and message, classifies the error (sticky = the context is lost, or not) and converts it to a
// Status (kDeviceFault for sticky errors, kOutOfMemory for allocation failures, kDeviceError otherwise).
// Exceptions never cross the plugin boundary; everything comes back as Status.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <string>

#include "core/status.h"

namespace steadyocr::cuda {

// What the last failed check saw, for diagnostics (doctor, run_check, logs).
struct GpuErrorRecord {
  std::string library;     // "cuda", "cudnn", "cublas"
  std::string expression;  // the call as written
  std::string file;
  int line = 0;
  int code = 0;         // numeric error code of that library
  std::string name;     // "cudaErrorIllegalAddress", "CUDNN_STATUS_NOT_SUPPORTED", ...
  std::string message;  // the library's own text
  bool sticky = false;  // the CUDA context is lost: only a new process recovers
  StatusCode status = StatusCode::kOk;
};

// Whether a CUDA runtime error leaves the context unusable (every later call fails the same way).
bool is_sticky(cudaError_t e);

inline bool gpu_ok(cudaError_t e) {
  return e == cudaSuccess;
}
inline bool gpu_ok(cudnnStatus_t e) {
  return e == CUDNN_STATUS_SUCCESS;
}
inline bool gpu_ok(cublasStatus_t e) {
  return e == CUBLAS_STATUS_SUCCESS;
}

// Builds the Status for a failed call and records it (thread-local last error and process-wide last sticky one).
Status gpu_status(cudaError_t e, const char* expr, const char* file, int line);
Status gpu_status(cudnnStatus_t e, const char* expr, const char* file, int line);
Status gpu_status(cublasStatus_t e, const char* expr, const char* file, int line);

// The last failure recorded on this thread (code 0 when none).
GpuErrorRecord last_gpu_error();
// The first sticky failure recorded in this process (code 0 when none): once set, the device is dead to us.
GpuErrorRecord first_sticky_error();
bool device_lost();

}  // namespace steadyocr::cuda

// Checks one CUDA/cuDNN/cuBLAS call; on failure returns the classified Status from the enclosing function.
#define SO_GPU_CHECK(expr)                                                         \
  do {                                                                             \
    auto so_gpu_rc_ = (expr);                                                      \
    if (!::steadyocr::cuda::gpu_ok(so_gpu_rc_)) {                                  \
      return ::steadyocr::cuda::gpu_status(so_gpu_rc_, #expr, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

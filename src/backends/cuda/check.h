// The one check for every CUDA runtime, cuDNN and cuBLAS call: records the expression, file, line, library,
// error name and message, classifies the error (sticky = the context is lost, or not) and converts it to a
// Status (kDeviceFault for sticky errors, kOutOfMemory for allocation failures, kDeviceError otherwise).
// The classification lives here only (classify()): the check macros, the plugin boundary and the doctor's checks
// all use it. Exceptions never cross the plugin boundary; everything comes back as Status.
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
  std::string finding;  // knowledge-base code naming the cause (src/doctor/knowledge_base.json)
};

// Whether a CUDA runtime error leaves the context unusable (every later call fails the same way).
bool is_sticky(cudaError_t e);

// The sticky error the context is in, asked without waiting (cudaSuccess while it is healthy): another thread's
// kernel may have killed the context, and this thread's cuBLAS/cuDNN call then fails with an execution error of its
// own (CUBLAS_STATUS_EXECUTION_FAILED) that names nothing sticky. Looks at the thread's last error and queries the
// default stream; never cudaDeviceSynchronize, whose wait would turn a hang on another lane into a hang here.
cudaError_t sticky_context_error();

// How a failed call is classified: whether the context is lost (the error is sticky, or the context reports a
// sticky error underneath), the Status code and the finding code.
struct GpuErrorClass {
  bool sticky = false;
  StatusCode status = StatusCode::kDeviceError;
  const char* finding = "L3_CUDA_ERROR";
  std::string underlying;  // "cudaErrorIllegalAddress: ..." when a sticky error was found under this one
};
GpuErrorClass classify(cudaError_t e);
GpuErrorClass classify(cudnnStatus_t s);
GpuErrorClass classify(cublasStatus_t s);

// A failed Status from the plugin, made the sticky kDeviceFault when the context is lost meanwhile (an error that
// did not come from a device call, or came before the context died, says nothing about its state).
Status with_context_state(Status s);

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

// The first failure recorded on this thread since reset_gpu_errors() (code 0 when none): the plugin boundary names
// the cause of a failed call by its finding.
void reset_gpu_errors();
GpuErrorRecord first_gpu_error();
// The first sticky failure recorded in this process (code 0 when none): once set, the device is dead to us.
GpuErrorRecord first_sticky_error();
bool device_lost();

// Records and logs a failure that cannot be returned (SO_GPU_TRY).
void report_unreturned(const Status& s);

template <typename E>
bool gpu_try(E e, const char* expr, const char* file, int line) {
  if (gpu_ok(e)) return true;
  report_unreturned(gpu_status(e, expr, file, line));
  return false;
}

}  // namespace steadyocr::cuda

// Checks one CUDA/cuDNN/cuBLAS call; on failure returns the classified Status from the enclosing function.
#define SO_GPU_CHECK(expr)                                                         \
  do {                                                                             \
    auto so_gpu_rc_ = (expr);                                                      \
    if (!::steadyocr::cuda::gpu_ok(so_gpu_rc_)) {                                  \
      return ::steadyocr::cuda::gpu_status(so_gpu_rc_, #expr, __FILE__, __LINE__); \
    }                                                                              \
  } while (0)

// Checks a call whose failure cannot be returned (destructors, cleanup after an earlier failure): classified and
// recorded like SO_GPU_CHECK (metrics, sticky detection), logged at WARN; evaluates to whether it succeeded.
#define SO_GPU_TRY(expr) ::steadyocr::cuda::gpu_try((expr), #expr, __FILE__, __LINE__)

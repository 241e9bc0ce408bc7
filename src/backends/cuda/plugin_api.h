/* The C entry point of libsteadyocr_cuda.so, loaded with dlopen by runtime/cuda_plugin.
 * The host calls steadyocr_backend_init(STEADYOCR_PLUGIN_API_VERSION); the returned table's first field is
 * the plugin's API version and the host refuses a mismatch with a clear message. C++ objects (the Backend)
 * cross the boundary only when abi_tag equals the host's (same compiler, C++ ABI and steadyocr version).
 * No function in the table throws; errors come back as text in caller-provided buffers. */
#ifndef STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_
#define STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STEADYOCR_PLUGIN_API_VERSION 1u
#define STEADYOCR_PLUGIN_INIT_SYMBOL "steadyocr_backend_init"

/* What the plugin was compiled against. */
typedef struct SoPluginBuildInfo {
  int cuda_runtime_version; /* CUDART_VERSION, e.g. 13000 */
  int cudnn_version;        /* CUDNN_VERSION, e.g. 91900 */
  int cublas_version;       /* CUBLAS_VERSION, e.g. 130100 */
  char sass_archs[64];      /* "80,86,89,90" */
  char ptx_archs[64];       /* "90" */
  char compiler[128];       /* "nvcc 13.0 / g++ 12.2" */
} SoPluginBuildInfo;

/* What is loaded and seen at run time. Every field is filled as far as the calls succeed; `error` names the
 * first call that failed (expression, error name, message) and error_sticky says whether the context is lost. */
typedef struct SoPluginRuntimeInfo {
  int driver_cuda_version; /* cudaDriverGetVersion, e.g. 13000; 0 when no driver */
  int runtime_version;     /* cudaRuntimeGetVersion */
  int cudnn_version;       /* cudnnGetVersion() of the library actually loaded */
  int cublas_version;      /* cublasGetVersion of the library actually loaded */
  char cudnn_path[512];    /* file that provided cudnnGetVersion (dladdr) */
  char cublas_path[512];
  char cudart_path[512]; /* empty when cudart is linked statically */
  int device_count;
  int error_code; /* cudaError_t of the failed call, 0 when none */
  int error_sticky;
  char error[1024];
} SoPluginRuntimeInfo;

typedef struct SoPluginDeviceInfo {
  char name[256];
  char pci_bus_id[32];
  int cc_major, cc_minor;
  int sm_count;
  size_t total_bytes, free_bytes;
  int ecc_enabled;
} SoPluginDeviceInfo;

typedef struct SteadyocrPluginApi {
  uint32_t api_version; /* first field: STEADYOCR_PLUGIN_API_VERSION of the plugin */
  const char* abi_tag;  /* compiler + C++ ABI + steadyocr version */

  void (*get_build_info)(SoPluginBuildInfo* out);
  /* Returns 0 when the CUDA runtime initialised and at least one device is usable. */
  int (*query_runtime)(SoPluginRuntimeInfo* out);
  int (*query_device)(int device, SoPluginDeviceInfo* out, char* err, size_t err_len);

  /* Creates a steadyocr::Backend* (C++ object, valid because abi_tag matched) for `device`.
   * precision: "fp32" or "fp16" (reduced precision chosen per layer); mem_budget_bytes 0 = no budget.
   * Returns NULL and fills err on failure. The host deletes it through destroy_backend. */
  void* (*create_backend)(int device, const char* precision, size_t mem_budget_bytes, char* err, size_t err_len);
  void (*destroy_backend)(void* backend);

  /* Doctor checks (levels 3-4) by name, e.g. "cudnn_conv", "own_kernels", "fp16", "streams", "memory",
   * "budget"; args and result are JSON text. Result: {"status":"pass|fail|could_not_run","code":"L3_...",
   * "evidence":{...}}. Returns 0 when the check ran (pass or fail), nonzero when it could not run. */
  int (*run_check)(const char* name, const char* args_json, char* result_json, size_t result_len);

  /* Fault injection for tests (syntax in docs/FAULTS.md, e.g. "illegal_address@det:3"); "" clears. */
  int (*set_fault)(const char* spec, char* err, size_t err_len);
} SteadyocrPluginApi;

typedef const SteadyocrPluginApi* (*steadyocr_backend_init_fn)(uint32_t host_api_version);

#ifdef __cplusplus
}
#endif

#endif /* STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_ */

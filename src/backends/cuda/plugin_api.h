/* The C entry point of libsteadyocr_cuda13.so, loaded with dlopen by runtime/cuda_plugin.
 * The host calls steadyocr_backend_init(STEADYOCR_PLUGIN_API_VERSION); the returned table's first field is
 * the plugin's API version and the host refuses a mismatch with a clear message. C++ objects (Graph, Node, Tensor,
 * DeviceInfo) cross the boundary by pointer only when abi_tag equals the host's (same compiler, C++ ABI and
 * steadyocr version); the host never calls a C++ method of a plugin object: every call goes through this table.
 * No function in the table throws; each catches everything and reports the outcome as an SoPluginStatus.
 * Everything the plugin is configured with arrives as arguments (SoBackendConfig): it reads no environment.
 *
 * Version 2: SoPluginStatus outcomes with finding codes, SoBackendConfig, backend/prepare/run through the table.
 * Version 3: last_profile (where a prepared graph's last run spent its time).
 * Version 5: prepare_symbolic (one plan for every input shape, taking concurrent runs), last_plan_ms,
 * runs_concurrently. */
#ifndef STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_
#define STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#include "backends/common/plugin_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STEADYOCR_PLUGIN_API_VERSION 5u
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

/* The outcome of a call into the plugin: SoPluginStatus (backends/common/plugin_status.h). */

/* What a backend is created with (backends/cuda/backend_config.h has the meaning of each field). */
typedef struct SoBackendConfig {
  uint32_t struct_size;       /* sizeof(SoBackendConfig) as the host compiled it */
  const char* precision;      /* "fp32" | "fp16" */
  size_t memory_budget_bytes; /* 0 = no budget */
  int device;                 /* CUDA device index */
  int lanes;                  /* execution lanes made at creation; 0 = made by the first runs */
  int debug_sync;             /* synchronise and check after every step */
  int own_conv;               /* depthwise/pointwise convolutions without cuDNN */
  int cuda_graphs;            /* replay hot shapes as CUDA graphs */
  int calibrate;              /* fp16: verify the per-layer precision on a real input */
  const char* fault_spec;     /* faults armed at creation (docs/FAULTS.md); "" = none */
  int cudnn;                  /* 0: no convolution through cuDNN (every one on own kernels + cuBLAS) */
  int own_arenas;             /* 1: each plan keeps an activation arena of its own (not leased per run) */
  int profile_ops;            /* runs > 0: time every step on the device, log per op kind every that many runs */
  int cudnn_handles;          /* cuDNN handles the device makes at most, leased per enqueue (not per lane) */
  int sync_wait;              /* how runs wait for their stream: 0 auto, 1 spin, 2 block */
  int graph_arenas;           /* CUDA graphs a plan keeps, one per activation arena it ran on (0: the default) */
} SoBackendConfig;

typedef struct SteadyocrPluginApi {
  uint32_t api_version; /* first field: STEADYOCR_PLUGIN_API_VERSION of the plugin */
  const char* abi_tag;  /* compiler + C++ ABI + steadyocr version */

  void (*get_build_info)(SoPluginBuildInfo* out);
  /* Returns 0 when the CUDA runtime initialised and at least one device is usable. */
  int (*query_runtime)(SoPluginRuntimeInfo* out);
  /* Every function below returns status->code (0 = OK) and fills `status`. */
  int (*query_device)(int device, SoPluginDeviceInfo* out, SoPluginStatus* status);

  /* Creates a backend on config->device; *backend is an opaque handle that the host destroys with destroy_backend.
   * name/name_len receive its name ("cuda-fp32"), device_info (a steadyocr::DeviceInfo*) what it runs on. */
  int (*create_backend)(const SoBackendConfig* config, void** backend, char* name, size_t name_len, void* device_info,
                        SoPluginStatus* status);
  void (*destroy_backend)(void* backend);
  /* Whether the backend runs `node` (a const steadyocr::graph::Node*); declining is never an error. 1 or 0. */
  int (*supports)(void* backend, const void* node);
  /* Plans `graph` (a const steadyocr::graph::Graph* with static shapes); *prepared is destroyed with
   * destroy_prepared and may outlive the backend. */
  int (*prepare)(void* backend, const void* graph, void** prepared, SoPluginStatus* status);
  /* Runs a prepared graph: inputs is a const std::vector<steadyocr::Tensor>*, outputs a std::vector<Tensor>*. */
  int (*run)(void* prepared, const void* inputs, void* outputs, SoPluginStatus* status);
  size_t (*workspace_bytes)(void* prepared);
  void (*destroy_prepared)(void* prepared);

  /* Doctor checks (levels 3-4) by name, e.g. "cudnn_conv", "own_kernels", "fp16", "streams", "memory",
   * "budget"; args and result are JSON text (args may carry "faults": the doctor's injected faults, comma-separated).
   * Result: {"status":"pass|fail|could_not_run","code":"L3_...","evidence":{...}}. Returns 0 when the check ran
   * (pass or fail), nonzero when it could not run. */
  int (*run_check)(const char* name, const char* args_json, char* result_json, size_t result_len);

  /* Fault injection for tests (syntax in docs/FAULTS.md, e.g. "illegal_address@det:3"); "" clears. */
  int (*set_fault)(const char* spec, SoPluginStatus* status);

  /* Fills *out with the profile of the prepared graph's last run (read by the caller that ran it: for a prepared graph
   * that runs concurrently, the calling thread's last run). */
  void (*last_profile)(void* prepared, SoRunProfile* out);

  /* One plan for every input shape of a graph specialised on symbols (Backend::prepare_symbolic); an UNSUPPORTED
   * status where it declines (the host then plans per shape). Its `run` may be called by several threads at once. */
  int (*prepare_symbolic)(void* backend, const void* graph, void** prepared, SoPluginStatus* status);
  /* Host milliseconds the last run of `prepared` (the calling thread's) spent planning its input shape. */
  double (*last_plan_ms)(void* prepared);
  /* 1 when `run` of `prepared` may be called by several threads at once (PreparedGraph::concurrent), else 0. */
  int (*runs_concurrently)(void* prepared);
} SteadyocrPluginApi;

typedef const SteadyocrPluginApi* (*steadyocr_backend_init_fn)(uint32_t host_api_version);

#ifdef __cplusplus
}
#endif

#endif /* STEADYOCR_BACKENDS_CUDA_PLUGIN_API_H_ */

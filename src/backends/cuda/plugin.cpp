// The C entry point of libsteadyocr_cuda.so (plugin_api.h). Nothing here throws across the boundary: every
// function catches and reports errors as text.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/diagnostics.h"
#include "backends/cuda/faults.h"
#include "backends/cuda/plugin_abi.h"
#include "backends/cuda/plugin_api.h"

#ifndef STEADYOCR_CUDA_SASS
#define STEADYOCR_CUDA_SASS ""
#endif
#ifndef STEADYOCR_CUDA_PTX
#define STEADYOCR_CUDA_PTX ""
#endif
#ifndef STEADYOCR_NVCC_VERSION
#define STEADYOCR_NVCC_VERSION "?"
#endif

#define SO_STR2(x) #x
#define SO_STR(x) SO_STR2(x)

// What this plugin was built against, readable from the file even when it cannot be loaded (diagnostics.h).
// clang-format off
extern "C" __attribute__((used, visibility("default"))) const char steadyocr_plugin_build_info[] =
    STEADYOCR_PLUGIN_BUILD_MARKER
    "{\"cuda_runtime\":" SO_STR(CUDART_VERSION)
    ",\"cudnn\":\"" SO_STR(CUDNN_MAJOR) "." SO_STR(CUDNN_MINOR) "." SO_STR(CUDNN_PATCHLEVEL) "\""
    ",\"cublas\":\"" SO_STR(CUBLAS_VER_MAJOR) "." SO_STR(CUBLAS_VER_MINOR) "." SO_STR(CUBLAS_VER_PATCH) "\""
    ",\"sass\":\"" STEADYOCR_CUDA_SASS "\""
    ",\"ptx\":\"" STEADYOCR_CUDA_PTX "\""
    ",\"nvcc\":\"" STEADYOCR_NVCC_VERSION "\""
    ",\"plugin_api\":\"" SO_STR(STEADYOCR_PLUGIN_API_VERSION) "\"}";
// clang-format on

namespace {

using steadyocr::cuda::is_sticky;

void copy_text(char* dst, size_t len, const std::string& s) {
  if (!dst || len == 0) return;
  size_t n = std::min(len - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

std::string library_of(const void* symbol) {
  Dl_info info;
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

void get_build_info(SoPluginBuildInfo* out) {
  if (!out) return;
  std::memset(out, 0, sizeof(*out));
  out->cuda_runtime_version = CUDART_VERSION;
  out->cudnn_version = CUDNN_VERSION;
  out->cublas_version = CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH;
  copy_text(out->sass_archs, sizeof(out->sass_archs), STEADYOCR_CUDA_SASS);
  copy_text(out->ptx_archs, sizeof(out->ptx_archs), STEADYOCR_CUDA_PTX);
  copy_text(out->compiler, sizeof(out->compiler),
            fmt::format("nvcc {} / {}", STEADYOCR_NVCC_VERSION, steadyocr::plugin_abi_tag()));
}

int query_runtime(SoPluginRuntimeInfo* out) {
  if (!out) return 1;
  try {
    std::memset(out, 0, sizeof(*out));
    cudaDriverGetVersion(&out->driver_cuda_version);
    cudaRuntimeGetVersion(&out->runtime_version);
    out->cudnn_version = static_cast<int>(cudnnGetVersion());
    int maj = 0, min = 0, pat = 0;
    cublasGetProperty(MAJOR_VERSION, &maj);
    cublasGetProperty(MINOR_VERSION, &min);
    cublasGetProperty(PATCH_LEVEL, &pat);
    out->cublas_version = maj * 10000 + min * 100 + pat;
    copy_text(out->cudnn_path, sizeof(out->cudnn_path), library_of(reinterpret_cast<const void*>(&cudnnGetVersion)));
    copy_text(out->cublas_path, sizeof(out->cublas_path),
              library_of(reinterpret_cast<const void*>(&cublasGetProperty)));
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    out->device_count = e == cudaSuccess ? count : 0;
    if (e != cudaSuccess) {
      out->error_code = static_cast<int>(e);
      out->error_sticky = is_sticky(e) ? 1 : 0;
      copy_text(out->error, sizeof(out->error),
                fmt::format("cudaGetDeviceCount: {} ({}): {}", cudaGetErrorName(e), static_cast<int>(e),
                            cudaGetErrorString(e)));
      return 1;
    }
    return count > 0 ? 0 : 1;
  } catch (const std::exception& ex) {
    copy_text(out->error, sizeof(out->error), std::string("exception: ") + ex.what());
    return 1;
  } catch (...) {
    copy_text(out->error, sizeof(out->error), "unknown exception");
    return 1;
  }
}

int query_device(int device, SoPluginDeviceInfo* out, char* err, size_t err_len) {
  if (!out) return 1;
  try {
    std::memset(out, 0, sizeof(*out));
    cudaDeviceProp prop{};
    cudaError_t e = cudaGetDeviceProperties(&prop, device);
    if (e == cudaSuccess) {
      copy_text(out->name, sizeof(out->name), prop.name);
      out->cc_major = prop.major;
      out->cc_minor = prop.minor;
      out->sm_count = prop.multiProcessorCount;
      out->total_bytes = prop.totalGlobalMem;
      out->ecc_enabled = prop.ECCEnabled;
      cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), device);
      int prev = 0;
      cudaGetDevice(&prev);
      e = cudaSetDevice(device);
      if (e == cudaSuccess) e = cudaMemGetInfo(&out->free_bytes, &out->total_bytes);
      cudaSetDevice(prev);
    }
    if (e != cudaSuccess) {
      copy_text(err, err_len,
                fmt::format("device {}: {} ({}){}", device, cudaGetErrorName(e), cudaGetErrorString(e),
                            is_sticky(e) ? " [sticky]" : ""));
      return 1;
    }
    return 0;
  } catch (...) {
    copy_text(err, err_len, "unknown exception in query_device");
    return 1;
  }
}

void* create_backend(int device, const char* precision, size_t mem_budget_bytes, char* err, size_t err_len) {
  try {
    auto r = steadyocr::cuda::CudaBackend::create(device, precision ? precision : "fp32", mem_budget_bytes);
    if (!r.is_ok()) {
      copy_text(err, err_len, r.status().to_string());
      return nullptr;
    }
    steadyocr::Backend* b = std::move(r).value().release();
    return b;
  } catch (const std::exception& ex) {
    copy_text(err, err_len, std::string("exception creating the CUDA backend: ") + ex.what());
  } catch (...) {
    copy_text(err, err_len, "unknown exception creating the CUDA backend");
  }
  return nullptr;
}

void destroy_backend(void* backend) {
  try {
    delete static_cast<steadyocr::Backend*>(backend);
  } catch (...) {
  }
}

int set_fault(const char* spec, char* err, size_t err_len) {
  try {
    steadyocr::Status s = steadyocr::cuda::faults::set_spec(spec ? spec : "");
    if (!s.is_ok()) {
      copy_text(err, err_len, s.message());
      return 1;
    }
    return 0;
  } catch (...) {
    copy_text(err, err_len, "unknown exception in set_fault");
    return 1;
  }
}

int run_check_entry(const char* name, const char* args_json, char* result_json, size_t result_len) {
  try {
    return so_run_check(name, args_json, result_json, result_len);
  } catch (...) {
    copy_text(result_json, result_len,
              R"({"status":"could_not_run","code":"L3_EXCEPTION","evidence":{"error":"exception in run_check"}})");
    return 1;
  }
}

}  // namespace

// Doctor checks (levels 3-4) live in diagnostics.cpp; until it is built in, this weak default says so.
// Doctor checks (levels 3-4) live in diagnostics.cpp; until it is built in, this weak default says so.
extern "C" __attribute__((weak)) int so_run_check(const char* name, const char* args_json, char* result_json,
                                                  size_t result_len) {
  (void)args_json;
  copy_text(result_json, result_len,
            fmt::format(R"({{"status":"could_not_run","code":"L3_NOT_BUILT","evidence":{{"check":"{}","reason":)"
                        R"("this plugin was built without diagnostics"}}}})",
                        name ? name : ""));
  return 1;
}

extern "C" __attribute__((visibility("default"))) const SteadyocrPluginApi* steadyocr_backend_init(
    uint32_t host_api_version) {
  static std::string abi;
  static SteadyocrPluginApi api;
  static bool once = [] {
    abi = steadyocr::plugin_abi_tag();
    api.api_version = STEADYOCR_PLUGIN_API_VERSION;
    api.abi_tag = abi.c_str();
    api.get_build_info = get_build_info;
    api.query_runtime = query_runtime;
    api.query_device = query_device;
    api.create_backend = create_backend;
    api.destroy_backend = destroy_backend;
    api.run_check = run_check_entry;
    api.set_fault = set_fault;
    // Plugin-level faults straight from the environment (the engine arms them through set_fault per call).
    if (const char* f = std::getenv("STEADYOCR_CUDA_FAULT")) {
      steadyocr::Status s = steadyocr::cuda::faults::set_spec(f);
      if (!s.is_ok())
        std::fprintf(stderr, "steadyocr cuda plugin: ignoring STEADYOCR_CUDA_FAULT: %s\n", s.message().c_str());
    }
    return true;
  }();
  (void)once;
  (void)host_api_version;  // the host compares api_version; the table itself never changes shape by request
  return &api;
}

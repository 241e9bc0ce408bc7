// The C entry point of libsteadyocr_cuda13.so (plugin_api.h): the only way into the plugin. No exception crosses
// it: every function of the table catches everything and reports an SoPluginStatus (code, finding, message), and
// a failed call is checked for a lost context before it is reported.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <exception>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "backends/common/plugin_entries.h"
#include "backends/cuda/backend_config.h"
#include "backends/cuda/check.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/diagnostics.h"
#include "backends/cuda/faults.h"
#include "backends/cuda/plugin_abi.h"
#include "backends/cuda/plugin_api.h"
#include "core/log.h"

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

using steadyocr::Status;
using steadyocr::StatusCode;
using steadyocr::cuda::is_sticky;

using steadyocr::common::copy_text;

std::string library_of(const void* symbol) {
  Dl_info info;
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

// The finding that names the cause of a failed call: the first device failure recorded on this thread during the
// call when it is the one returned, else what the Status code alone says.
std::string finding_for(const Status& s, const char* fallback) {
  if (s.code() == StatusCode::kDeviceFault) return "L3_STICKY_FAULT";
  if (s.finding() && !s.finding()->code.empty()) return s.finding()->code;
  steadyocr::cuda::GpuErrorRecord first = steadyocr::cuda::first_gpu_error();
  if (first.code != 0 && first.status == s.code()) return first.finding;
  if (s.code() == StatusCode::kOutOfMemory) return "L3_OUT_OF_MEMORY";
  return fallback;
}

int report(SoPluginStatus* out, const Status& s, const char* fallback_finding) {
  return steadyocr::common::fill_plugin_status(out, static_cast<int>(s.code()),
                                               s.is_ok() ? "" : finding_for(s, fallback_finding), s.message());
}

// Every call into the plugin runs through here: no exception leaves it, and a failure of device work is told
// apart from a lost context (with_context_state) before it is reported with its finding.
template <typename F>
int guarded(SoPluginStatus* out, const char* what, const char* fallback_finding, F&& body) {
  Status s;
  try {
    steadyocr::cuda::reset_gpu_errors();
    s = body();
    s = steadyocr::cuda::with_context_state(std::move(s));
  } catch (const std::bad_alloc&) {
    s = Status(StatusCode::kOutOfMemory, fmt::format("{}: out of host memory", what));
  } catch (const std::exception& ex) {
    s = steadyocr::internal_error(fmt::format("{}: exception: {}", what, ex.what()));
  } catch (...) {
    s = steadyocr::internal_error(fmt::format("{}: unknown exception", what));
  }
  try {
    return report(out, s, fallback_finding);
  } catch (...) {
    if (out) out->code = static_cast<int>(StatusCode::kInternal);
    return static_cast<int>(StatusCode::kInternal);
  }
}

void get_build_info(SoPluginBuildInfo* out) {
  if (!out) return;
  std::memset(out, 0, sizeof(*out));
  out->cuda_runtime_version = CUDART_VERSION;
  out->cudnn_version = CUDNN_VERSION;
  out->cublas_version = CUBLAS_VER_MAJOR * 10000 + CUBLAS_VER_MINOR * 100 + CUBLAS_VER_PATCH;
  copy_text(out->sass_archs, sizeof(out->sass_archs), STEADYOCR_CUDA_SASS);
  copy_text(out->ptx_archs, sizeof(out->ptx_archs), STEADYOCR_CUDA_PTX);
  try {
    copy_text(out->compiler, sizeof(out->compiler),
              fmt::format("nvcc {} / {}", STEADYOCR_NVCC_VERSION, steadyocr::plugin_abi_tag()));
  } catch (...) {
    copy_text(out->compiler, sizeof(out->compiler), "nvcc " STEADYOCR_NVCC_VERSION);
  }
}

int query_runtime(SoPluginRuntimeInfo* out) {
  if (!out) return 1;
  try {
    std::memset(out, 0, sizeof(*out));
    // Each field as far as its call succeeds; `error` names the first call that failed.
    auto failed = [out](cudaError_t e, const char* call) {
      if (e == cudaSuccess) return false;
      if (out->error_code == 0) {
        out->error_code = static_cast<int>(e);
        out->error_sticky = is_sticky(e) ? 1 : 0;
        copy_text(
            out->error, sizeof(out->error),
            fmt::format("{}: {} ({}): {}", call, cudaGetErrorName(e), static_cast<int>(e), cudaGetErrorString(e)));
      }
      return true;
    };
    if (failed(cudaDriverGetVersion(&out->driver_cuda_version), "cudaDriverGetVersion")) out->driver_cuda_version = 0;
    if (failed(cudaRuntimeGetVersion(&out->runtime_version), "cudaRuntimeGetVersion")) out->runtime_version = 0;
    // cuDNN is loaded at run time (cudnn_api.h): 0 and no path when it is not usable.
    const steadyocr::cuda::CudnnLoad& dnn_load = steadyocr::cuda::cudnn_load();
    out->cudnn_version = dnn_load.usable ? static_cast<int>(dnn_load.version) : 0;
    int maj = 0, min = 0, pat = 0;
    if (cublasGetProperty(MAJOR_VERSION, &maj) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &min) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &pat) == CUBLAS_STATUS_SUCCESS) {
      out->cublas_version = maj * 10000 + min * 100 + pat;
    }
    copy_text(out->cudnn_path, sizeof(out->cudnn_path), dnn_load.usable ? dnn_load.path : "");
    copy_text(out->cublas_path, sizeof(out->cublas_path),
              library_of(reinterpret_cast<const void*>(&cublasGetProperty)));
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    out->device_count = e == cudaSuccess ? count : 0;
    if (e != cudaSuccess) {
      // The device count decides usability: its error is the one to show.
      out->error_code = 0;
      failed(e, "cudaGetDeviceCount");
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

int query_device(int device, SoPluginDeviceInfo* out, SoPluginStatus* status) {
  return guarded(status, "query_device", "L3_CUDA_ERROR", [&]() -> Status {
    if (!out) return steadyocr::invalid_argument("query_device: no output");
    std::memset(out, 0, sizeof(*out));
    cudaDeviceProp prop{};
    SO_GPU_CHECK(cudaGetDeviceProperties(&prop, device));
    copy_text(out->name, sizeof(out->name), prop.name);
    out->cc_major = prop.major;
    out->cc_minor = prop.minor;
    out->sm_count = prop.multiProcessorCount;
    out->total_bytes = prop.totalGlobalMem;
    out->ecc_enabled = prop.ECCEnabled;
    SO_GPU_CHECK(cudaDeviceGetPCIBusId(out->pci_bus_id, sizeof(out->pci_bus_id), device));
    int prev = 0;
    SO_GPU_CHECK(cudaGetDevice(&prev));
    SO_GPU_CHECK(cudaSetDevice(device));
    cudaError_t e = cudaMemGetInfo(&out->free_bytes, &out->total_bytes);
    SO_GPU_CHECK(cudaSetDevice(prev));
    SO_GPU_CHECK(e);
    return Status::ok();
  });
}

// The fault spec last armed from a backend config: every backend of a process gets the same one (the host reads
// STEADYOCR_CUDA_FAULT once), and arming it again would restart its run counts.
std::mutex g_config_fault_mu;
std::string g_config_fault;

void arm_config_fault(const std::string& spec) {
  if (spec.empty()) return;
  std::lock_guard<std::mutex> lock(g_config_fault_mu);
  if (spec == g_config_fault) return;
  g_config_fault = spec;
  Status s = steadyocr::cuda::faults::set_spec(spec);
  if (!s.is_ok()) steadyocr::log::warn("cuda", "ignoring the configured fault spec '{}': {}", spec, s.message());
}

int create_backend(const SoBackendConfig* config, void** backend, char* name, size_t name_len, void* device_info,
                   SoPluginStatus* status) {
  return guarded(status, "creating the CUDA backend", "L3_BACKEND_UNAVAILABLE", [&]() -> Status {
    if (!config || !backend) return steadyocr::invalid_argument("create_backend: no config or no output");
    *backend = nullptr;
    if (config->struct_size < sizeof(SoBackendConfig)) {
      return steadyocr::invalid_argument(
          fmt::format("create_backend: the host's SoBackendConfig has {} bytes, the plugin expects {}: install the "
                      "plugin built with this steadyocr",
                      config->struct_size, sizeof(SoBackendConfig)));
    }
    const steadyocr::cuda::BackendConfig c = steadyocr::cuda::from_abi(*config);
    arm_config_fault(c.fault_spec);
    ASSIGN_OR_RETURN(std::unique_ptr<steadyocr::cuda::CudaBackend> b, steadyocr::cuda::CudaBackend::create(c));
    copy_text(name, name_len, b->name());
    if (device_info) *static_cast<steadyocr::DeviceInfo*>(device_info) = b->device_info();
    *backend = static_cast<steadyocr::Backend*>(b.release());
    return Status::ok();
  });
}

void destroy_backend(void* backend) {
  try {
    delete static_cast<steadyocr::Backend*>(backend);
  } catch (...) {
  }
}

int supports(void* backend, const void* node) {
  try {
    if (!backend || !node) return 0;
    return static_cast<steadyocr::Backend*>(backend)->supports(*static_cast<const steadyocr::graph::Node*>(node)) ? 1
                                                                                                                  : 0;
  } catch (...) {
    return 0;  // declining is never an error
  }
}

int prepare(void* backend, const void* graph, void** prepared, SoPluginStatus* status) {
  return guarded(status, "preparing a graph on CUDA", "",
                 [&] { return steadyocr::plugin_entries::prepare(false, backend, graph, prepared); });
}

int prepare_symbolic(void* backend, const void* graph, void** prepared, SoPluginStatus* status) {
  return guarded(status, "preparing a graph on CUDA", "",
                 [&] { return steadyocr::plugin_entries::prepare(true, backend, graph, prepared); });
}

int run(void* prepared, const void* inputs, void* outputs, SoPluginStatus* status) {
  return guarded(status, "running a graph on CUDA", "",
                 [&] { return steadyocr::plugin_entries::run(prepared, inputs, outputs); });
}

void last_profile(void* prepared, SoRunProfile* out) {
  if (!out) return;
  *out = SoRunProfile{};
  try {
    if (!prepared) return;
    const steadyocr::RunProfile p = static_cast<steadyocr::PreparedGraph*>(prepared)->last_profile();
    *out = {p.measured ? 1 : 0, p.acquire_ms, p.staging_ms, p.upload_ms, p.compute_ms, p.download_ms, p.sync_ms};
  } catch (...) {
    *out = SoRunProfile{};
  }
}

int set_fault(const char* spec, SoPluginStatus* status) {
  return guarded(status, "set_fault", "",
                 [&]() -> Status { return steadyocr::cuda::faults::set_spec(spec ? spec : ""); });
}

int run_check_entry(const char* name, const char* args_json, char* result_json, size_t result_len) {
  try {
    return so_run_check(name, args_json, result_json, result_len);
  } catch (...) {
    const nlohmann::json r = {
        {"status", "could_not_run"}, {"code", "L3_EXCEPTION"}, {"evidence", {{"error", "exception in run_check"}}}};
    copy_text(result_json, result_len, r.dump());
    return 1;
  }
}

}  // namespace

// Doctor checks (levels 3-4) live in diagnostics.cpp; until it is built in, this weak default says so.
extern "C" __attribute__((weak)) int so_run_check(const char* name, const char* args_json, char* result_json,
                                                  size_t result_len) {
  (void)args_json;
  const nlohmann::json r = {
      {"status", "could_not_run"},
      {"code", "L3_NOT_BUILT"},
      {"evidence", {{"check", name ? name : ""}, {"reason", "this plugin was built without diagnostics"}}}};
  copy_text(result_json, result_len, r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  return 1;
}

extern "C" __attribute__((visibility("default"))) const SteadyocrPluginApi* steadyocr_backend_init(
    uint32_t host_api_version) {
  static std::string abi;
  static SteadyocrPluginApi api;
  // The table is built once; if that throws (out of memory), the host gets no table and says so.
  static const bool once = [] {
    try {
      abi = steadyocr::plugin_abi_tag();
    } catch (...) {
      return false;
    }
    api.api_version = STEADYOCR_PLUGIN_API_VERSION;
    api.abi_tag = abi.c_str();
    api.get_build_info = get_build_info;
    api.query_runtime = query_runtime;
    api.query_device = query_device;
    api.create_backend = create_backend;
    api.destroy_backend = destroy_backend;
    api.supports = supports;
    api.prepare = prepare;
    api.run = run;
    api.workspace_bytes = steadyocr::plugin_entries::workspace_bytes;
    api.destroy_prepared = steadyocr::plugin_entries::destroy_prepared;
    api.run_check = run_check_entry;
    api.set_fault = set_fault;
    api.last_profile = last_profile;
    api.prepare_symbolic = prepare_symbolic;
    api.last_plan_ms = steadyocr::plugin_entries::last_plan_ms;
    api.runs_concurrently = steadyocr::plugin_entries::runs_concurrently;
    return true;
  }();
  (void)host_api_version;  // the host compares api_version; the table itself never changes shape by request
  return once ? &api : nullptr;
}

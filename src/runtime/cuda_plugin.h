// Loads libsteadyocr_cuda13.so with dlopen (the main binary never links CUDA) and wraps its C entry point:
// finds the file, reports the exact dlopen error, refuses API/ABI mismatches with a clear message, and creates
// Backends that reach the plugin only through its table (plugin_api.h): no C++ call and no exception crosses.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/backend_config.h"
#include "backends/cuda/plugin_api.h"
#include "core/status.h"
#include "runtime/plugin_common.h"

namespace steadyocr::runtime {

struct CudaPluginStatus {
  bool loaded = false;             // dlopen, the entry point and the version checks all passed
  std::string path;                // the file loaded (or the last one tried)
  std::vector<std::string> tried;  // candidates in search order, with what happened to each
  std::string error;               // why it is not usable: the dlopen text, a version mismatch, ...
  int device_count = 0;            // usable CUDA devices (0 when the driver or device is missing)
  std::string device_error;        // why no device is usable (e.g. cudaErrorInsufficientDriver ...)
  int driver_cuda_version = 0;     // read before loading (0: no driver found)
  std::string choice;              // which plugin and why ("driver supports CUDA 12.2: ...")
  std::string finding;             // the doctor's code when no plugin is usable for a known cause
  SoPluginBuildInfo build{};
  SoPluginRuntimeInfo runtime{};
};

// The CUDA plugins, one per CUDA major, newest first. Each runs on drivers whose CUDA version (cuDriverGetVersion)
// is at least min_driver_cuda (NVIDIA's compatibility rules, docs/COMPATIBILITY.md).
struct CudaPluginFlavour {
  std::string file;         // "libsteadyocr_cuda13.so"
  int cuda_major = 0;       // 13
  int min_driver_cuda = 0;  // 13000: CUDA 13.x runs on CUDA 13 drivers (R580+, minor version compatibility)
  std::string min_driver;   // "R580 (CUDA 13.0)"
};
const std::vector<CudaPluginFlavour>& cuda_plugin_flavours();

// Which plugin files to try for a driver that supports CUDA `driver_cuda_version` (e.g. 12020; 0 = unknown): the
// newest the driver runs first, then older ones (tried when a newer one does not load). None when the driver is
// older than every plugin's minimum: `finding` is L2_DRIVER_TOO_OLD and `reason` names the minimum driver.
struct CudaPluginChoice {
  std::vector<std::string> files;
  std::string reason;   // one line: the driver's CUDA version and what it admits
  std::string finding;  // "" or "L2_DRIVER_TOO_OLD"
};
CudaPluginChoice choose_cuda_plugins(int driver_cuda_version);

// The driver's CUDA version from libcuda.so.1 (cuDriverGetVersion) without starting CUDA; 0 when there is no driver.
int probe_driver_cuda_version();

// Where the plugin is looked for, in order: $STEADYOCR_CUDA_PLUGIN (`--cuda-plugin PATH`: a file, which pins it, or
// a folder), the executable's folder, its parent (tests run from build/tests), lib/steadyocr beside bin/, then the
// loader's own search path (LD_LIBRARY_PATH, ldconfig); in each place the files of `choice`, best first.
// `honour_pin` false leaves a pinned file out (the doctor lists every installed plugin beside the pinned one).
std::vector<std::string> cuda_plugin_candidates(const CudaPluginChoice& choice, bool honour_pin = true);
// The same for this machine's driver (probe_driver_cuda_version).
std::vector<std::string> cuda_plugin_candidates();

// Loads the plugin once per process (thread-safe); later calls return the same status.
const CudaPluginStatus& cuda_plugin_status();
// The plugin's table, or null when it is not loaded.
const SteadyocrPluginApi* cuda_plugin_api();

// Checks a plugin table against this binary (API version first, then the C++ ABI tag); the error says what to do.
Status check_plugin_api(const SteadyocrPluginApi* api, const std::string& path);

// The CUDA backend names: "cuda-fp32", "cuda-fp16", and the same with "-nocudnn" (no convolution through cuDNN:
// im2col/col2im + cuBLAS). False for any other name.
bool parse_cuda_backend_name(const std::string& name, std::string* precision, bool* cudnn);

// The STEADYOCR_CUDA_* switches (docs/FAULTS.md, "Settings of the CUDA backend") read from the environment now, on
// a default config: on/off switches take 1/on/true and 0/off/false, counts a whole number in range; any other value
// is named in a warning and the default stays.
cuda::BackendConfig cuda_environment_overrides();
// The configuration of a CUDA backend ("fp32" or "fp16") on `device` with a memory budget (0 = none), with the
// overrides above read once per process. The plugin itself reads no environment.
cuda::BackendConfig cuda_backend_config(const std::string& precision, size_t memory_budget_bytes = 0, int device = 0);

// Creates a CUDA backend as `config` says, through the loaded plugin.
Result<std::shared_ptr<Backend>> create_cuda_backend(const cuda::BackendConfig& config);
// Same through a given plugin table (the doctor's own probe of the plugin).
Result<std::shared_ptr<Backend>> create_plugin_backend(const SteadyocrPluginApi* api,
                                                       const cuda::BackendConfig& config);

// status_from_plugin (a call's Status with the plugin's finding) is in runtime/plugin_common.h.

// Fault injection inside the plugin (docs/FAULTS.md); "" clears.
Status set_cuda_fault(const std::string& spec);

}  // namespace steadyocr::runtime

// Loads libsteadyocr_vulkan.so with dlopen (the main binary never links Vulkan) and wraps its C entry point like the
// CUDA plugin's (cuda_plugin.h): finds the file, reports the exact dlopen error, refuses API/ABI mismatches, and
// creates Backends that reach the plugin only through its table (backends/vulkan/plugin_api.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/vulkan/plugin_api.h"
#include "core/status.h"

namespace steadyocr::runtime {

struct VulkanPluginStatus {
  bool loaded = false;             // dlopen, the entry point and the version checks all passed
  std::string path;                // the file loaded (or the last one tried)
  std::vector<std::string> tried;  // candidates in search order, with what happened to each
  std::string error;               // why the plugin or Vulkan is not usable
  std::string finding;             // the doctor's code when Vulkan itself is not usable (L2_VULKAN_LOADER_MISSING, ...)
  SoVkRuntimeInfo runtime{};
  std::vector<SoVkDeviceInfo> devices;  // the usable devices, in the plugin's order (the backend's device index)
  std::string shader_compiler;
};

// Where the plugin is looked for: $STEADYOCR_VULKAN_PLUGIN (a file, which pins it, or a folder), then the folders of
// plugin_dirs(), then the loader's search path.
std::vector<std::string> vulkan_plugin_candidates();

// Loads the plugin once per process (thread-safe; STEADYOCR_DISABLE_VULKAN=1 turns it off); later calls return the
// same status.
const VulkanPluginStatus& vulkan_plugin_status();
const SteadyocrVulkanApi* vulkan_plugin_api();

// Whether a Vulkan device is a CPU implementation (Mesa's lavapipe/llvmpipe): it runs every Vulkan test, but on a
// machine with a CPU the cpu backend is faster, so `--backend auto` does not put it on the ladder unless
// STEADYOCR_VULKAN_CPU_DEVICES=1 (CI does, to walk the ladder onto Vulkan).
bool vulkan_device_is_cpu(const SoVkDeviceInfo& d);
// The device `--backend vulkan` and the ladder's vulkan rung run on: STEADYOCR_VULKAN_DEVICE when it names one, else
// the first that is not a CPU implementation, else the first (0 when there is none).
int vulkan_backend_device();
// Whether that device is a CPU implementation (false when there is no device).
bool vulkan_backend_device_is_cpu();
bool vulkan_cpu_devices_allowed();
// The first device the ladder may use (-1: none), with why not in `why`.
int vulkan_ladder_device(std::string* why);

// Checks a table against this binary (API version, C++ ABI tag, every function present).
Status check_vulkan_api(const SteadyocrVulkanApi* api, const std::string& path);

// Creates the "vulkan" backend (precision "fp32") or "vulkan-fp16" (fp16 storage, fp32 arithmetic; devices with
// storageBuffer16BitAccess) on a usable device (index among VulkanPluginStatus::devices).
Result<std::shared_ptr<Backend>> create_vulkan_backend(int device, size_t memory_budget_bytes = 0,
                                                       const std::string& precision = "fp32");

// Runs one of the plugin's doctor checks ("chain") and returns its JSON text; could_not_run JSON when the plugin is
// not loaded.
std::string run_vulkan_check(const std::string& name);

}  // namespace steadyocr::runtime

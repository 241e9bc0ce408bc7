#include "runtime/backend_registry.h"

#include <cstdlib>

#include "backends/reference/reference_backend.h"
#include "runtime/cuda_plugin.h"
#include "runtime/vulkan_plugin.h"
#ifdef STEADYOCR_HAVE_ONEDNN
#include "backends/cpu/cpu_backend.h"
#endif

namespace steadyocr::runtime {

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
  if (cuda_plugin_status().loaded && cuda_plugin_status().device_count > 0) {
    // The cuDNN backends only where the plugin loaded a usable cuDNN (it reports version 0 otherwise: missing, of
    // another major, or the build for another CUDA); the -nocudnn ones wherever the plugin runs.
    if (cuda_plugin_status().runtime.cudnn_version > 0) {
      names.push_back("cuda-fp32");
      names.push_back("cuda-fp16");
    }
    names.push_back("cuda-fp32-nocudnn");
    names.push_back("cuda-fp16-nocudnn");
  }
  // Every Vulkan device counts here, lavapipe included (the op cases and tests run on it), best first: a GPU's
  // Vulkan before the cpu backend, a CPU implementation (lavapipe: much slower than oneDNN) after it. The ladder is
  // choosier (vulkan_ladder_device).
  std::vector<std::string> vulkan;
  bool vulkan_on_cpu = false;
  if (!vulkan_plugin_status().devices.empty()) {
    vulkan.push_back("vulkan");
    const auto& d = vulkan_plugin_status().devices[static_cast<size_t>(vulkan_backend_device())];
    if (d.storage_fp16) vulkan.push_back("vulkan-fp16");
    vulkan_on_cpu = vulkan_device_is_cpu(d);
  }
  if (!vulkan_on_cpu) names.insert(names.end(), vulkan.begin(), vulkan.end());
#ifdef STEADYOCR_HAVE_ONEDNN
  names.push_back("cpu");
#endif
  if (vulkan_on_cpu) names.insert(names.end(), vulkan.begin(), vulkan.end());
  names.push_back("reference");
  return names;
}

Result<std::shared_ptr<Backend>> create_backend(const std::string& name) {
  return create_backend(name, BackendOptions{});
}

Result<std::shared_ptr<Backend>> create_backend(const std::string& name, const BackendOptions& options) {
  std::string precision;
  bool cudnn = true;
  if (parse_cuda_backend_name(name, &precision, &cudnn)) {
    cuda::BackendConfig config = cuda_backend_config(precision, options.gpu_memory_budget_bytes, options.device);
    config.cudnn = config.cudnn && cudnn;
    return create_cuda_backend(config);
  }
  if (name == "reference") return std::shared_ptr<Backend>(make_reference_backend());
  if (name == "vulkan") return create_vulkan_backend(vulkan_backend_device(), options.gpu_memory_budget_bytes);
  if (name == "vulkan-fp16")
    return create_vulkan_backend(vulkan_backend_device(), options.gpu_memory_budget_bytes, "fp16");
#ifdef STEADYOCR_HAVE_ONEDNN
  if (name == "cpu") return std::shared_ptr<Backend>(make_cpu_backend());
#else
  if (name == "cpu") {
    return unavailable("backend 'cpu' (oneDNN) is not in this build: install libdnnl-dev and rebuild");
  }
#endif
  std::string known;
  for (auto& n : available_backends()) known += (known.empty() ? "" : ", ") + n;
  return invalid_argument("unknown backend '" + name + "' (available here: " + known + ")");
}

std::vector<std::shared_ptr<Backend>> fallback_chain(const std::string& name) {
  std::vector<std::shared_ptr<Backend>> chain;
  if (name == "reference") return chain;
#ifdef STEADYOCR_HAVE_ONEDNN
  if (name != "cpu") chain.push_back(std::shared_ptr<Backend>(make_cpu_backend()));
#endif
  chain.push_back(std::shared_ptr<Backend>(make_reference_backend()));
  return chain;
}

}  // namespace steadyocr::runtime

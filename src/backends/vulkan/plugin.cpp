// The C entry point of libsteadyocr_vulkan.so (plugin_api.h): the only way into the plugin. No exception crosses it:
// every function of the table catches everything and reports an SoPluginStatus (code, finding, message).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "backends/common/plugin_entries.h"
#include "backends/cuda/plugin_abi.h"
#include "backends/vulkan/backend.h"
#include "backends/vulkan/device.h"
#include "backends/vulkan/plugin_api.h"

#ifndef STEADYOCR_GLSLC_VERSION
#define STEADYOCR_GLSLC_VERSION "glslc"
#endif

namespace {

using steadyocr::Status;
using steadyocr::StatusCode;

using steadyocr::common::copy_text;

int report(SoPluginStatus* out, const Status& s) {
  std::string finding;
  if (s.finding() && !s.finding()->code.empty()) {
    finding = s.finding()->code;
  } else if (s.code() == StatusCode::kDeviceFault) {
    finding = "L3_VULKAN_DEVICE_LOST";
  }
  return steadyocr::common::fill_plugin_status(out, static_cast<int>(s.code()), finding, s.message());
}

template <typename F>
int guarded(SoPluginStatus* out, const char* what, F&& body) {
  Status s;
  try {
    s = body();
  } catch (const std::bad_alloc&) {
    s = Status(StatusCode::kOutOfMemory, fmt::format("{}: out of host memory", what));
  } catch (const std::exception& ex) {
    s = steadyocr::internal_error(fmt::format("{}: exception: {}", what, ex.what()));
  } catch (...) {
    s = steadyocr::internal_error(fmt::format("{}: unknown exception", what));
  }
  try {
    return report(out, s);
  } catch (...) {
    if (out) out->code = static_cast<int>(StatusCode::kInternal);
    return static_cast<int>(StatusCode::kInternal);
  }
}

int query_runtime(SoVkRuntimeInfo* out) {
  if (!out) return 1;
  try {
    const steadyocr::vk::InstanceState& st = steadyocr::vk::instance_state();
    *out = st.info;
    return st.usable.empty() ? 1 : 0;
  } catch (...) {
    std::memset(out, 0, sizeof(*out));
    copy_text(out->error, sizeof(out->error), "exception while enumerating Vulkan devices");
    return 1;
  }
}

int query_device(int device, SoVkDeviceInfo* out, SoPluginStatus* status) {
  return guarded(status, "query_device", [&]() -> Status {
    if (!out) return steadyocr::invalid_argument("query_device: no output");
    const steadyocr::vk::InstanceState& st = steadyocr::vk::instance_state();
    if (device < 0 || device >= static_cast<int>(st.devices.size())) {
      return steadyocr::vk::vk_status(
          StatusCode::kUnavailable, "L1_VULKAN_NO_DEVICE",
          fmt::format("Vulkan device {} does not exist ({} usable)", device, st.devices.size()));
    }
    *out = st.devices[static_cast<size_t>(device)];
    return Status::ok();
  });
}

int create_backend(const SoVkBackendConfig* config, void** backend, char* name, size_t name_len, void* device_info,
                   SoPluginStatus* status) {
  return guarded(status, "creating the Vulkan backend", [&]() -> Status {
    if (!config || !backend) return steadyocr::invalid_argument("create_backend: no config or no output");
    *backend = nullptr;
    if (config->struct_size < sizeof(SoVkBackendConfig)) {
      return steadyocr::invalid_argument(
          fmt::format("create_backend: the host's SoVkBackendConfig has {} bytes, the plugin expects {}: install the "
                      "plugin built with this steadyocr",
                      config->struct_size, sizeof(SoVkBackendConfig)));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<steadyocr::Backend> b, steadyocr::vk::make_vulkan_backend(*config));
    copy_text(name, name_len, b->name());
    if (device_info) *static_cast<steadyocr::DeviceInfo*>(device_info) = b->device_info();
    *backend = b.release();
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
    return backend && node &&
                   static_cast<steadyocr::Backend*>(backend)->supports(
                       *static_cast<const steadyocr::graph::Node*>(node))
               ? 1
               : 0;
  } catch (...) {
    return 0;
  }
}

int prepare(void* backend, const void* graph, void** prepared, SoPluginStatus* status) {
  return guarded(status, "planning on Vulkan",
                 [&] { return steadyocr::plugin_entries::prepare(false, backend, graph, prepared); });
}

int prepare_symbolic(void* backend, const void* graph, void** prepared, SoPluginStatus* status) {
  return guarded(status, "planning on Vulkan",
                 [&] { return steadyocr::plugin_entries::prepare(true, backend, graph, prepared); });
}

int run(void* prepared, const void* inputs, void* outputs, SoPluginStatus* status) {
  return guarded(status, "running on Vulkan",
                 [&] { return steadyocr::plugin_entries::run(prepared, inputs, outputs); });
}

int run_check(const char* name, const char* args_json, char* result_json, size_t result_len) {
  try {
    const std::string n = name ? name : "";
    if (n != "chain") {
      const nlohmann::json r = {{"status", "could_not_run"}, {"error", "no Vulkan check named '" + n + "'"}};
      copy_text(result_json, result_len, r.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
      return 1;
    }
    copy_text(result_json, result_len, steadyocr::vk::chain_check_json());
    return 0;
  } catch (...) {
    copy_text(result_json, result_len,
              nlohmann::json{{"status", "could_not_run"}, {"error", "exception in the check"}}.dump());
    return 1;
  }
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const SteadyocrVulkanApi* steadyocr_vulkan_init(
    uint32_t host_api_version) {
  static std::string abi;
  static SteadyocrVulkanApi api;
  static const bool once = [] {
    try {
      abi = steadyocr::plugin_abi_tag();
    } catch (...) {
      return false;
    }
    api.api_version = STEADYOCR_VULKAN_API_VERSION;
    api.abi_tag = abi.c_str();
    copy_text(api.shader_compiler, sizeof(api.shader_compiler), STEADYOCR_GLSLC_VERSION);
    api.query_runtime = query_runtime;
    api.query_device = query_device;
    api.create_backend = create_backend;
    api.destroy_backend = destroy_backend;
    api.supports = supports;
    api.prepare = prepare;
    api.run = run;
    api.workspace_bytes = steadyocr::plugin_entries::workspace_bytes;
    api.destroy_prepared = steadyocr::plugin_entries::destroy_prepared;
    api.prepare_symbolic = prepare_symbolic;
    api.last_plan_ms = steadyocr::plugin_entries::last_plan_ms;
    api.run_check = run_check;
    return true;
  }();
  (void)host_api_version;
  return once ? &api : nullptr;
}

#include "runtime/vulkan_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>

#include "backends/cuda/plugin_abi.h"
#include "core/log.h"
#include "runtime/plugin_common.h"

namespace steadyocr::runtime {
namespace {

constexpr const char* kFile = "libsteadyocr_vulkan.so";

VulkanPluginStatus g_status;
const SteadyocrVulkanApi* g_api = nullptr;
std::once_flag g_once;

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

void load_once() {
  VulkanPluginStatus& st = g_status;
  if (env_is("STEADYOCR_DISABLE_VULKAN", "1")) {
    st.error = "the Vulkan plugin is disabled by STEADYOCR_DISABLE_VULKAN=1";
    return;
  }
  std::string first_failure;
  for (const std::string& cand : vulkan_plugin_candidates()) {
    const bool bare = cand.find('/') == std::string::npos;
    if (!bare && !is_file(cand)) {
      st.tried.push_back(cand + ": not found");
      continue;
    }
    void* h = ::dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      const std::string text = e ? e : "unknown dlopen error";
      st.tried.push_back(cand + ": " + text);
      if (bare && text.find("cannot open shared object file") != std::string::npos) continue;
      if (first_failure.empty()) {
        st.path = cand;
        first_failure = fmt::format("the Vulkan plugin {} could not be loaded: {}; check it with ldd", cand, text);
      }
      continue;
    }
    st.path = cand;
    auto init = reinterpret_cast<steadyocr_vulkan_init_fn>(::dlsym(h, STEADYOCR_VULKAN_INIT_SYMBOL));
    const SteadyocrVulkanApi* api = init ? init(STEADYOCR_VULKAN_API_VERSION) : nullptr;
    Status ok = init ? check_vulkan_api(api, cand)
                     : unavailable(fmt::format("{} has no entry point {}: it is not a steadyocr Vulkan plugin", cand,
                                               STEADYOCR_VULKAN_INIT_SYMBOL));
    if (!ok.is_ok()) {
      st.error = ok.message();
      st.tried.push_back(cand + ": " + ok.message());
      return;
    }
    st.tried.push_back(cand + ": loaded");
    g_api = api;
    st.loaded = true;
    st.shader_compiler = api->shader_compiler;
    api->query_runtime(&st.runtime);
    for (int i = 0; i < st.runtime.usable_count; ++i) {
      SoVkDeviceInfo d{};
      SoPluginStatus ps{};
      if (api->query_device(i, &d, &ps) == 0) st.devices.push_back(d);
    }
    if (st.devices.empty()) {
      st.finding = st.runtime.finding;
      st.error = st.runtime.error[0] ? st.runtime.error : "no usable Vulkan device";
    }
    log::info("runtime", "Vulkan plugin {}: {} usable device(s){}", cand, st.devices.size(),
              st.error.empty() ? "" : " (" + st.error + ")");
    return;
  }
  if (!first_failure.empty()) {
    st.error = first_failure;
  } else {
    std::string where;
    for (const auto& t : st.tried) where += (where.empty() ? "" : "; ") + t;
    st.error = fmt::format(
        "no Vulkan plugin found ({}; tried {}): build steadyocr with libvulkan-dev and glslc installed "
        "(-DSTEADYOCR_VULKAN=ON) or set STEADYOCR_VULKAN_PLUGIN",
        kFile, where);
  }
}

}  // namespace

std::vector<std::string> vulkan_plugin_candidates() {
  std::vector<std::string> c;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("STEADYOCR_VULKAN_PLUGIN"); env && *env) {
    if (is_dir(env)) {
      dirs.push_back(env);
    } else {
      return {env};  // a file pins the plugin
    }
  }
  for (const std::string& d : plugin_dirs()) dirs.push_back(d);
  for (const auto& d : dirs) c.push_back(d + "/" + kFile);
  c.push_back(kFile);
  return c;
}

Status check_vulkan_api(const SteadyocrVulkanApi* api, const std::string& path) {
  if (!api) return unavailable(fmt::format("{}: {} returned no table", path, STEADYOCR_VULKAN_INIT_SYMBOL));
  if (api->api_version != STEADYOCR_VULKAN_API_VERSION) {
    return unavailable(fmt::format(
        "{} speaks Vulkan plugin API version {}, this steadyocr speaks version {}: install the plugin built with "
        "this steadyocr (same release) or rebuild both",
        path, api->api_version, STEADYOCR_VULKAN_API_VERSION));
  }
  const std::string host = plugin_abi_tag();
  const std::string plug = api->abi_tag ? api->abi_tag : "";
  if (plug != host) {
    return unavailable(fmt::format(
        "{} was built for a different C++ ABI ('{}', this binary is '{}'): use the plugin from the same build as the "
        "steadyocr binary",
        path, plug, host));
  }
  if (!api->query_runtime || !api->query_device || !api->create_backend || !api->destroy_backend || !api->supports ||
      !api->prepare || !api->run || !api->workspace_bytes || !api->destroy_prepared || !api->prepare_symbolic ||
      !api->last_plan_ms || !api->run_check) {
    return unavailable(fmt::format("{}: its function table is incomplete", path));
  }
  return Status::ok();
}

const VulkanPluginStatus& vulkan_plugin_status() {
  std::call_once(g_once, load_once);
  return g_status;
}

const SteadyocrVulkanApi* vulkan_plugin_api() {
  vulkan_plugin_status();
  return g_api;
}

bool vulkan_device_is_cpu(const SoVkDeviceInfo& d) {
  return d.type == 4;  // VK_PHYSICAL_DEVICE_TYPE_CPU
}

int vulkan_backend_device() {
  const auto& devices = vulkan_plugin_status().devices;
  if (const char* v = std::getenv("STEADYOCR_VULKAN_DEVICE"); v && *v) {
    const int i = std::atoi(v);
    return i >= 0 && i < static_cast<int>(devices.size()) ? i : 0;
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    if (!vulkan_device_is_cpu(devices[i])) return static_cast<int>(i);
  }
  return 0;
}

bool vulkan_backend_device_is_cpu() {
  const auto& devices = vulkan_plugin_status().devices;
  const int i = vulkan_backend_device();
  return i >= 0 && i < static_cast<int>(devices.size()) && vulkan_device_is_cpu(devices[static_cast<size_t>(i)]);
}

bool vulkan_cpu_devices_allowed() {
  return env_is("STEADYOCR_VULKAN_CPU_DEVICES", "1");
}

int vulkan_ladder_device(std::string* why) {
  const VulkanPluginStatus& st = vulkan_plugin_status();
  if (!st.loaded || st.devices.empty()) {
    if (why) *why = st.error;
    return -1;
  }
  for (size_t i = 0; i < st.devices.size(); ++i) {
    if (!vulkan_device_is_cpu(st.devices[i]) || vulkan_cpu_devices_allowed()) return static_cast<int>(i);
  }
  if (why) {
    *why = fmt::format(
        "the only Vulkan device is a CPU implementation ({}): the cpu backend is faster there "
        "(--backend vulkan uses it; STEADYOCR_VULKAN_CPU_DEVICES=1 puts it on the ladder)",
        st.devices.front().name);
  }
  return -1;
}

Result<std::shared_ptr<Backend>> create_vulkan_backend(int device, size_t memory_budget_bytes,
                                                       const std::string& precision) {
  const VulkanPluginStatus& st = vulkan_plugin_status();
  const SteadyocrVulkanApi* api = vulkan_plugin_api();
  if (!api || st.devices.empty()) {
    if (st.finding.empty()) return unavailable(st.error);
    return Status(StatusCode::kUnavailable, st.error, {st.finding, st.error, ""});
  }
  SoVkBackendConfig cfg{sizeof(SoVkBackendConfig), precision.c_str(), device, memory_budget_bytes, 0};
  SoPluginStatus ps{};
  void* handle = nullptr;
  char name[64] = {0};
  DeviceInfo info;
  api->create_backend(&cfg, &handle, name, sizeof(name), &info, &ps);
  if (ps.code != 0 || !handle) {
    if (ps.code == 0) return internal_error("the Vulkan plugin created no backend and gave no reason");
    Status s = status_from_plugin(ps);
    const std::string msg = fmt::format("creating the Vulkan backend on device {} failed: {}", device, s.message());
    if (s.finding()) return Status(StatusCode::kUnavailable, msg, *s.finding());
    return unavailable(msg);
  }
  return std::shared_ptr<Backend>(
      new TableBackend<SteadyocrVulkanApi>(api, handle, name, std::move(info), "the Vulkan plugin"));
}

std::string run_vulkan_check(const std::string& name) {
  const SteadyocrVulkanApi* api = vulkan_plugin_api();
  if (!api) {
    const VulkanPluginStatus& st = vulkan_plugin_status();
    nlohmann::json j = {{"status", "could_not_run"}, {"error", st.error}, {"tried", st.tried}};
    return j.dump();
  }
  std::string out(1 << 16, '\0');
  api->run_check(name.c_str(), "{}", out.data(), out.size());
  out.resize(std::strlen(out.c_str()));
  return out;
}

}  // namespace steadyocr::runtime

#include "runtime/cuda_plugin.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>

#include "backends/cuda/plugin_abi.h"
#include "core/log.h"
#include "runtime/plugin_common.h"

namespace steadyocr::runtime {
namespace {

// Advice for the most common dlopen failures.
std::string advice_for(const std::string& dl_error) {
  if (dl_error.find("libcudnn") != std::string::npos) {
    return "install cuDNN 9 for CUDA 13 (e.g. the libcudnn9-cuda-13 package) or add the folder holding "
           "libcudnn.so.9 to LD_LIBRARY_PATH";
  }
  if (dl_error.find("libcublas") != std::string::npos) {
    return "install cuBLAS 13 (part of the CUDA 13 toolkit / libcublas-13 package) or add its folder to "
           "LD_LIBRARY_PATH";
  }
  if (dl_error.find("libcuda.so") != std::string::npos) {
    return "install the NVIDIA driver (libcuda.so.1), or in a container run with the NVIDIA container runtime";
  }
  if (dl_error.find("undefined symbol") != std::string::npos) {
    return "the plugin was built against other library versions than the ones found; rebuild it or install the "
           "matching cuDNN/cuBLAS";
  }
  return "check the file and its dependencies with ldd";
}

CudaPluginStatus g_status;
const SteadyocrPluginApi* g_api = nullptr;
std::once_flag g_once;

std::string cuda_text(int v) {
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

void load_once() {
  CudaPluginStatus& st = g_status;
  if (const char* off = std::getenv("STEADYOCR_DISABLE_CUDA"); off && std::string(off) == "1") {
    st.error = "the CUDA plugin is disabled by STEADYOCR_DISABLE_CUDA=1";
    return;
  }
  st.driver_cuda_version = probe_driver_cuda_version();
  const CudaPluginChoice choice = choose_cuda_plugins(st.driver_cuda_version);
  const char* pin = std::getenv("STEADYOCR_CUDA_PLUGIN");
  const bool pinned = pin && *pin && is_file(pin);
  st.choice = pinned ? fmt::format("pinned by --cuda-plugin / STEADYOCR_CUDA_PLUGIN ({}); {}", pin, choice.reason)
                     : choice.reason;
  if (!pinned && choice.files.empty()) {
    st.error = choice.reason;
    st.finding = choice.finding;
    log::warn("runtime", "no CUDA plugin fits this driver: {}", choice.reason);
    return;
  }
  std::string first_failure;
  for (const std::string& cand : cuda_plugin_candidates(choice)) {
    const bool bare = cand.find('/') == std::string::npos;  // the loader's own search path
    if (!bare && !is_file(cand)) {
      st.tried.push_back(cand + ": not found");
      continue;
    }
    void* h = ::dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      std::string text = e ? e : "unknown dlopen error";
      st.tried.push_back(cand + ": " + text);
      if (bare && text.find(cand) != std::string::npos &&
          text.find("cannot open shared object file") != std::string::npos) {
        continue;  // simply not on the search path
      }
      if (first_failure.empty()) {
        st.path = cand;
        first_failure = fmt::format("the CUDA plugin {} could not be loaded: {}; {}", cand, text, advice_for(text));
      }
      continue;
    }
    st.path = cand;
    auto init = reinterpret_cast<steadyocr_backend_init_fn>(::dlsym(h, STEADYOCR_PLUGIN_INIT_SYMBOL));
    if (!init) {
      st.error = fmt::format("{} has no entry point {}: it is not a steadyocr CUDA plugin", cand,
                             STEADYOCR_PLUGIN_INIT_SYMBOL);
      st.tried.push_back(cand + ": no entry point");
      return;  // never dlclose: a half-initialised CUDA library may not unload cleanly
    }
    const SteadyocrPluginApi* api = init(STEADYOCR_PLUGIN_API_VERSION);
    Status ok = check_plugin_api(api, cand);
    if (!ok.is_ok()) {
      st.error = ok.message();
      st.tried.push_back(cand + ": " + ok.message());
      return;
    }
    st.tried.push_back(cand + ": loaded");
    g_api = api;
    st.loaded = true;
    api->get_build_info(&st.build);
    if (api->query_runtime(&st.runtime) == 0) {
      st.device_count = st.runtime.device_count;
    } else {
      st.device_count = 0;
      st.device_error = st.runtime.error[0] ? st.runtime.error : "no CUDA device found";
    }
    if (!first_failure.empty()) st.choice += "; a newer plugin did not load: " + first_failure;
    log::info("runtime", "CUDA plugin {} ({}): {} device(s){}", cand, st.choice, st.device_count,
              st.device_error.empty() ? "" : " (" + st.device_error + ")");
    return;
  }
  if (!first_failure.empty()) {
    st.error = first_failure;
  } else {
    std::string where;
    for (const auto& t : st.tried) where += (where.empty() ? "" : "; ") + t;
    std::string files;
    for (const auto& f : choice.files) files += (files.empty() ? "" : " or ") + f;
    st.error = fmt::format(
        "no CUDA plugin found: {} ({}; tried {}); build steadyocr with CUDA (-DSTEADYOCR_CUDA=ON; the CUDA 11.8 "
        "plugin: scripts/setup.sh --cuda11) or pass --cuda-plugin PATH",
        files, choice.reason, where);
  }
}

}  // namespace

const std::vector<CudaPluginFlavour>& cuda_plugin_flavours() {
  // CUDA 13.x: drivers of CUDA 13 (R580+). CUDA 11.x: every CUDA 11 and later driver, from R450.80.02 on by minor
  // version compatibility (the plugin carries SASS for sm_70-90, so no PTX JIT, which would need R520, is needed on
  // those GPUs). docs/COMPATIBILITY.md has the table.
  static const std::vector<CudaPluginFlavour> kFlavours = {
      {"libsteadyocr_cuda13.so", 13, 13000, "R580 (CUDA 13.0)"},
      {"libsteadyocr_cuda11.so", 11, 11000, "R450.80.02 (CUDA 11.0)"},
  };
  return kFlavours;
}

CudaPluginChoice choose_cuda_plugins(int driver_cuda_version) {
  CudaPluginChoice c;
  const auto& all = cuda_plugin_flavours();
  if (driver_cuda_version <= 0) {
    for (const auto& f : all) c.files.push_back(f.file);
    c.reason = "the driver's CUDA version is unknown (no libcuda.so.1 or no cuDriverGetVersion): newest plugin first";
    return c;
  }
  std::string refused;
  for (const auto& f : all) {
    if (driver_cuda_version >= f.min_driver_cuda) {
      if (c.files.empty()) {
        c.reason = fmt::format("the driver supports CUDA {}: {}{}", cuda_text(driver_cuda_version), f.file,
                               refused.empty() ? " (the newest plugin)" : " (" + refused + ")");
      }
      c.files.push_back(f.file);
    } else {
      refused += fmt::format("{}{} needs a driver of {} or newer", refused.empty() ? "" : "; ", f.file, f.min_driver);
    }
  }
  if (c.files.empty()) {
    c.finding = "L2_DRIVER_TOO_OLD";
    c.reason = fmt::format(
        "the driver supports CUDA {}, older than every CUDA plugin ({}): update the NVIDIA driver "
        "to {} or newer",
        cuda_text(driver_cuda_version), refused, all.back().min_driver);
  }
  return c;
}

int probe_driver_cuda_version() {
  // Only the version query: cuInit is not called, so no CUDA state is made in this process.
  void* h = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return 0;
  using Fn = int (*)(int*);
  auto fn = reinterpret_cast<Fn>(::dlsym(h, "cuDriverGetVersion"));
  int v = 0;
  if (!fn || fn(&v) != 0) v = 0;
  return v;  // never dlclose libcuda: the plugin loads it again
}

std::vector<std::string> cuda_plugin_candidates(const CudaPluginChoice& choice, bool honour_pin) {
  std::vector<std::string> c;
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("STEADYOCR_CUDA_PLUGIN"); env && *env) {
    std::string e = env;
    if (is_dir(e)) {
      dirs.push_back(e);
    } else if (honour_pin) {
      c.push_back(e);  // a file pins the plugin: nothing else is tried
      return c;
    } else {
      c.push_back(e);  // listed first, then every default place
    }
  }
  for (const std::string& d : plugin_dirs()) dirs.push_back(d);
  for (const auto& file : choice.files) {
    for (const auto& d : dirs) c.push_back(d + "/" + file);
    c.push_back(file);
  }
  return c;
}

std::vector<std::string> cuda_plugin_candidates() {
  return cuda_plugin_candidates(choose_cuda_plugins(probe_driver_cuda_version()));
}

Status check_plugin_api(const SteadyocrPluginApi* api, const std::string& path) {
  if (!api) return unavailable(fmt::format("{}: {} returned no table", path, STEADYOCR_PLUGIN_INIT_SYMBOL));
  if (api->api_version != STEADYOCR_PLUGIN_API_VERSION) {
    return unavailable(
        fmt::format("{} speaks plugin API version {}, this steadyocr speaks version {}: install the "
                    "plugin built with this steadyocr (same release) or rebuild both",
                    path, api->api_version, STEADYOCR_PLUGIN_API_VERSION));
  }
  const std::string host = plugin_abi_tag();
  const std::string plug = api->abi_tag ? api->abi_tag : "";
  if (plug != host) {
    return unavailable(
        fmt::format("{} was built for a different C++ ABI ('{}', this binary is '{}'): use the "
                    "plugin from the same build as the steadyocr binary",
                    path, plug, host));
  }
  if (!api->get_build_info || !api->query_runtime || !api->query_device || !api->create_backend ||
      !api->destroy_backend || !api->supports || !api->prepare || !api->run || !api->workspace_bytes ||
      !api->destroy_prepared || !api->run_check || !api->set_fault || !api->last_profile || !api->prepare_symbolic ||
      !api->last_plan_ms || !api->runs_concurrently) {
    return unavailable(fmt::format("{}: its function table is incomplete", path));
  }
  return Status::ok();
}

const CudaPluginStatus& cuda_plugin_status() {
  std::call_once(g_once, load_once);
  return g_status;
}

const SteadyocrPluginApi* cuda_plugin_api() {
  cuda_plugin_status();
  return g_api;
}

bool parse_cuda_backend_name(const std::string& name, std::string* precision, bool* cudnn) {
  for (const char* p : {"fp32", "fp16"}) {
    const std::string base = std::string("cuda-") + p;
    if (name == base || name == base + "-nocudnn") {
      *precision = p;
      *cudnn = name == base;
      return true;
    }
  }
  return false;
}

cuda::BackendConfig cuda_environment_overrides() {
  // A documented switch: 1/on/true or 0/off/false. A value it does not know is named in a warning and the default
  // stays (a typo must not silently leave a debugging switch off, or a comparison's variant unchanged).
  auto flag = [](const char* name, bool def) {
    const char* v = std::getenv(name);
    if (!v) return def;
    const std::string s(v);
    if (s == "1" || s == "on" || s == "true") return true;
    if (s == "0" || s == "off" || s == "false") return false;
    log::warn("cuda", "{}={} is not one of 1, on, true, 0, off, false; keeping the default ({})", name, s,
              def ? "on" : "off");
    return def;
  };
  // A count: a whole number in [lo, hi]; anything else is named in a warning and the default stays.
  auto count = [](const char* name, int def, int lo, int hi) {
    const char* v = std::getenv(name);
    if (!v) return def;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || n < lo || n > hi) {
      log::warn("cuda", "{}={} is not a whole number from {} to {}; keeping the default ({})", name, v, lo, hi, def);
      return def;
    }
    return static_cast<int>(n);
  };
  cuda::BackendConfig c;
  c.debug_sync = flag("STEADYOCR_CUDA_DEBUG_SYNC", c.debug_sync);
  c.own_conv = flag("STEADYOCR_CUDA_OWN_CONV", c.own_conv);
  c.cudnn = flag("STEADYOCR_CUDA_CUDNN", c.cudnn);
  c.cuda_graphs = flag("STEADYOCR_CUDA_GRAPHS", c.cuda_graphs);
  c.calibrate = flag("STEADYOCR_CUDA_CALIBRATE", c.calibrate);
  if (const char* a = std::getenv("STEADYOCR_CUDA_ARENAS")) {
    const std::string s(a);
    if (s == "per-plan" || s == "leased") {
      c.own_arenas = s == "per-plan";
    } else {
      log::warn("cuda", "STEADYOCR_CUDA_ARENAS={} is not one of per-plan, leased; runs lease arenas (the default)", s);
    }
  }
  c.profile_ops = count("STEADYOCR_CUDA_PROFILE_OPS", c.profile_ops, 0, 1 << 30);
  c.cudnn_handles = count("STEADYOCR_CUDA_CUDNN_HANDLES", c.cudnn_handles, 1, 256);
  c.graph_arenas = count("STEADYOCR_CUDA_GRAPH_ARENAS", c.graph_arenas, 1, 64);
  if (const char* f = std::getenv("STEADYOCR_CUDA_FAULT")) c.fault_spec = f;
  if (const char* w = std::getenv("STEADYOCR_CUDA_SYNC"); w && !cuda::parse_sync_wait(w, &c.sync_wait)) {
    log::warn("cuda", "STEADYOCR_CUDA_SYNC={} is not one of auto, spin, block; using auto", w);
  }
  return c;
}

cuda::BackendConfig cuda_backend_config(const std::string& precision, size_t memory_budget_bytes, int device) {
  static const cuda::BackendConfig overrides = cuda_environment_overrides();
  cuda::BackendConfig c = overrides;
  c.precision = precision;
  c.memory_budget_bytes = memory_budget_bytes;
  c.device = device;
  return c;
}

Result<std::shared_ptr<Backend>> create_plugin_backend(const SteadyocrPluginApi* api,
                                                       const cuda::BackendConfig& config) {
  if (!api) return unavailable("the CUDA plugin is not loaded");
  SoBackendConfig abi = cuda::to_abi(config);
  SoPluginStatus st{};
  void* handle = nullptr;
  char name[64] = {0};
  DeviceInfo info;
  api->create_backend(&abi, &handle, name, sizeof(name), &info, &st);
  if (st.code != 0 || !handle) {
    if (st.code == 0) return internal_error("the CUDA plugin created no backend and gave no reason");
    return status_from_plugin(st);
  }
  return std::shared_ptr<Backend>(
      new TableBackend<SteadyocrPluginApi>(api, handle, name, std::move(info), "the CUDA plugin"));
}

Result<std::shared_ptr<Backend>> create_cuda_backend(const cuda::BackendConfig& config) {
  const CudaPluginStatus& st = cuda_plugin_status();
  const SteadyocrPluginApi* api = cuda_plugin_api();
  if (!api) {
    if (st.finding.empty()) return unavailable(st.error);
    return Status(StatusCode::kUnavailable, st.error, {st.finding, st.error, ""});
  }
  if (st.device_count <= 0) {
    return unavailable(fmt::format("no usable CUDA device: {} (plugin {}); run `steadyocr doctor` for the cause",
                                   st.device_error.empty() ? "none found" : st.device_error, st.path));
  }
  auto b = create_plugin_backend(api, config);
  if (!b.is_ok()) {
    std::string msg = fmt::format("creating the CUDA backend ({}{}) on device {} failed: {}", config.precision,
                                  config.cudnn ? "" : ", no cuDNN", config.device, b.status().to_string());
    // The plugin's finding (e.g. L2_CUDNN_MISSING) travels on: the ladder's event and the rung's state name it.
    if (b.status().finding()) return Status(StatusCode::kUnavailable, msg, *b.status().finding());
    return unavailable(msg);
  }
  return b;
}

Status set_cuda_fault(const std::string& spec) {
  const SteadyocrPluginApi* api = cuda_plugin_api();
  if (!api) return unavailable(cuda_plugin_status().error);
  SoPluginStatus st{};
  api->set_fault(spec.c_str(), &st);
  return status_from_plugin(st);
}

}  // namespace steadyocr::runtime

#include "doctor/environment.h"

#include <fmt/format.h>
#include <gnu/libc-version.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "doctor/dynlib.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::doctor {

namespace {
std::string first_line_value(const std::string& file, const std::string& key) {
  std::ifstream in(file);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(key, 0) != 0) continue;
    size_t sep = line.find_first_of(":=", key.size());
    if (sep == std::string::npos) continue;
    std::string v = line.substr(sep + 1);
    size_t b = v.find_first_not_of(" \t\"");
    size_t e = v.find_last_not_of(" \t\"");
    return b == std::string::npos ? "" : v.substr(b, e - b + 1);
  }
  return "";
}

bool file_mentions(const std::string& file, const std::vector<std::string>& words) {
  std::ifstream in(file);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  for (const auto& w : words)
    if (text.find(w) != std::string::npos) return true;
  return false;
}

nlohmann::json env_value(const char* name) {
  const char* v = std::getenv(name);
  return v ? nlohmann::json(v) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json environment_report(const Layer1Facts* l1, const Layer2Facts* l2) {
  nlohmann::json j;
  j["steadyocr"] = {{"version", STEADYOCR_VERSION}, {"host_compiler", "g++ " __VERSION__}};

  struct utsname u;
  if (::uname(&u) == 0) {
    j["os"] = {{"kernel", fmt::format("{} {}", u.sysname, u.release)},
               {"kernel_build", u.version},
               {"machine", u.machine},
               {"distribution", first_line_value("/etc/os-release", "PRETTY_NAME")}};
  }
  j["os"]["glibc"] = gnu_get_libc_version();
  cpu_set_t set;
  int allowed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : -1;
  std::string mem = first_line_value("/proc/meminfo", "MemTotal");
  j["cpu"] = {{"model", first_line_value("/proc/cpuinfo", "model name")},
              {"logical_cores", sysconf(_SC_NPROCESSORS_ONLN)},
              {"cores_allowed", allowed},
              {"memory_total", mem}};
  j["container"] = {{"dockerenv", path_exists("/.dockerenv")},
                    {"containerenv", path_exists("/run/.containerenv")},
                    {"cgroup_hints", file_mentions("/proc/1/cgroup", {"docker", "kubepods", "containerd", "libpod"})},
                    {"kubernetes", std::getenv("KUBERNETES_SERVICE_HOST") != nullptr}};
  nlohmann::json vars;
  for (const char* name : {"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "NVIDIA_DRIVER_CAPABILITIES",
                           "LD_LIBRARY_PATH", "CUDA_MODULE_LOADING", "CUDA_CACHE_DISABLE", "CUDA_LAUNCH_BLOCKING",
                           "STEADYOCR_CUDA_PLUGIN", "STEADYOCR_DOCTOR_FAULT"})
    vars[name] = env_value(name);
  j["env"] = vars;

  nlohmann::json gpu;
  if (l1) {
    const DriverFacts& d = l1->driver;
    gpu["libcuda"] = d.loaded ? d.libcuda_realpath : "not loadable: " + d.dlopen_error;
    gpu["driver_version"] = !l1->nvml.driver_version.empty() ? l1->nvml.driver_version : d.driver_version;
    gpu["cuda_driver_version"] = d.driver_cuda_version ? cuda_version(d.driver_cuda_version).major_minor() : "";
    if (d.init_called) gpu["cuinit"] = fmt::format("{} {}", d.init_result, d.init_name);
    gpu["devices"] = to_json(d)["devices"];
    gpu["nvml"] = l1->nvml.loaded ? to_json(l1->nvml) : nlohmann::json("not loadable: " + l1->nvml.dlopen_error);
    gpu["device_nodes"] = to_json(l1->nodes);
  }
  j["gpu"] = gpu;

  if (l2) {
    PluginBuild build = effective_build(l2->plugin);
    nlohmann::json plugin = to_json(l2->plugin);
    j["build"] = {{"plugin", l2->plugin.found ? l2->plugin.path : "not found"},
                  {"plugin_loaded", l2->plugin.loaded},
                  {"cuda_runtime", cuda_version(build.cuda_runtime_version).major_minor()},
                  {"cudnn", cudnn_version(build.cudnn_version).str()},
                  {"cublas", cublas_version(build.cublas_version).str()},
                  {"built_with_source", build.source},
                  {"sass_archs", l2->plugin.fatbin.sass},
                  {"ptx_archs", l2->plugin.fatbin.ptx},
                  {"declared_archs", build.sass_archs + (build.ptx_archs.empty() ? "" : " +ptx " + build.ptx_archs)},
                  {"compiler", build.compiler}};
    if (l2->plugin.runtime_queried) {
      const auto& r = l2->plugin.runtime;
      j["cuda_runtime"] = {{"version", cuda_version(r.runtime_version).major_minor()},
                           {"path", r.cudart_path[0] ? r.cudart_path : "static"},
                           {"device_count", r.device_count},
                           {"error", r.error}};
    }
    j["cudnn"] = to_json(l2->cudnn);
    j["cublas"] = to_json(l2->cublas);
  }
  return j;
}

namespace {
void flatten(const nlohmann::json& j, const std::string& prefix,
             std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object()) {
    for (auto& [k, v] : j.items()) flatten(v, prefix.empty() ? k : prefix + "." + k, out);
    return;
  }
  if (j.is_array()) {
    bool scalars = true;
    for (const auto& e : j) scalars = scalars && !e.is_object() && !e.is_array();
    if (scalars) {
      std::string s;
      for (const auto& e : j) s += (s.empty() ? "" : ", ") + (e.is_string() ? e.get<std::string>() : e.dump());
      out->push_back({prefix, s.empty() ? "(none)" : s});
      return;
    }
    for (size_t i = 0; i < j.size(); ++i) flatten(j[i], prefix + "[" + std::to_string(i) + "]", out);
    return;
  }
  out->push_back({prefix, j.is_string() ? j.get<std::string>() : j.is_null() ? "(unset)" : j.dump()});
}
}  // namespace

std::string render_environment_text(const nlohmann::json& env) {
  std::vector<std::pair<std::string, std::string>> rows;
  flatten(env, "", &rows);
  size_t width = 0;
  for (const auto& r : rows) width = std::max(width, r.first.size());
  std::string out;
  for (const auto& r : rows) out += fmt::format("  {:<{}}  {}\n", r.first, width, r.second);
  return out;
}

}  // namespace steadyocr::doctor

// Layer-1 probes: environment, device nodes, the driver API (libcuda.so.1) and NVML, all through dlopen so
// the binary runs, and says why, on a machine without any of them.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "doctor/dynlib.h"
#include "doctor/probes.h"

namespace steadyocr::doctor {

namespace {
EnvVar env_var(const char* name) {
  EnvVar v;
  if (const char* s = std::getenv(name)) {
    v.set = true;
    v.value = s;
  }
  return v;
}

// 16 bytes as NVML prints a GPU's UUID: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
std::string format_gpu_uuid(const unsigned char* id) {
  static const char* kHex = "0123456789abcdef";
  std::string s = "GPU-";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += kHex[id[i] >> 4];
    s += kHex[id[i] & 15];
  }
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// Driver API, declared here so nothing links libcuda.
using CuInitFn = int (*)(unsigned int);
using CuIntOutFn = int (*)(int*);
using CuDeviceGetFn = int (*)(int*, int);
using CuDeviceGetNameFn = int (*)(char*, int, int);
using CuDeviceGetAttributeFn = int (*)(int*, int, int);
using CuDeviceTotalMemFn = int (*)(size_t*, int);
using CuGetErrorTextFn = int (*)(int, const char**);
using CuDeviceGetUuidFn = int (*)(unsigned char*, int);  // CUuuid is 16 bytes
constexpr int kAttrSmCount = 16, kAttrEcc = 32, kAttrCcMajor = 75, kAttrCcMinor = 76;

// NVML, likewise.
using NvmlVoidFn = int (*)();
using NvmlTextFn = int (*)(char*, unsigned int);
using NvmlUintOutFn = int (*)(unsigned int*);
using NvmlIntOutFn = int (*)(int*);
using NvmlHandleFn = int (*)(unsigned int, void**);
using NvmlDevTextFn = int (*)(void*, char*, unsigned int);
struct NvmlMemory {
  unsigned long long total, free, used;
};
using NvmlMemFn = int (*)(void*, NvmlMemory*);
using NvmlEccFn = int (*)(void*, int, int, unsigned long long*);
using NvmlErrorStringFn = const char* (*)(int);
using NvmlMigModeFn = int (*)(void*, unsigned int*, unsigned int*);
using NvmlMaxMigFn = int (*)(void*, unsigned int*);
using NvmlMigHandleFn = int (*)(void*, unsigned int, void**);
}  // namespace

VisibilityEnv read_visibility_env() {
  VisibilityEnv e;
  e.cuda_visible_devices = env_var("CUDA_VISIBLE_DEVICES");
  e.nvidia_visible_devices = env_var("NVIDIA_VISIBLE_DEVICES");
  e.nvidia_driver_capabilities = env_var("NVIDIA_DRIVER_CAPABILITIES");
  e.ld_library_path = env_var("LD_LIBRARY_PATH");
  return e;
}

DeviceNodes probe_device_nodes(const std::string& dev_dir) {
  DeviceNodes n;
  auto check_access = [&](const std::string& path) {
    int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) {
      if (errno == EACCES || errno == EPERM) n.no_access.push_back(path);
      return;
    }
    ::close(fd);
  };
  if (path_exists(dev_dir + "/nvidiactl")) {
    n.nvidiactl = true;
    check_access(dev_dir + "/nvidiactl");
  }
  n.uvm = path_exists(dev_dir + "/nvidia-uvm");
  n.dxg = path_exists(dev_dir + "/dxg");
  if (DIR* d = opendir(dev_dir.c_str())) {
    static const std::regex kGpuNode("nvidia[0-9]+");
    while (struct dirent* e = readdir(d)) {
      if (std::regex_match(e->d_name, kGpuNode)) n.gpus.push_back(dev_dir + "/" + e->d_name);
    }
    closedir(d);
  }
  std::sort(n.gpus.begin(), n.gpus.end());
  for (const auto& g : n.gpus) check_access(g);
  return n;
}

const char* cu_result_name(int r) {
  switch (r) {
    case 0:
      return "CUDA_SUCCESS";
    case 1:
      return "CUDA_ERROR_INVALID_VALUE";
    case 2:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case 4:
      return "CUDA_ERROR_DEINITIALIZED";
    case 34:
      return "CUDA_ERROR_STUB_LIBRARY";
    case 35:
      return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 36:
      return "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER";
    case 46:
      return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100:
      return "CUDA_ERROR_NO_DEVICE";
    case 101:
      return "CUDA_ERROR_INVALID_DEVICE";
    case 209:
      return "CUDA_ERROR_NO_BINARY_FOR_GPU";
    case 222:
      return "CUDA_ERROR_UNSUPPORTED_PTX_VERSION";
    case 304:
      return "CUDA_ERROR_OPERATING_SYSTEM";
    case 700:
      return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 719:
      return "CUDA_ERROR_LAUNCH_FAILED";
    case 801:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case 802:
      return "CUDA_ERROR_SYSTEM_NOT_READY";
    case 803:
      return "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH";
    case 804:
      return "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE";
    case 999:
      return "CUDA_ERROR_UNKNOWN";
  }
  return "CUDA_ERROR_(unlisted)";
}

DriverFacts probe_driver() {
  DriverFacts f;
  f.libcuda_files = find_library_files("libcuda.so");
  LoadedLib lib = open_library("libcuda.so.1");
  if (!lib.ok()) {
    f.dlopen_error = lib.error;
    return f;
  }
  f.loaded = true;
  f.libcuda_path = lib.path;
  f.libcuda_realpath = lib.realpath;
  static const std::regex kVersioned(R"(libcuda\.so\.([0-9]+\.[0-9]+(\.[0-9]+)?)$)");
  std::smatch m;
  if (std::regex_search(f.libcuda_realpath, m, kVersioned)) f.driver_version = m[1];

  auto cu_init = reinterpret_cast<CuInitFn>(lib.symbol("cuInit"));
  auto get_name = reinterpret_cast<CuGetErrorTextFn>(lib.symbol("cuGetErrorName"));
  auto get_string = reinterpret_cast<CuGetErrorTextFn>(lib.symbol("cuGetErrorString"));
  if (!cu_init) {
    f.init_result = -1;
    f.init_name = "cuInit missing";
    f.init_message = "libcuda.so.1 has no cuInit symbol: not a CUDA driver library";
    return f;
  }
  f.init_called = true;
  f.init_result = cu_init(0);
  const char* text = nullptr;
  f.init_name = (get_name && get_name(f.init_result, &text) == 0 && text) ? text : cu_result_name(f.init_result);
  text = nullptr;
  f.init_message = (get_string && get_string(f.init_result, &text) == 0 && text) ? text : "";
  if (auto ver = reinterpret_cast<CuIntOutFn>(lib.symbol("cuDriverGetVersion"))) ver(&f.driver_cuda_version);
  if (f.init_result != 0) return f;

  auto count = reinterpret_cast<CuIntOutFn>(lib.symbol("cuDeviceGetCount"));
  auto dev_get = reinterpret_cast<CuDeviceGetFn>(lib.symbol("cuDeviceGet"));
  auto dev_name = reinterpret_cast<CuDeviceGetNameFn>(lib.symbol("cuDeviceGetName"));
  auto dev_attr = reinterpret_cast<CuDeviceGetAttributeFn>(lib.symbol("cuDeviceGetAttribute"));
  auto dev_mem = reinterpret_cast<CuDeviceTotalMemFn>(lib.symbol("cuDeviceTotalMem_v2"));
  auto dev_pci = reinterpret_cast<CuDeviceGetNameFn>(lib.symbol("cuDeviceGetPCIBusId"));
  auto dev_uuid = reinterpret_cast<CuDeviceGetUuidFn>(lib.symbol("cuDeviceGetUuid_v2"));
  if (!dev_uuid) dev_uuid = reinterpret_cast<CuDeviceGetUuidFn>(lib.symbol("cuDeviceGetUuid"));
  if (!count) return f;
  int n = 0;
  f.device_count_result = count(&n);
  f.device_count = f.device_count_result == 0 ? n : 0;
  for (int i = 0; i < f.device_count && dev_get; ++i) {
    DriverDevice d;
    d.index = i;
    int dev = 0;
    if (dev_get(&dev, i) != 0) continue;
    char buf[256] = {};
    if (dev_name && dev_name(buf, sizeof(buf), dev) == 0) d.name = buf;
    if (dev_pci && dev_pci(buf, sizeof(buf), dev) == 0) d.pci_bus_id = buf;
    unsigned char id[16] = {};
    if (dev_uuid && dev_uuid(id, dev) == 0) d.uuid = format_gpu_uuid(id);
    if (dev_attr) {
      dev_attr(&d.cc_major, kAttrCcMajor, dev);
      dev_attr(&d.cc_minor, kAttrCcMinor, dev);
      dev_attr(&d.sm_count, kAttrSmCount, dev);
      dev_attr(&d.ecc_enabled, kAttrEcc, dev);
    }
    if (dev_mem) dev_mem(&d.total_bytes, dev);
    f.devices.push_back(d);
  }
  return f;
}

NvmlFacts probe_nvml() {
  NvmlFacts f;
  LoadedLib lib = open_library("libnvidia-ml.so.1");
  if (!lib.ok()) {
    f.dlopen_error = lib.error;
    return f;
  }
  f.loaded = true;
  f.path = lib.realpath;
  auto init = reinterpret_cast<NvmlVoidFn>(lib.symbol("nvmlInit_v2"));
  auto shutdown = reinterpret_cast<NvmlVoidFn>(lib.symbol("nvmlShutdown"));
  auto err_string = reinterpret_cast<NvmlErrorStringFn>(lib.symbol("nvmlErrorString"));
  if (!init) {
    f.init_error = "libnvidia-ml.so.1 has no nvmlInit_v2";
    return f;
  }
  f.init_result = init();
  if (f.init_result != 0) {
    f.init_error = err_string ? err_string(f.init_result) : "nvmlInit_v2 failed";
    return f;
  }
  char buf[256] = {};
  if (auto v = reinterpret_cast<NvmlTextFn>(lib.symbol("nvmlSystemGetDriverVersion")); v && v(buf, sizeof(buf)) == 0)
    f.driver_version = buf;
  if (auto v = reinterpret_cast<NvmlIntOutFn>(lib.symbol("nvmlSystemGetCudaDriverVersion_v2")))
    v(&f.cuda_driver_version);
  auto count = reinterpret_cast<NvmlUintOutFn>(lib.symbol("nvmlDeviceGetCount_v2"));
  auto handle = reinterpret_cast<NvmlHandleFn>(lib.symbol("nvmlDeviceGetHandleByIndex_v2"));
  auto name = reinterpret_cast<NvmlDevTextFn>(lib.symbol("nvmlDeviceGetName"));
  auto uuid = reinterpret_cast<NvmlDevTextFn>(lib.symbol("nvmlDeviceGetUUID"));
  auto mem = reinterpret_cast<NvmlMemFn>(lib.symbol("nvmlDeviceGetMemoryInfo"));
  auto ecc = reinterpret_cast<NvmlEccFn>(lib.symbol("nvmlDeviceGetTotalEccErrors"));
  auto mig_mode = reinterpret_cast<NvmlMigModeFn>(lib.symbol("nvmlDeviceGetMigMode"));
  auto max_mig = reinterpret_cast<NvmlMaxMigFn>(lib.symbol("nvmlDeviceGetMaxMigDeviceCount"));
  auto mig_handle = reinterpret_cast<NvmlMigHandleFn>(lib.symbol("nvmlDeviceGetMigDeviceHandleByIndex"));
  unsigned int n = 0;
  if (count && count(&n) == 0) f.device_count = static_cast<int>(n);
  for (unsigned int i = 0; handle && i < n; ++i) {
    void* h = nullptr;
    if (handle(i, &h) != 0) continue;
    NvmlDevice d;
    if (name && name(h, buf, sizeof(buf)) == 0) d.name = buf;
    if (uuid && uuid(h, buf, sizeof(buf)) == 0) d.uuid = buf;
    NvmlMemory m{};
    if (mem && mem(h, &m) == 0) {
      d.total_bytes = m.total;
      d.used_bytes = m.used;
    }
    unsigned long long errors = 0;
    // NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1, NVML_VOLATILE_ECC = 0.
    if (ecc && ecc(h, 1, 0, &errors) == 0) d.ecc_uncorrected_volatile = static_cast<long long>(errors);
    unsigned int current = 0, pending = 0;
    if (mig_mode && mig_mode(h, &current, &pending) == 0) {  // NVML_ERROR_NOT_SUPPORTED on GPUs without MIG
      d.mig_current = static_cast<int>(current);
      d.mig_pending = static_cast<int>(pending);
      unsigned int slots = 0;
      if (current == 1 && max_mig && mig_handle && max_mig(h, &slots) == 0) {
        for (unsigned int k = 0; k < slots; ++k) {
          void* mh = nullptr;
          if (mig_handle(h, k, &mh) != 0) continue;
          ++d.mig_instances;
          if (uuid && uuid(mh, buf, sizeof(buf)) == 0) d.mig_uuids.emplace_back(buf);
        }
      }
    }
    f.devices.push_back(d);
  }
  if (shutdown) shutdown();
  return f;
}

VisibleDevicesVerdict parse_cuda_visible_devices(const std::string& value, int physical_count) {
  VisibleDevicesVerdict v;
  std::string s = trim(value);
  if (s.empty()) {
    v.hides_all = true;
    v.problem = "the value is empty, which selects no device";
    return v;
  }
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string tok = trim(s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    bool is_index = !tok.empty() && std::all_of(tok.begin(), tok.end(), [](char c) { return std::isdigit(c); });
    bool is_uuid = tok.rfind("GPU-", 0) == 0 || tok.rfind("MIG-", 0) == 0;
    if (!is_index && !is_uuid) {
      v.problem =
          "entry '" + tok + "' is not a device index or GPU-/MIG- UUID; CUDA ignores it and every entry after it";
      break;
    }
    if (is_index && physical_count >= 0 && std::stoll(tok.substr(0, 9)) >= physical_count) {
      v.problem = "index " + tok + " is beyond the " + std::to_string(physical_count) +
                  " GPU(s) of this machine; CUDA ignores it and every entry after it";
      break;
    }
    ++v.usable_entries;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  v.hides_all = v.usable_entries == 0;
  return v;
}

nlohmann::json to_json(const DriverFacts& f) {
  nlohmann::json j;
  j["libcuda_loaded"] = f.loaded;
  if (!f.loaded) j["dlopen_error"] = f.dlopen_error;
  j["libcuda_path"] = f.libcuda_path;
  j["libcuda_realpath"] = f.libcuda_realpath;
  j["libcuda_files_seen"] = f.libcuda_files;
  if (f.init_called) {
    j["cuinit_result"] = f.init_result;
    j["cuinit_name"] = f.init_name;
    j["cuinit_message"] = f.init_message;
  }
  j["driver_cuda_version"] = f.driver_cuda_version;
  j["driver_version"] = f.driver_version;
  j["device_count"] = f.device_count;
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : f.devices) {
    devs.push_back({{"index", d.index},
                    {"name", d.name},
                    {"pci_bus_id", d.pci_bus_id},
                    {"uuid", d.uuid},
                    {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                    {"sm_count", d.sm_count},
                    {"total_mib", d.total_bytes >> 20},
                    {"ecc_enabled", d.ecc_enabled}});
  }
  j["devices"] = devs;
  return j;
}

nlohmann::json to_json(const NvmlFacts& f) {
  nlohmann::json j;
  j["loaded"] = f.loaded;
  if (!f.loaded) j["dlopen_error"] = f.dlopen_error;
  j["path"] = f.path;
  if (f.loaded) {
    j["init_result"] = f.init_result;
    if (!f.init_error.empty()) j["init_error"] = f.init_error;
  }
  j["driver_version"] = f.driver_version;
  j["cuda_driver_version"] = f.cuda_driver_version;
  j["device_count"] = f.device_count;
  nlohmann::json devs = nlohmann::json::array();
  for (const auto& d : f.devices) {
    devs.push_back(
        {{"name", d.name},
         {"uuid", d.uuid},
         {"total_mib", d.total_bytes >> 20},
         {"used_mib", d.used_bytes >> 20},
         {"ecc_uncorrected_volatile", d.ecc_uncorrected_volatile},
         {"mig_mode", d.mig_current < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.mig_current == 1)},
         {"mig_mode_pending", d.mig_pending < 0 ? nlohmann::json(nullptr) : nlohmann::json(d.mig_pending == 1)},
         {"mig_instances", d.mig_instances}});
  }
  j["devices"] = devs;
  return j;
}

MpsFacts probe_mps() {
  MpsFacts m;
  const char* dir = std::getenv("CUDA_MPS_PIPE_DIRECTORY");
  m.pipe_dir_from_env = dir && *dir;
  m.pipe_dir = m.pipe_dir_from_env ? dir : "/tmp/nvidia-mps";
  struct stat st;
  m.control_socket = ::stat((m.pipe_dir + "/control").c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
  if (const char* v = std::getenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) m.active_thread_percentage = v;
  if (const char* v = std::getenv("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT")) m.pinned_device_mem_limit = v;
  return m;
}

nlohmann::json to_json(const MpsFacts& m) {
  return {{"pipe_dir", m.pipe_dir},
          {"pipe_dir_from_env", m.pipe_dir_from_env},
          {"control_socket", m.control_socket},
          {"active_thread_percentage", m.active_thread_percentage},
          {"pinned_device_mem_limit", m.pinned_device_mem_limit}};
}

nlohmann::json to_json(const DeviceNodes& n) {
  return {{"nvidiactl", n.nvidiactl},
          {"gpu_nodes", n.gpus},
          {"nvidia_uvm", n.uvm},
          {"dxg", n.dxg},
          {"no_access", n.no_access}};
}

}  // namespace steadyocr::doctor

// Layer 1, visibility: can this process see an NVIDIA GPU at all?
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <sstream>

#include "doctor/layers.h"

namespace steadyocr::doctor {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string shown(const EnvVar& v) {
  return v.set ? "\"" + v.value + "\"" : "(unset)";
}

CheckResult check_cuda_visible_devices(const Layer1Facts& f) {
  const EnvVar& v = f.env.cuda_visible_devices;
  nlohmann::json ev = {{"value", shown(v)}, {"nvml_device_count", f.nvml.device_count}};
  if (!v.set) return pass(1, "cuda_visible_devices", "CUDA_VISIBLE_DEVICES unset: every GPU is visible", ev);
  VisibleDevicesVerdict verdict = parse_cuda_visible_devices(v.value, f.nvml.device_count);
  ev["usable_entries"] = verdict.usable_entries;
  ev["problem"] = verdict.problem;
  if (verdict.hides_all) {
    return finding(1, "cuda_visible_devices", CheckStatus::kFail, "L1_DEVICES_HIDDEN",
                   fmt::format("CUDA_VISIBLE_DEVICES={} hides every GPU: {}", shown(v), verdict.problem), ev);
  }
  if (!verdict.problem.empty()) {
    return finding(1, "cuda_visible_devices", CheckStatus::kWarn, "L1_VISIBLE_DEVICES_PARTIAL",
                   fmt::format("CUDA_VISIBLE_DEVICES={}: {}", shown(v), verdict.problem), ev);
  }
  return pass(1, "cuda_visible_devices",
              fmt::format("CUDA_VISIBLE_DEVICES={} selects {} device(s)", shown(v), verdict.usable_entries), ev);
}

CheckResult check_container_env(const Layer1Facts& f) {
  const EnvVar& vis = f.env.nvidia_visible_devices;
  const EnvVar& caps = f.env.nvidia_driver_capabilities;
  nlohmann::json ev = {{"nvidia_visible_devices", shown(vis)}, {"nvidia_driver_capabilities", shown(caps)}};
  if (vis.set) {
    std::string l = lower(vis.value);
    if (l.empty() || l == "void" || l == "none") {
      ev["value"] = shown(vis);
      return finding(1, "container_env", CheckStatus::kWarn, "L1_CONTAINER_NO_GPU_REQUESTED",
                     fmt::format("NVIDIA_VISIBLE_DEVICES={}: the container runtime exposes no GPU", shown(vis)), ev);
    }
  }
  if (caps.set) {
    std::string l = lower(caps.value);
    if (l.find("compute") == std::string::npos && l.find("all") == std::string::npos) {
      ev["value"] = shown(caps);
      return finding(1, "container_env", CheckStatus::kWarn, "L1_DRIVER_CAPABILITIES_NO_COMPUTE",
                     fmt::format("NVIDIA_DRIVER_CAPABILITIES={} lacks compute: libcuda is not mounted", shown(caps)),
                     ev);
    }
  }
  std::string what =
      (vis.set || caps.set) ? "NVIDIA container variables allow compute" : "not set (no NVIDIA container hints)";
  return pass(1, "container_env", what, ev);
}

CheckResult check_device_nodes(const Layer1Facts& f) {
  const DeviceNodes& n = f.nodes;
  nlohmann::json ev = to_json(n);
  std::vector<std::string> missing;
  if (!n.nvidiactl) missing.push_back("/dev/nvidiactl");
  if (n.gpus.empty()) missing.push_back("/dev/nvidia[0-9]+");
  ev["missing"] = missing;
  if (!missing.empty() && n.dxg) {
    return pass(1, "device_nodes", "no /dev/nvidia* but /dev/dxg: WSL2, the GPU comes through DirectX", ev);
  }
  if (!missing.empty()) {
    std::string m;
    for (const auto& s : missing) m += (m.empty() ? "" : " and ") + s;
    return finding(
        1, "device_nodes", CheckStatus::kFail, "L1_NO_DEVICE_NODES",
        "no GPU device nodes: " + m + " missing (no kernel driver loaded, or no GPU passed to the container)", ev);
  }
  if (!n.no_access.empty()) {
    std::string m;
    for (const auto& s : n.no_access) m += (m.empty() ? "" : ", ") + s;
    return finding(1, "device_nodes", CheckStatus::kFail, "L1_DEVICE_NODE_NO_ACCESS",
                   "GPU device nodes not accessible to this user: " + m, ev);
  }
  if (!n.uvm) {
    return finding(1, "device_nodes", CheckStatus::kWarn, "L1_NO_UVM_NODE",
                   fmt::format("{} GPU node(s) but no /dev/nvidia-uvm", n.gpus.size()), ev);
  }
  return pass(1, "device_nodes", fmt::format("/dev/nvidiactl, {} GPU node(s), /dev/nvidia-uvm", n.gpus.size()), ev);
}

bool is_stub_path(const std::string& p) {
  return p.find("/stubs/") != std::string::npos;
}

CheckResult check_libcuda(const Layer1Facts& f) {
  const DriverFacts& d = f.driver;
  nlohmann::json ev = {{"libcuda_path", d.libcuda_path},
                       {"libcuda_realpath", d.libcuda_realpath},
                       {"libcuda_files_seen", d.libcuda_files},
                       {"ld_library_path", shown(f.env.ld_library_path)}};
  if (!d.loaded) {
    ev["dlopen_error"] = d.dlopen_error;
    bool not_found = d.dlopen_error.find("cannot open shared object file") != std::string::npos;
    if (not_found) {
      bool only_stubs =
          !d.libcuda_files.empty() && std::all_of(d.libcuda_files.begin(), d.libcuda_files.end(), is_stub_path);
      std::string extra = only_stubs ? " (only the CUDA toolkit's stub libcuda.so exists, which is not a driver)" : "";
      return finding(1, "libcuda", CheckStatus::kFail, "L1_NO_DRIVER",
                     "no NVIDIA driver: libcuda.so.1 not found by the dynamic loader" + extra, ev);
    }
    return finding(1, "libcuda", CheckStatus::kFail, "L1_LIBCUDA_LOAD_FAILED",
                   "libcuda.so.1 found but not loadable: " + d.dlopen_error, ev);
  }
  if (is_stub_path(d.libcuda_path) || is_stub_path(d.libcuda_realpath) || (d.init_called && d.init_result == 34)) {
    return finding(1, "libcuda", CheckStatus::kFail, "L1_STUB_LIBCUDA",
                   fmt::format("libcuda.so.1 is the CUDA toolkit's stub: {} -> {}", d.libcuda_path, d.libcuda_realpath),
                   ev);
  }
  ev["driver_version"] = d.driver_version;
  return pass(1, "libcuda",
              fmt::format("{} ({}{})", d.libcuda_path, d.libcuda_realpath,
                          d.driver_version.empty() ? "" : ", driver " + d.driver_version),
              ev);
}

CheckResult check_cuinit(const Layer1Facts& f) {
  const DriverFacts& d = f.driver;
  if (!d.loaded) {
    return skipped(1, "cuinit", "DOCTOR_PREREQUISITE_FAILED", "not run: libcuda.so.1 could not be loaded",
                   {{"depends_on", "libcuda"}});
  }
  nlohmann::json ev = {{"cuinit_result", d.init_result},
                       {"cuinit_name", d.init_name},
                       {"cuinit_message", d.init_message},
                       {"driver_cuda_version", d.driver_cuda_version},
                       {"cuda_visible_devices", shown(f.env.cuda_visible_devices)},
                       {"nvml_device_count", f.nvml.device_count},
                       {"device_count", d.device_count}};
  std::string what = fmt::format("cuInit(0) = {} {}{}", d.init_result, d.init_name,
                                 d.init_message.empty() ? "" : " (" + d.init_message + ")");
  switch (d.init_result) {
    case 0:
      return pass(1, "cuinit", what, ev);
    case 34:
      ev["libcuda_path"] = d.libcuda_path;
      ev["libcuda_realpath"] = d.libcuda_realpath;
      return finding(1, "cuinit", CheckStatus::kFail, "L1_STUB_LIBCUDA", what + ": the stub library was loaded", ev);
    case 100: {
      VisibleDevicesVerdict v;
      if (f.env.cuda_visible_devices.set) v = parse_cuda_visible_devices(f.env.cuda_visible_devices.value, -1);
      if (v.hides_all) {
        ev["value"] = shown(f.env.cuda_visible_devices);
        return finding(1, "cuinit", CheckStatus::kFail, "L1_DEVICES_HIDDEN", what + ": CUDA_VISIBLE_DEVICES hides them",
                       ev);
      }
      return finding(1, "cuinit", CheckStatus::kFail, "L1_NO_DEVICE", what, ev);
    }
    case 803:
      return finding(1, "cuinit", CheckStatus::kFail, "L1_DRIVER_KERNEL_MISMATCH", what, ev);
    default:
      return finding(1, "cuinit", CheckStatus::kFail, "L1_CUINIT_FAILED", what, ev);
  }
}

CheckResult check_devices(const Layer1Facts& f) {
  const DriverFacts& d = f.driver;
  if (!d.loaded || d.init_result != 0) {
    return skipped(1, "devices", "DOCTOR_PREREQUISITE_FAILED", "not run: cuInit did not succeed",
                   {{"depends_on", "cuinit"}});
  }
  nlohmann::json ev = to_json(d);
  ev["cuda_visible_devices"] = shown(f.env.cuda_visible_devices);
  ev["nvml_device_count"] = f.nvml.device_count;
  if (d.device_count <= 0) {
    return finding(1, "devices", CheckStatus::kFail, "L1_NO_DEVICE",
                   fmt::format("cuDeviceGetCount = {} (result {})", d.device_count, d.device_count_result), ev);
  }
  std::string list;
  for (const auto& dev : d.devices)
    list += fmt::format("{}#{} {} (cc {}.{}, {} MiB)", list.empty() ? "" : "; ", dev.index, dev.name, dev.cc_major,
                        dev.cc_minor, dev.total_bytes >> 20);
  return pass(1, "devices", fmt::format("{} device(s): {}", d.device_count, list), ev);
}

CheckResult check_nvml(const Layer1Facts& f) {
  const NvmlFacts& n = f.nvml;
  nlohmann::json ev = to_json(n);
  if (!n.loaded) {
    CheckResult r = skipped(1, "nvml", "L1_NVML_ABSENT", "libnvidia-ml.so.1 not loadable: " + n.dlopen_error, ev);
    r.required = false;
    return r;
  }
  if (n.init_result != 0) {
    ev["nvml_error"] = n.init_error;
    // NVML_ERROR_LIB_RM_VERSION_MISMATCH (18): kernel module and user-space driver differ.
    if (n.init_result == 18) {
      return finding(1, "nvml", CheckStatus::kFail, "L1_DRIVER_KERNEL_MISMATCH",
                     "nvmlInit: " + n.init_error + " (kernel module and driver library versions differ)", ev);
    }
    return finding(1, "nvml", CheckStatus::kWarn, "L1_NVML_FAILED", "nvmlInit failed: " + n.init_error, ev);
  }
  for (size_t i = 0; i < n.devices.size(); ++i) {
    if (n.devices[i].ecc_uncorrected_volatile > 0) {
      ev["device"] = fmt::format("{} {}", i, n.devices[i].name);
      ev["ecc_uncorrected"] = n.devices[i].ecc_uncorrected_volatile;
      return finding(1, "nvml", CheckStatus::kWarn, "L1_GPU_ECC_ERRORS",
                     fmt::format("GPU {} ({}) reports {} uncorrected ECC error(s)", i, n.devices[i].name,
                                 n.devices[i].ecc_uncorrected_volatile),
                     ev);
    }
  }
  std::string what = fmt::format("NVML {}: driver {}, {} GPU(s)", n.path, n.driver_version, n.device_count);
  if (f.driver.init_result == 0 && f.driver.device_count >= 0 && n.device_count >= 0 &&
      n.device_count != f.driver.device_count) {
    ev["cuda_device_count"] = f.driver.device_count;
    ev["cuda_visible_devices"] = shown(f.env.cuda_visible_devices);
    ev["nvml_device_count"] = n.device_count;
    return finding(1, "nvml", CheckStatus::kPass, "L1_NVML_CUDA_COUNT_DIFFERS",
                   what + fmt::format("; CUDA sees {}", f.driver.device_count), ev);
  }
  return pass(1, "nvml", what, ev);
}
// GPU sharing: MIG mode on any GPU, an MPS control daemon. Neither is a problem; both change what a pod may use, so
// the doctor says so (each pod's --gpu-mem must fit its share: docs/DEPLOY.md).
CheckResult check_mig(const Layer1Facts& f) {
  nlohmann::json ev = nlohmann::json::array();
  std::string enabled;
  for (size_t i = 0; i < f.nvml.devices.size(); ++i) {
    const NvmlDevice& d = f.nvml.devices[i];
    ev.push_back({{"index", i},
                  {"name", d.name},
                  {"mig_mode", d.mig_current < 0    ? "not supported"
                               : d.mig_current == 1 ? "enabled"
                                                    : "disabled"},
                  {"mig_mode_pending", d.mig_pending < 0    ? "-"
                                       : d.mig_pending == 1 ? "enabled"
                                                            : "disabled"},
                  {"mig_instances", d.mig_instances}});
    if (d.mig_current == 1) {
      enabled +=
          fmt::format("{}GPU {} ({}): {} MIG instance(s)", enabled.empty() ? "" : "; ", i, d.name, d.mig_instances);
    }
  }
  nlohmann::json evidence = {{"devices", ev}, {"cuda_visible_devices", shown(f.env.cuda_visible_devices)}};
  if (!f.nvml.loaded || f.nvml.init_result != 0) {
    CheckResult r = skipped(1, "mig", "DOCTOR_PREREQUISITE_FAILED", "not run: NVML is not usable", evidence);
    r.required = false;
    return r;
  }
  if (!enabled.empty()) {
    evidence["mig"] = enabled;
    return finding(1, "mig", CheckStatus::kPass, "L1_MIG_ENABLED", "MIG mode: " + enabled, evidence);
  }
  return pass(1, "mig", "no GPU in MIG mode", evidence);
}

CheckResult check_mps(const Layer1Facts& f) {
  nlohmann::json ev = to_json(f.mps);
  if (f.mps.control_socket) {
    ev["limits"] = fmt::format("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE={}, CUDA_MPS_PINNED_DEVICE_MEM_LIMIT={}",
                               f.mps.active_thread_percentage.empty() ? "(unset)" : f.mps.active_thread_percentage,
                               f.mps.pinned_device_mem_limit.empty() ? "(unset)" : f.mps.pinned_device_mem_limit);
    return finding(1, "mps", CheckStatus::kPass, "L1_MPS_ACTIVE",
                   "an MPS control daemon runs (" + f.mps.pipe_dir + "/control): CUDA work goes through MPS", ev);
  }
  return pass(1, "mps", "no MPS control daemon (" + f.mps.pipe_dir + "/control absent)", ev);
}
}  // namespace

std::vector<CheckResult> evaluate_layer1(const Layer1Facts& facts) {
  std::vector<CheckResult> out;
  out.push_back(check_cuda_visible_devices(facts));
  out.push_back(check_container_env(facts));
  out.push_back(check_libcuda(facts));
  out.push_back(check_device_nodes(facts));
  out.push_back(check_cuinit(facts));
  out.push_back(check_devices(facts));
  out.push_back(check_nvml(facts));
  out.push_back(check_mig(facts));
  out.push_back(check_mps(facts));
  return out;
}

Layer1Facts probe_layer1() {
  Layer1Facts f;
  f.env = read_visibility_env();
  f.nodes = probe_device_nodes();
  f.nvml = probe_nvml();  // before cuInit: NVML counts every GPU regardless of CUDA_VISIBLE_DEVICES
  f.driver = probe_driver();
  f.mps = probe_mps();
  return f;
}

}  // namespace steadyocr::doctor

// Facts the doctor gathers from the machine. Probing (dlopen, driver calls, files) is kept apart from
// judging (the evaluate_* functions of each layer), so the judgement is tested on synthetic facts.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace steadyocr::doctor {

struct EnvVar {
  bool set = false;
  std::string value;
};

struct VisibilityEnv {
  EnvVar cuda_visible_devices;
  EnvVar nvidia_visible_devices;
  EnvVar nvidia_driver_capabilities;
  EnvVar ld_library_path;
};
VisibilityEnv read_visibility_env();

struct DeviceNodes {
  bool nvidiactl = false;
  std::vector<std::string> gpus;       // /dev/nvidia0, /dev/nvidia1, ...
  bool uvm = false;                    // /dev/nvidia-uvm
  bool dxg = false;                    // /dev/dxg (WSL2: the GPU comes through DirectX, no /dev/nvidia*)
  std::vector<std::string> no_access;  // present but not open()-able read/write by this user
};
DeviceNodes probe_device_nodes(const std::string& dev_dir = "/dev");

struct DriverDevice {
  int index = 0;
  std::string name;
  std::string pci_bus_id;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (cuDeviceGetUuid), as NVML and nvidia-smi -L print it
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t total_bytes = 0;
  int ecc_enabled = -1;
};

struct DriverFacts {
  bool loaded = false;  // libcuda.so.1 dlopen succeeded
  std::string dlopen_error;
  std::string libcuda_path;                // as the loader found it
  std::string libcuda_realpath;            // symlinks resolved
  std::vector<std::string> libcuda_files;  // libcuda.so* files in the usual folders (where we looked)
  bool init_called = false;
  int init_result = -1;  // CUresult of cuInit(0)
  std::string init_name, init_message;
  int driver_cuda_version = 0;  // cuDriverGetVersion, e.g. 13000
  int device_count = -1;        // -1 when not asked
  int device_count_result = 0;
  std::vector<DriverDevice> devices;
  std::string driver_version;  // "580.159.03" from the libcuda file name, when it carries one
};
// Loads libcuda.so.1 (never linked), calls cuInit and lists the devices through the driver API.
DriverFacts probe_driver();
// "CUDA_ERROR_NO_DEVICE" for a CUresult, from a table (works when libcuda is a stub or absent).
const char* cu_result_name(int result);

struct NvmlDevice {
  std::string name, uuid;
  unsigned long long total_bytes = 0, used_bytes = 0;
  long long ecc_uncorrected_volatile = -1;  // -1 when not supported
  int mig_current = -1, mig_pending = -1;   // nvmlDeviceGetMigMode: 1 enabled, 0 disabled, -1 not supported
  int mig_instances = 0;                    // MIG devices (GPU instances x compute instances) present
  std::vector<std::string> mig_uuids;       // theirs ("MIG-..."), as CUDA_VISIBLE_DEVICES takes them
};

struct NvmlFacts {
  bool loaded = false;
  std::string dlopen_error, path;
  int init_result = -1;  // nvmlReturn_t
  std::string init_error;
  std::string driver_version;   // "580.159.03"
  int cuda_driver_version = 0;  // nvmlSystemGetCudaDriverVersion_v2
  int device_count = -1;
  std::vector<NvmlDevice> devices;
};
NvmlFacts probe_nvml();

// The CUDA Multi-Process Service: its control daemon's pipe directory ($CUDA_MPS_PIPE_DIRECTORY, default
// /tmp/nvidia-mps) holds the socket `control` while a daemon runs; a CUDA client then runs its contexts through it.
struct MpsFacts {
  std::string pipe_dir;
  bool pipe_dir_from_env = false;
  bool control_socket = false;           // <pipe_dir>/control exists and is a socket
  std::string active_thread_percentage;  // $CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, empty when unset
  std::string pinned_device_mem_limit;   // $CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, empty when unset
};
MpsFacts probe_mps();

struct Layer1Facts {
  VisibilityEnv env;
  DeviceNodes nodes;
  DriverFacts driver;
  NvmlFacts nvml;
  MpsFacts mps;
};

// What CUDA makes of a CUDA_VISIBLE_DEVICES value: CUDA reads entries up to the first invalid one.
struct VisibleDevicesVerdict {
  bool hides_all = false;
  int usable_entries = 0;
  std::string problem;  // why entries are dropped; empty when none are
};
// physical_count: GPUs the machine has (NVML), -1 when unknown.
VisibleDevicesVerdict parse_cuda_visible_devices(const std::string& value, int physical_count);

nlohmann::json to_json(const DriverFacts& f);
nlohmann::json to_json(const NvmlFacts& f);
nlohmann::json to_json(const DeviceNodes& n);
nlohmann::json to_json(const MpsFacts& m);

}  // namespace steadyocr::doctor

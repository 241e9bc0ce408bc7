// The Vulkan chain of `steadyocr doctor`: the plugin, the loader, an instance, the devices and, on each usable device,
// a compute queue, device memory and a small shader against the host. It runs in a child process under a deadline,
// apart from layers 1-4 (a machine without an NVIDIA driver still gets it), and its rows are warnings at most: Vulkan
// is a fallback rung, so its absence never changes the verdict or the exit status.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "doctor/device_checks.h"
#include "doctor/probes.h"
#include "doctor/report.h"

namespace steadyocr::doctor {

// The child's --internal-check name.
inline constexpr const char* kVulkanChainCheck = "vulkan_chain";

struct VulkanChainOptions {
  int timeout_ms = 60000;  // deadline of the chain's child process
  std::string executable;  // the steadyocr binary to re-run (empty: this process's own executable)
};

// Child side: the plugin's load status and its "chain" check, answered as evidence {"plugin": {...}, "chain": {...}}.
// Faults vulkan_hang and vulkan_crash (STEADYOCR_DOCTOR_FAULT) make it stop answering or die from SIGSEGV.
ChildCheckResult vulkan_chain_child();

// The chain's rows from the child's answer (pure; tested on synthetic answers): vulkan_plugin, vulkan_loader,
// vulkan_instance, vulkan_devices, then vulkan_queue, vulkan_memory, vulkan_shader per usable device. A failed step
// is a warning with the plugin's code; the steps after it are skipped (optional). Not annotated.
std::vector<CheckResult> vulkan_rows(const nlohmann::json& plugin, const nlohmann::json& chain);

// Which CUDA device of this process each usable Vulkan device is: the same PCI bus id, else the same UUID (CUDA's, or
// NVML's for a GPU that CUDA_VISIBLE_DEVICES hides). `usable` is the devices step's evidence "usable".
std::vector<VulkanDeviceLink> link_vulkan_devices(const nlohmann::json& usable, const DriverFacts& driver,
                                                  const NvmlFacts& nvml);
// "0000:19:00.0", "00000000:19:00.0" and "0000:19:00.0" in capitals name the same function; false when either does
// not parse.
bool same_pci_bus_id(const std::string& a, const std::string& b);
// "GPU-6d657361-..." (NVML, CUDA) and "6D657361-..." (Vulkan's deviceUUID) name the same GPU.
bool same_gpu_uuid(const std::string& a, const std::string& b);
// "Vulkan device 0 (NVIDIA H200) = CUDA device 0 (0000:19:00.0)".
std::string link_text(const VulkanDeviceLink& link);

// Runs the chain in a child process and builds the report's Vulkan section, annotated from the knowledge base; a
// child that hangs or crashes becomes L3_VULKAN_CHAIN_DIED.
VulkanReport run_vulkan_chain(const VulkanChainOptions& options, const Layer1Facts& l1);

}  // namespace steadyocr::doctor

// What the doctor found: one CheckResult per check, grouped by layer, with evidence and remediation.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace steadyocr::doctor {

// A check passed, passed with a warning, failed, or could not run (a prerequisite failed or a library
// is absent). "Skipped" never counts as failed, but a required check that was skipped means the layer
// was not verified.
enum class CheckStatus { kPass, kWarn, kFail, kSkipped };
enum class Severity { kInfo, kWarn, kFail };

const char* status_name(CheckStatus s);  // "pass" | "warn" | "fail" | "skipped"
const char* severity_name(Severity s);   // "info" | "warn" | "fail"
Severity severity_of(CheckStatus s);

constexpr int kLayerCount = 4;
const char* layer_name(int level);  // 1 "visibility", 2 "abi", 3 "kernels", 4 "streams"

struct CheckResult {
  int level = 1;
  std::string check;  // stable check id within the layer, e.g. "libcuda"
  CheckStatus status = CheckStatus::kPass;
  Severity severity = Severity::kInfo;
  std::string code;     // stable finding code (knowledge base key); empty for a plain pass
  std::string summary;  // one line with the values seen
  nlohmann::json evidence = nlohmann::json::object();
  std::string failure_class;  // knowledge base class ("no_driver", ...), filled from the knowledge base
  std::string fix;            // short remediation for the table
  std::string remediation;    // full remediation text, placeholders filled from the evidence
  bool required = true;       // a skipped required check leaves its layer unverified
};

// Builders that keep the call sites short; severity follows the status.
CheckResult pass(int level, std::string check, std::string summary, nlohmann::json evidence = nlohmann::json::object());
CheckResult finding(int level, std::string check, CheckStatus status, std::string code, std::string summary,
                    nlohmann::json evidence = nlohmann::json::object());
CheckResult skipped(int level, std::string check, std::string code, std::string reason,
                    nlohmann::json evidence = nlohmann::json::object());

enum class LayerStatus { kPass, kWarn, kFail, kIncomplete, kNotRun };
const char* layer_status_name(LayerStatus s);  // "pass" | "warn" | "fail" | "incomplete" | "not_run"

struct LayerResult {
  int level = 1;
  LayerStatus status = LayerStatus::kNotRun;
  std::string not_run_reason;  // why the layer did not run (an earlier layer failed, above --level)
  std::vector<CheckResult> checks;
};

// Derives the layer status from its checks: any fail -> fail; a required check skipped -> incomplete;
// any warn -> warn; otherwise pass.
LayerStatus summarize_layer(const std::vector<CheckResult>& checks);
bool layer_ok(LayerStatus s);  // pass or warn

// Which CUDA device a Vulkan device is (same PCI bus id, or same UUID), for the "Vulkan device 0 = CUDA device 0" line.
struct VulkanDeviceLink {
  int vulkan_device = 0;  // index among the usable Vulkan devices (the vulkan backend's device index)
  std::string name, type, uuid, pci_bus_id;
  int cuda_device = -1;    // -1: no CUDA device in this process is this one
  std::string matched_by;  // "pci_bus_id" | "uuid" | "" (no match)
  std::string cuda_name, cuda_pci_bus_id;
  int nvml_device = -1;  // an NVML GPU with this UUID that CUDA does not show (CUDA_VISIBLE_DEVICES), else -1
};

// The Vulkan chain: the stack the vulkan rung needs, checked apart from layers 1-4 and never part of the verdict or
// the exit status (its findings are warnings at most).
struct VulkanReport {
  bool ran = false;
  std::string not_run_reason;  // "--no-vulkan"
  std::vector<CheckResult> checks;
  std::vector<VulkanDeviceLink> devices;
  std::string summary;  // one line: usable or not, and which device the rung would use
};

struct DoctorReport {
  int requested_level = 4;
  int passed_level = 0;  // highest level L such that layers 1..L all passed (warnings allowed)
  bool ok = false;       // passed_level >= requested_level
  std::vector<LayerResult> layers;
  nlohmann::json environment = nlohmann::json::object();
  VulkanReport vulkan;
  std::string verdict;  // one sentence: what works, what broke, what runs instead
  double elapsed_ms = 0;
};

// Finishes a report: layer statuses, passed_level, ok and verdict.
void finalize(DoctorReport& report);
int exit_code(const DoctorReport& report);  // 0 when ok, 1 otherwise

}  // namespace steadyocr::doctor

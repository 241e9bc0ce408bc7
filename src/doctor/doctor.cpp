#include "doctor/doctor.h"

#include <chrono>

#include "doctor/environment.h"
#include "doctor/knowledge_base.h"
#include "doctor/vulkan_chain.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::doctor {

DoctorReport run_doctor(const DoctorOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  const KnowledgeBase& kb = KnowledgeBase::builtin();
  DoctorReport report;
  report.requested_level = options.level;

  Layer1Facts l1 = probe_layer1();
  // Layer-2 facts are gathered even when layer 1 fails: they belong in the environment report.
  Layer2Facts l2 = probe_layer2(l1.driver, /*query_runtime=*/l1.driver.init_result == 0);
  report.environment = environment_report(&l1, &l2);

  std::string stop_reason;
  for (int level = 1; level <= kLayerCount; ++level) {
    LayerResult layer;
    layer.level = level;
    if (level > options.level) {
      layer.not_run_reason = "above the requested --level " + std::to_string(options.level);
    } else if (!stop_reason.empty() && !(options.keep_going && level <= 2)) {
      layer.not_run_reason = stop_reason;
    } else {
      switch (level) {
        case 1:
          layer.checks = evaluate_layer1(l1);
          break;
        case 2:
          layer.checks = evaluate_layer2(l2);
          break;
        case 3:
          layer.checks = run_layer3(options.device);
          break;
        case 4:
          layer.checks = run_layer4(options.device);
          break;
      }
      for (auto& c : layer.checks) annotate(c, kb);
      layer.status = summarize_layer(layer.checks);
      if (!layer_ok(layer.status) && stop_reason.empty()) {
        stop_reason = "layer " + std::to_string(level) + " (" + layer_name(level) + ") " +
                      (layer.status == LayerStatus::kFail ? "failed" : "could not be verified");
      }
    }
    report.layers.push_back(std::move(layer));
  }
  // Independent of the layers: a machine without an NVIDIA driver may still have a usable Vulkan device.
  if (options.vulkan) {
    report.vulkan = run_vulkan_chain({options.device.check_timeout_ms, options.device.executable}, l1);
  } else {
    report.vulkan.not_run_reason = "turned off by --no-vulkan";
    report.vulkan.summary = "Vulkan chain not run (--no-vulkan)";
  }
  finalize(report);
  report.elapsed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

nlohmann::json environment_only() {
  Layer1Facts l1 = probe_layer1();
  Layer2Facts l2 = probe_layer2(l1.driver, /*query_runtime=*/l1.driver.init_result == 0);
  return environment_report(&l1, &l2);
}

namespace {
nlohmann::json check_json(const CheckResult& c) {
  return {{"level", c.level},
          {"layer", layer_name(c.level)},
          {"check", c.check},
          {"status", status_name(c.status)},
          {"severity", severity_name(c.severity)},
          {"code", c.code.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.code)},
          {"class", c.failure_class.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.failure_class)},
          {"summary", c.summary},
          {"evidence", c.evidence},
          {"fix", c.fix},
          {"remediation", c.remediation},
          {"required", c.required}};
}

// The Vulkan section: its own checks (layer "vulkan"), kept out of "layers", "counts" and "findings" so those keep
// meaning the GPU chain that decides the exit status.
nlohmann::json vulkan_json(const VulkanReport& v) {
  nlohmann::json checks = nlohmann::json::array(), findings = nlohmann::json::array();
  for (const auto& c : v.checks) {
    nlohmann::json cj = check_json(c);
    cj["layer"] = "vulkan";
    checks.push_back(cj);
    if (c.status != CheckStatus::kPass || !c.code.empty()) findings.push_back(cj);
  }
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : v.devices) {
    auto or_null = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
    devices.push_back({{"vulkan_device", d.vulkan_device},
                       {"name", d.name},
                       {"type", d.type},
                       {"uuid", d.uuid},
                       {"pci_bus_id", or_null(d.pci_bus_id)},
                       {"cuda_device", d.cuda_device >= 0 ? nlohmann::json(d.cuda_device) : nlohmann::json(nullptr)},
                       {"matched_by", or_null(d.matched_by)},
                       {"cuda_name", or_null(d.cuda_name)},
                       {"nvml_device", d.nvml_device >= 0 ? nlohmann::json(d.nvml_device) : nlohmann::json(nullptr)},
                       {"text", link_text(d)}});
  }
  const char* status = v.ran ? layer_status_name(summarize_layer(v.checks)) : "not_run";
  return {{"status", status},
          {"not_run_reason", v.not_run_reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(v.not_run_reason)},
          {"summary", v.summary},
          {"checks", checks},
          {"findings", findings},
          {"devices", devices}};
}
}  // namespace

nlohmann::json report_to_json(const DoctorReport& report) {
  nlohmann::json j;
  j["schema"] = "steadyocr-doctor";
  j["schema_version"] = kDoctorSchemaVersion;
  j["steadyocr_version"] = STEADYOCR_VERSION;
  j["knowledge_base_version"] = KnowledgeBase::builtin().schema_version();
  j["requested_level"] = report.requested_level;
  j["passed_level"] = report.passed_level;
  j["ok"] = report.ok;
  j["exit_code"] = exit_code(report);
  j["verdict"] = report.verdict;
  j["elapsed_ms"] = static_cast<int64_t>(report.elapsed_ms);
  nlohmann::json counts = {{"pass", 0}, {"warn", 0}, {"fail", 0}, {"skipped", 0}};
  nlohmann::json layers = nlohmann::json::array(), findings = nlohmann::json::array();
  for (const auto& layer : report.layers) {
    nlohmann::json lj = {{"level", layer.level},
                         {"name", layer_name(layer.level)},
                         {"status", layer_status_name(layer.status)},
                         {"not_run_reason", layer.not_run_reason.empty() ? nlohmann::json(nullptr)
                                                                         : nlohmann::json(layer.not_run_reason)}};
    nlohmann::json checks = nlohmann::json::array();
    for (const auto& c : layer.checks) {
      counts[status_name(c.status)] = counts[status_name(c.status)].get<int>() + 1;
      checks.push_back(check_json(c));
      if (c.status != CheckStatus::kPass || !c.code.empty()) findings.push_back(check_json(c));
    }
    lj["checks"] = checks;
    layers.push_back(lj);
  }
  j["counts"] = counts;
  j["layers"] = layers;
  j["findings"] = findings;
  j["vulkan"] = vulkan_json(report.vulkan);
  j["environment"] = report.environment;
  return j;
}

}  // namespace steadyocr::doctor

#include "doctor/vulkan_chain.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "doctor/child.h"
#include "doctor/knowledge_base.h"
#include "runtime/vulkan_plugin.h"

namespace steadyocr::doctor {

namespace {
using nlohmann::json;

constexpr const char* kPerDeviceSteps[] = {"queue", "memory", "shader"};

// The layer a step's codes belong to (the knowledge base's levels): devices 1, the software stack 2, device work 3.
int step_level(const std::string& step) {
  if (step == "devices") return 1;
  if (step == "plugin" || step == "loader" || step == "instance") return 2;
  return 3;
}

std::string text_of(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return "";
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

CheckResult not_reached(const std::string& step, const std::string& depends_on, json evidence = json::object()) {
  evidence["depends_on"] = depends_on;
  CheckResult r = skipped(step_level(step), "vulkan_" + step, "DOCTOR_PREREQUISITE_FAILED",
                          "not run: " + depends_on + " did not pass", std::move(evidence));
  r.required = false;
  return r;
}

// One line per usable device for the devices row: "#0 NVIDIA H200 (discrete GPU, Vulkan 1.3.289, 143771 MiB)".
std::string describe_devices(const json& usable) {
  std::string out;
  int i = 0;
  for (const auto& d : usable) {
    out += fmt::format("{}#{} {} ({}, Vulkan {}, {} MiB)", out.empty() ? "" : "; ", i++, text_of(d, "name"),
                       text_of(d, "type"), text_of(d, "api_version"), d.value("device_local_mib", int64_t{0}));
  }
  return out;
}

std::string step_summary(const std::string& step, const json& ev, int device) {
  const std::string who = fmt::format("#{} {}", device, text_of(ev, "device"));
  if (step == "loader") return "Vulkan loader " + text_of(ev, "path");
  if (step == "instance") return "instance created (the loader offers Vulkan " + text_of(ev, "instance_version") + ")";
  if (step == "queue")
    return fmt::format("{}: logical device with compute queue family {}", who, text_of(ev, "family"));
  if (step == "memory") {
    return fmt::format("{}: device memory and pipeline for the probe ({} bytes of plan)", who,
                       text_of(ev, "plan_bytes"));
  }
  if (step == "shader") {
    return fmt::format("{}: hard_swish on {} values matches the host (max |error| {:.3g})", who,
                       ev.value("values", int64_t{0}), ev.value("max_abs_error", 0.0));
  }
  return step;
}

// A passed devices step: the plain list, or the info code when every usable device is a CPU implementation.
CheckResult devices_row(const json& ev) {
  const json usable = ev.value("usable", json::array());
  const std::string listed =
      fmt::format("{} enumerated, {} usable: {}", ev.value("enumerated", 0), usable.size(), describe_devices(usable));
  json cpu = json::array();
  for (const auto& d : usable)
    if (text_of(d, "type") == "CPU") cpu.push_back(text_of(d, "name"));
  if (!usable.empty() && cpu.size() == usable.size()) {
    json e = ev;
    e["cpu_devices"] = cpu;
    return finding(1, "vulkan_devices", CheckStatus::kPass, "L1_VULKAN_CPU_DEVICE_ONLY",
                   listed + " (CPU implementation only: --backend auto leaves it off the ladder)", e);
  }
  return pass(1, "vulkan_devices", listed, ev);
}

CheckResult step_row(const json& s, int device) {
  const std::string step = text_of(s, "step");
  json ev = s.value("evidence", json::object());
  if (!ev.is_object()) ev = {{"value", ev}};
  ev["step"] = step;
  if (device >= 0) ev["vulkan_device"] = device;
  const std::string check = "vulkan_" + step;
  if (text_of(s, "status") == "pass") {
    if (step == "devices") return devices_row(ev);
    return pass(step_level(step), check, step_summary(step, ev, device), ev);
  }
  std::string code = text_of(s, "code");
  if (code.empty()) code = step_level(step) == 3 ? "L3_VULKAN_DEVICE_FAILED" : "L2_VULKAN_NO_DRIVER";
  const std::string error = text_of(s, "error");
  ev["error"] = error;
  const std::string who = device >= 0 ? fmt::format("#{} {}: ", device, text_of(ev, "device")) : "";
  // Vulkan is a fallback rung: what fails here is a warning, never a failure of the doctor.
  return finding(step_level(step), check, CheckStatus::kWarn, code, who + (error.empty() ? code : error), ev);
}
}  // namespace

ChildCheckResult vulkan_chain_child() {
  // Faults that stand for a driver that hangs or crashes inside the chain: the parent's watchdog must cope.
  if (fault_injected("vulkan_hang")) ::pause();
  if (fault_injected("vulkan_crash")) {
    struct rlimit no_core = {0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::raise(SIGSEGV);
  }
  const runtime::VulkanPluginStatus& st = runtime::vulkan_plugin_status();
  json plugin = {{"loaded", st.loaded},
                 {"path", st.path},
                 {"tried", st.tried},
                 {"error", st.error},
                 {"finding", st.finding},
                 {"shader_compiler", st.shader_compiler},
                 {"usable_devices", st.devices.size()}};
  const std::string text = runtime::run_vulkan_check("chain");
  json chain = json::parse(text, nullptr, false);
  if (chain.is_discarded() || !chain.is_object()) {
    chain = {{"status", "could_not_run"}, {"error", "the plugin's chain check gave no JSON: " + text.substr(0, 300)}};
  }
  return make_child_result("pass", "", "vulkan chain", {{"plugin", plugin}, {"chain", chain}});
}

std::vector<CheckResult> vulkan_rows(const json& plugin, const json& chain) {
  std::vector<CheckResult> rows;
  if (!plugin.value("loaded", false)) {
    json ev = {{"error", text_of(plugin, "error")},
               {"tried", plugin.value("tried", json::array())},
               {"path", text_of(plugin, "path")}};
    rows.push_back(
        finding(2, "vulkan_plugin", CheckStatus::kWarn, "L2_VULKAN_PLUGIN_MISSING",
                text_of(plugin, "error").empty() ? "the Vulkan plugin is not loaded" : text_of(plugin, "error"), ev));
    for (const char* step : {"loader", "instance", "devices", "queue", "memory", "shader"})
      rows.push_back(not_reached(step, "vulkan_plugin"));
    return rows;
  }
  const std::string compiler = text_of(plugin, "shader_compiler");
  rows.push_back(pass(2, "vulkan_plugin", fmt::format("{} (shaders compiled by {})", text_of(plugin, "path"), compiler),
                      {{"path", text_of(plugin, "path")}, {"shader_compiler", compiler}}));
  const json steps = chain.value("steps", json::array());
  if (text_of(chain, "status") == "could_not_run" || !steps.is_array() || steps.empty()) {
    const std::string why = text_of(chain, "error").empty() ? "no steps reported" : text_of(chain, "error");
    CheckResult r = skipped(3, "vulkan_chain", "DOCTOR_CHECK_FAILED_TO_RUN", "the Vulkan chain could not run: " + why,
                            {{"error", why}, {"chain", chain}});
    rows.push_back(std::move(r));
    return rows;
  }
  // The plugin stops at the first failing global step, then walks the usable devices, each from its queue on,
  // moving to the next device at its first failure; the rows follow that order.
  std::string blocked;  // the global step that failed (or that the plugin did not report)
  size_t k = 0;
  for (const std::string step : {"loader", "instance", "devices"}) {
    const bool reported = k < steps.size() && text_of(steps[k], "step") == step;
    if (!blocked.empty() || !reported) {
      if (blocked.empty()) blocked = "the plugin's report of vulkan_" + step;
      rows.push_back(not_reached(step, blocked));
      continue;
    }
    rows.push_back(step_row(steps[k++], -1));
    if (rows.back().status != CheckStatus::kPass) blocked = "vulkan_" + step;
  }
  if (!blocked.empty()) {
    for (const char* step : kPerDeviceSteps) rows.push_back(not_reached(step, blocked));
    return rows;
  }
  int device = -1;
  size_t next = 3;  // index in kPerDeviceSteps of the step the current device reports next (3: none open)
  // The device's steps from `from` on did not run because `depends_on` did not pass.
  auto skip_rest = [&](size_t from, const std::string& depends_on) {
    for (size_t j = from; j < 3; ++j)
      rows.push_back(not_reached(kPerDeviceSteps[j], depends_on, {{"vulkan_device", device}}));
    next = 3;
  };
  for (; k < steps.size(); ++k) {
    const std::string step = text_of(steps[k], "step");
    if (step == "queue") {
      if (next < 3) skip_rest(next, "the plugin's report of vulkan_" + std::string(kPerDeviceSteps[next]));
      ++device;
      next = 0;
    }
    rows.push_back(step_row(steps[k], device));
    if (next >= 3 || step != kPerDeviceSteps[next]) continue;  // a step this doctor does not know: shown as it came
    if (rows.back().status == CheckStatus::kPass) {
      ++next;
    } else {
      skip_rest(next + 1, "vulkan_" + step);
    }
  }
  if (next < 3) skip_rest(next, "the plugin's report of vulkan_" + std::string(kPerDeviceSteps[next]));
  return rows;
}

bool same_pci_bus_id(const std::string& a, const std::string& b) {
  // domain:bus:device.function, each in hex; anything else (a "0x", a suffix) does not parse.
  auto parse = [](const std::string& s, unsigned v[4]) {
    if (s.empty() || s.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos) return false;
    int used = 0;
    return std::sscanf(s.c_str(), "%x:%x:%x.%x%n", &v[0], &v[1], &v[2], &v[3], &used) == 4 &&
           used == static_cast<int>(s.size());
  };
  unsigned x[4], y[4];
  if (!parse(a, x) || !parse(b, y)) return false;
  return std::equal(x, x + 4, y);
}

bool same_gpu_uuid(const std::string& a, const std::string& b) {
  auto norm = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s.rfind("gpu-", 0) == 0) s = s.substr(4);
    return s;
  };
  const std::string x = norm(a), y = norm(b);
  return !x.empty() && x == y;
}

std::vector<VulkanDeviceLink> link_vulkan_devices(const json& usable, const DriverFacts& driver,
                                                  const NvmlFacts& nvml) {
  std::vector<VulkanDeviceLink> links;
  if (!usable.is_array()) return links;
  for (const auto& d : usable) {
    VulkanDeviceLink l;
    l.vulkan_device = static_cast<int>(links.size());
    l.name = text_of(d, "name");
    l.type = text_of(d, "type");
    l.uuid = text_of(d, "uuid");
    l.pci_bus_id = text_of(d, "pci_bus_id");
    auto take = [&](const DriverDevice& c, const char* by) {
      l.cuda_device = c.index;
      l.matched_by = by;
      l.cuda_name = c.name;
      l.cuda_pci_bus_id = c.pci_bus_id;
    };
    for (const auto& c : driver.devices) {
      if (same_pci_bus_id(l.pci_bus_id, c.pci_bus_id)) {
        take(c, "pci_bus_id");
        break;
      }
    }
    for (size_t i = 0; l.cuda_device < 0 && i < driver.devices.size(); ++i)
      if (same_gpu_uuid(l.uuid, driver.devices[i].uuid)) take(driver.devices[i], "uuid");
    for (size_t i = 0; l.cuda_device < 0 && l.nvml_device < 0 && i < nvml.devices.size(); ++i)
      if (same_gpu_uuid(l.uuid, nvml.devices[i].uuid)) l.nvml_device = static_cast<int>(i);
    links.push_back(std::move(l));
  }
  return links;
}

std::string link_text(const VulkanDeviceLink& l) {
  const std::string head = fmt::format("Vulkan device {} ({}) = ", l.vulkan_device, l.name);
  if (l.cuda_device >= 0) {
    const std::string& bus = l.cuda_pci_bus_id.empty() ? l.pci_bus_id : l.cuda_pci_bus_id;
    return head + fmt::format("CUDA device {} ({})", l.cuda_device, bus.empty() ? "UUID " + l.uuid : bus);
  }
  if (l.nvml_device >= 0) {
    return head + fmt::format("NVML GPU {} (UUID {}), not visible to CUDA in this process (CUDA_VISIBLE_DEVICES)",
                              l.nvml_device, l.uuid);
  }
  if (l.type == "CPU") return head + "no CUDA device (a CPU implementation)";
  return head + fmt::format("no CUDA device (none with PCI bus id {} or UUID {})",
                            l.pci_bus_id.empty() ? "(not reported)" : l.pci_bus_id, l.uuid);
}

namespace {
// The section's one line: whether the vulkan rung can run, and on what.
std::string vulkan_summary(const VulkanReport& v) {
  std::vector<int> working;
  for (const auto& c : v.checks)
    if (c.check == "vulkan_shader" && c.status == CheckStatus::kPass)
      working.push_back(c.evidence.value("vulkan_device", -1));
  if (working.empty()) {
    for (const auto& c : v.checks) {
      if (c.status == CheckStatus::kWarn || (c.status == CheckStatus::kSkipped && c.required)) {
        return fmt::format(
            "Vulkan not usable ({}: {}); the vulkan rung is off, the CUDA and CPU rungs are not affected", c.code,
            c.summary);
      }
    }
    return "Vulkan not usable: no device passed the self-test";
  }
  std::string on;
  bool gpu = false;
  for (int i : working) {
    if (i < 0 || i >= static_cast<int>(v.devices.size())) continue;
    const VulkanDeviceLink& l = v.devices[static_cast<size_t>(i)];
    gpu = gpu || l.type != "CPU";
    on += fmt::format("{}#{} {}{}", on.empty() ? "" : ", ", i, l.name,
                      l.cuda_device >= 0 ? fmt::format(" (CUDA device {})", l.cuda_device) : "");
  }
  std::string s = fmt::format("Vulkan works on {} of {} usable device(s): {}", working.size(), v.devices.size(), on);
  if (!gpu && !runtime::vulkan_cpu_devices_allowed())
    s += "; CPU implementation only, so --backend auto leaves it off the ladder (STEADYOCR_VULKAN_CPU_DEVICES=1)";
  return s;
}
}  // namespace

VulkanReport run_vulkan_chain(const VulkanChainOptions& o, const Layer1Facts& l1) {
  VulkanReport v;
  v.ran = true;
  const std::string exe = o.executable.empty() ? self_executable() : o.executable;
  ChildResult cr = run_child({exe, "doctor", "--internal-check", kVulkanChainCheck}, o.timeout_ms);
  json ev = {{"check", kVulkanChainCheck},
             {"deadline_ms", o.timeout_ms},
             {"stderr_tail", cr.err.empty() ? "(empty)" : tail(cr.err, 600)}};
  json answer = cr.started && !cr.timed_out && cr.signal == 0 ? json::parse(last_output_line(cr.out), nullptr, false)
                                                              : json(nullptr);
  if (!cr.started) {
    ev["error"] = cr.start_error;
    v.checks.push_back(skipped(3, "vulkan_chain", "DOCTOR_CHECK_FAILED_TO_RUN",
                               "could not start the Vulkan chain: " + cr.start_error, ev));
  } else if (cr.timed_out || cr.signal != 0) {
    ev["how"] = cr.timed_out ? fmt::format("did not finish within {} ms and was killed (SIGKILL to its process group)",
                                           o.timeout_ms)
                             : fmt::format("died from signal {} ({})", cr.signal, strsignal(cr.signal));
    if (!cr.timed_out) ev["signal"] = fmt::format("{} ({})", cr.signal, strsignal(cr.signal));
    v.checks.push_back(finding(3, "vulkan_chain", CheckStatus::kWarn, "L3_VULKAN_CHAIN_DIED",
                               "the Vulkan chain's process " + ev["how"].get<std::string>(), ev));
  } else if (answer.is_discarded() || !answer.is_object() || !answer.contains("evidence")) {
    ev["exit_code"] = cr.exit_code;
    ev["stdout_tail"] = tail(cr.out, 600);
    ev["error"] = fmt::format("exit code {}, no JSON result", cr.exit_code);
    v.checks.push_back(skipped(3, "vulkan_chain", "DOCTOR_CHECK_FAILED_TO_RUN",
                               fmt::format("the Vulkan chain gave no result (exit code {})", cr.exit_code), ev));
  } else {
    const json& e = answer["evidence"];
    v.checks = vulkan_rows(e.value("plugin", json::object()), e.value("chain", json::object()));
  }
  for (auto& c : v.checks) {
    if (c.check == "vulkan_devices" && c.evidence.contains("usable")) {
      v.devices = link_vulkan_devices(c.evidence["usable"], l1.driver, l1.nvml);
      for (size_t i = 0; i < v.devices.size() && i < c.evidence["usable"].size(); ++i) {
        const VulkanDeviceLink& l = v.devices[i];
        json& d = c.evidence["usable"][i];
        d["cuda_device"] = l.cuda_device >= 0 ? json(l.cuda_device) : json(nullptr);
        d["matched_by"] = l.matched_by.empty() ? json(nullptr) : json(l.matched_by);
      }
    }
    c.evidence["child_ms"] = static_cast<int64_t>(cr.elapsed_ms);
    if (c.status == CheckStatus::kFail) {  // never: the chain's rows are warnings at most
      c.status = CheckStatus::kWarn;
      c.severity = Severity::kWarn;
    }
    annotate(c, KnowledgeBase::builtin());
  }
  v.summary = vulkan_summary(v);
  return v;
}

}  // namespace steadyocr::doctor

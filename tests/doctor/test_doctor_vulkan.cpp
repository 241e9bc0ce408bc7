// The doctor's Vulkan chain: rows built from the plugin's chain report (synthetic answers), the mapping of Vulkan
// devices onto CUDA devices, the report's Vulkan section, and the built binary on this machine's Vulkan (Mesa's
// lavapipe), with the driver hidden, the plugin turned off, and a chain process that hangs or crashes.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "doctor/child.h"
#include "doctor/doctor.h"
#include "doctor/dynlib.h"
#include "doctor/vulkan_chain.h"

namespace steadyocr::doctor {
namespace {

using nlohmann::json;

// ---- rows and mapping on synthetic answers

json device_json(const std::string& name, const std::string& type, const std::string& uuid, const std::string& pci) {
  return {{"name", name},        {"type", type},         {"api_version", "1.3.289"},   {"driver", "NVIDIA 580.95.05"},
          {"uuid", uuid},        {"pci_bus_id", pci},    {"device_local_mib", 143771}, {"compute_queue_family", 2},
          {"shader_fp16", true}, {"storage_fp16", true}, {"subgroup_size", 32}};
}

json step(const std::string& name, bool ok, json evidence, const std::string& code = "",
          const std::string& error = "") {
  json s = {{"step", name}, {"status", ok ? "pass" : "fail"}, {"evidence", std::move(evidence)}};
  if (!ok) {
    s["code"] = code;
    s["error"] = error;
  }
  return s;
}

json loaded_plugin() {
  return {{"loaded", true},
          {"path", "/opt/steadyocr/bin/libsteadyocr_vulkan.so"},
          {"tried", json::array()},
          {"error", ""},
          {"shader_compiler", "shaderc 2023.2"}};
}

json global_steps(const json& usable) {
  return json::array({step("loader", true, {{"path", "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"}}),
                      step("instance", true, {{"instance_version", "1.3.239"}}),
                      step("devices", true, {{"enumerated", usable.size()}, {"usable", usable}})});
}

const CheckResult* row(const std::vector<CheckResult>& rows, const std::string& check, int device = -1) {
  for (const auto& r : rows) {
    if (r.check != check) continue;
    if (device < 0 || r.evidence.value("vulkan_device", -1) == device) return &r;
  }
  return nullptr;
}

TEST(DoctorVulkan, PassingChainGivesOneRowPerStepAndDevice) {
  json usable =
      json::array({device_json("NVIDIA H200", "discrete GPU", "aabbccdd-0011-2233-4455-66778899aabb", "0000:19:00.0"),
                   device_json("llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", "6d657361-3232-2e33-2e36-000000000000", "")});
  json steps = global_steps(usable);
  for (const char* name : {"NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)"}) {
    steps.push_back(step("queue", true, {{"device", name}, {"family", 2}}));
    steps.push_back(step("memory", true, {{"device", name}, {"plan_bytes", 65792}}));
    steps.push_back(step("shader", true, {{"device", name}, {"max_abs_error", 2.4e-7}, {"values", 4096}}));
  }
  std::vector<CheckResult> rows = vulkan_rows(loaded_plugin(), {{"status", "pass"}, {"steps", steps}});
  std::vector<std::string> names;
  for (const auto& r : rows) names.push_back(r.check);
  EXPECT_EQ(names, (std::vector<std::string>{"vulkan_plugin", "vulkan_loader", "vulkan_instance", "vulkan_devices",
                                             "vulkan_queue", "vulkan_memory", "vulkan_shader", "vulkan_queue",
                                             "vulkan_memory", "vulkan_shader"}));
  for (const auto& r : rows) EXPECT_EQ(r.status, CheckStatus::kPass) << r.check << ": " << r.summary;
  // A GPU among the devices: no CPU-only note.
  EXPECT_EQ(row(rows, "vulkan_devices")->code, "");
  EXPECT_EQ(row(rows, "vulkan_devices")->level, 1);
  EXPECT_EQ(row(rows, "vulkan_loader")->level, 2);
  const CheckResult* shader1 = row(rows, "vulkan_shader", 1);
  ASSERT_NE(shader1, nullptr);
  EXPECT_EQ(shader1->level, 3);
  EXPECT_EQ(shader1->summary,
            "#1 llvmpipe (LLVM 15.0.6, 256 bits): hard_swish on 4096 values matches the host (max |error| 2.4e-07)");
  EXPECT_DOUBLE_EQ(shader1->evidence["max_abs_error"].get<double>(), 2.4e-7);
}

TEST(DoctorVulkan, CpuImplementationOnlyIsAnInfoCode) {
  json usable = json::array({device_json("llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", "6d657361", "")});
  std::vector<CheckResult> rows = vulkan_rows(loaded_plugin(), {{"status", "pass"}, {"steps", global_steps(usable)}});
  const CheckResult* d = row(rows, "vulkan_devices");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->status, CheckStatus::kPass);
  EXPECT_EQ(d->severity, Severity::kInfo);
  EXPECT_EQ(d->code, "L1_VULKAN_CPU_DEVICE_ONLY");
  EXPECT_EQ(d->evidence["cpu_devices"], json::array({"llvmpipe (LLVM 15.0.6, 256 bits)"}));
}

TEST(DoctorVulkan, FailedGlobalStepIsAWarningAndTheRestIsSkipped) {
  json chain = {{"status", "fail"},
                {"code", "L2_VULKAN_NO_DRIVER"},
                {"steps", json::array({step("loader", true, {{"path", "/lib/libvulkan.so.1"}}),
                                       step("instance", false, {{"instance_version", "1.3.239"}}, "L2_VULKAN_NO_DRIVER",
                                            "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER")})}};
  std::vector<CheckResult> rows = vulkan_rows(loaded_plugin(), chain);
  ASSERT_EQ(rows.size(), 7u);
  const CheckResult* inst = row(rows, "vulkan_instance");
  EXPECT_EQ(inst->status, CheckStatus::kWarn);
  EXPECT_EQ(inst->severity, Severity::kWarn);
  EXPECT_EQ(inst->code, "L2_VULKAN_NO_DRIVER");
  EXPECT_EQ(inst->evidence["error"], "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER");
  for (const char* later : {"vulkan_devices", "vulkan_queue", "vulkan_memory", "vulkan_shader"}) {
    const CheckResult* r = row(rows, later);
    ASSERT_NE(r, nullptr) << later;
    EXPECT_EQ(r->status, CheckStatus::kSkipped) << later;
    EXPECT_EQ(r->code, "DOCTOR_PREREQUISITE_FAILED") << later;
    EXPECT_FALSE(r->required) << later;
    EXPECT_EQ(r->evidence["depends_on"], "vulkan_instance") << later;
  }
  for (const auto& r : rows) EXPECT_NE(r.status, CheckStatus::kFail) << r.check;
}

TEST(DoctorVulkan, DeviceFailureSkipsThatDeviceOnly) {
  json usable =
      json::array({device_json("GPU A", "discrete GPU", "a", ""), device_json("GPU B", "discrete GPU", "b", "")});
  json steps = global_steps(usable);
  steps.push_back(step("queue", true, {{"device", "GPU A"}, {"family", 0}}));
  steps.push_back(step("memory", false, {{"device", "GPU A"}}, "L3_VULKAN_DEVICE_LOST", "VK_ERROR_DEVICE_LOST"));
  steps.push_back(step("queue", true, {{"device", "GPU B"}, {"family", 0}}));
  steps.push_back(step("memory", true, {{"device", "GPU B"}, {"plan_bytes", 1}}));
  steps.push_back(step("shader", true, {{"device", "GPU B"}, {"max_abs_error", 0.0}, {"values", 4096}}));
  std::vector<CheckResult> rows = vulkan_rows(loaded_plugin(), {{"status", "fail"}, {"steps", steps}});
  EXPECT_EQ(rows.size(), 10u);  // plugin, loader, instance, devices, then three rows for each of the two devices
  const CheckResult* mem0 = row(rows, "vulkan_memory", 0);
  ASSERT_NE(mem0, nullptr);
  EXPECT_EQ(mem0->status, CheckStatus::kWarn);
  EXPECT_EQ(mem0->code, "L3_VULKAN_DEVICE_LOST");
  EXPECT_EQ(mem0->summary, "#0 GPU A: VK_ERROR_DEVICE_LOST");
  const CheckResult* shader0 = row(rows, "vulkan_shader", 0);
  ASSERT_NE(shader0, nullptr);
  EXPECT_EQ(shader0->status, CheckStatus::kSkipped);
  EXPECT_EQ(shader0->evidence["depends_on"], "vulkan_memory");
  const CheckResult* shader1 = row(rows, "vulkan_shader", 1);
  ASSERT_NE(shader1, nullptr);
  EXPECT_EQ(shader1->status, CheckStatus::kPass);
}

TEST(DoctorVulkan, PluginNotLoadedIsAWarning) {
  json plugin = {{"loaded", false},
                 {"error", "the Vulkan plugin is disabled by STEADYOCR_DISABLE_VULKAN=1"},
                 {"tried", json::array()}};
  std::vector<CheckResult> rows = vulkan_rows(plugin, {{"status", "could_not_run"}});
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].check, "vulkan_plugin");
  EXPECT_EQ(rows[0].status, CheckStatus::kWarn);
  EXPECT_EQ(rows[0].code, "L2_VULKAN_PLUGIN_MISSING");
  EXPECT_EQ(rows[0].summary, "the Vulkan plugin is disabled by STEADYOCR_DISABLE_VULKAN=1");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].code, "DOCTOR_PREREQUISITE_FAILED") << rows[i].check;
}

TEST(DoctorVulkan, PciBusIdsAndUuidsCompareByValue) {
  EXPECT_TRUE(same_pci_bus_id("0000:19:00.0", "00000000:19:00.0"));
  EXPECT_TRUE(same_pci_bus_id("0000:3b:00.0", "0000:3B:00.0"));
  EXPECT_FALSE(same_pci_bus_id("0000:19:00.0", "0000:1a:00.0"));
  EXPECT_FALSE(same_pci_bus_id("", ""));
  EXPECT_FALSE(same_pci_bus_id("0000:19:00.0x", "0000:19:00.0"));
  EXPECT_FALSE(same_pci_bus_id("0000:19:00.0 ", "0000:19:00.0"));
  EXPECT_FALSE(same_pci_bus_id("0000:19:00", "0000:19:00.0"));
  EXPECT_TRUE(same_gpu_uuid("GPU-6d657361-3232-2e33-2e36-000000000000", "6D657361-3232-2E33-2E36-000000000000"));
  EXPECT_FALSE(same_gpu_uuid("GPU-6d657361-3232-2e33-2e36-000000000000", "6d657361-3232-2e33-2e36-000000000001"));
  EXPECT_FALSE(same_gpu_uuid("", "GPU-"));
}

TEST(DoctorVulkan, VulkanDevicesMapOntoCudaDevices) {
  DriverFacts driver;
  DriverDevice d0, d1;
  d0.index = 0;
  d0.name = "NVIDIA H200";
  d0.pci_bus_id = "0000:19:00.0";
  d0.uuid = "GPU-11111111-2222-3333-4444-555555555555";
  d1.index = 1;
  d1.name = "NVIDIA H200";
  d1.pci_bus_id = "0000:3B:00.0";
  d1.uuid = "GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee";
  driver.devices = {d0, d1};
  NvmlFacts nvml;
  NvmlDevice hidden;
  hidden.uuid = "GPU-99999999-8888-7777-6666-555555555555";
  nvml.devices = {NvmlDevice{}, NvmlDevice{}, hidden};
  json usable = json::array({
      device_json("NVIDIA H200", "discrete GPU", "00000000-0000-0000-0000-000000000000", "0000:3b:00.0"),  // by bus
      device_json("NVIDIA H200", "discrete GPU", "11111111-2222-3333-4444-555555555555", ""),              // by UUID
      device_json("NVIDIA H200", "discrete GPU", "99999999-8888-7777-6666-555555555555", ""),  // NVML, not CUDA
      device_json("llvmpipe (LLVM 15.0.6, 256 bits)", "CPU", "6d657361-3232-2e33-2e36-000000000000", ""),
  });
  std::vector<VulkanDeviceLink> links = link_vulkan_devices(usable, driver, nvml);
  ASSERT_EQ(links.size(), 4u);
  EXPECT_EQ(links[0].cuda_device, 1);
  EXPECT_EQ(links[0].matched_by, "pci_bus_id");
  EXPECT_EQ(link_text(links[0]), "Vulkan device 0 (NVIDIA H200) = CUDA device 1 (0000:3B:00.0)");
  EXPECT_EQ(links[1].cuda_device, 0);
  EXPECT_EQ(links[1].matched_by, "uuid");
  EXPECT_EQ(link_text(links[1]), "Vulkan device 1 (NVIDIA H200) = CUDA device 0 (0000:19:00.0)");
  EXPECT_EQ(links[2].cuda_device, -1);
  EXPECT_EQ(links[2].nvml_device, 2);
  EXPECT_NE(link_text(links[2]).find("NVML GPU 2"), std::string::npos) << link_text(links[2]);
  EXPECT_EQ(links[3].cuda_device, -1);
  EXPECT_EQ(links[3].nvml_device, -1);
  EXPECT_EQ(link_text(links[3]),
            "Vulkan device 3 (llvmpipe (LLVM 15.0.6, 256 bits)) = no CUDA device (a CPU implementation)");
}

TEST(DoctorVulkan, WarningsNeverChangeTheVerdictOrExitStatus) {
  DoctorReport r;
  r.requested_level = 1;
  r.layers = {LayerResult{1, LayerStatus::kPass, "", {pass(1, "libcuda", "ok")}}};
  r.vulkan.ran = true;
  r.vulkan.checks = {finding(2, "vulkan_instance", CheckStatus::kWarn, "L2_VULKAN_NO_DRIVER", "no ICD")};
  r.vulkan.summary = "Vulkan not usable";
  finalize(r);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(exit_code(r), 0);
  EXPECT_EQ(r.verdict, "GPU checks passed up to level 1 (visibility)");
  json j = report_to_json(r);
  EXPECT_EQ(j["exit_code"], 0);
  EXPECT_EQ(j["counts"]["warn"], 0);
  EXPECT_TRUE(j["findings"].empty());
  EXPECT_EQ(j["vulkan"]["status"], "warn");
  ASSERT_EQ(j["vulkan"]["findings"].size(), 1u);
  EXPECT_EQ(j["vulkan"]["findings"][0]["code"], "L2_VULKAN_NO_DRIVER");
  EXPECT_EQ(j["vulkan"]["checks"][0]["layer"], "vulkan");
  std::string text = render_report_text(r);
  EXPECT_NE(text.find("vulkan        vulkan_instance      WARN    L2_VULKAN_NO_DRIVER"), std::string::npos) << text;
  EXPECT_NE(text.find("[WARN] L2_VULKAN_NO_DRIVER  (vulkan, check vulkan_instance)"), std::string::npos) << text;
  EXPECT_NE(text.find("Exit status 0"), std::string::npos);
}

// ---- the built binary on this machine

std::string binary() {
  if (const char* e = std::getenv("STEADYOCR_DOCTOR_BINARY")) return e;
  return std::string(STEADYOCR_BINARY_DIR) + "/steadyocr";
}

std::string plugin_path() {
  return std::filesystem::path(binary()).parent_path().string() + "/libsteadyocr_vulkan.so";
}

struct VulkanRun {
  ChildResult child;
  json report;
  const json& vulkan() const { return report["vulkan"]; }
};

VulkanRun doctor(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {}) {
  std::vector<std::string> argv = {binary(), "doctor", "--json", "--level", "1"};
  argv.insert(argv.end(), args.begin(), args.end());
  VulkanRun r;
  r.child = run_child(argv, 120000, env);
  r.report = json::parse(r.child.out, nullptr, false);
  return r;
}

const json* vulkan_check(const VulkanRun& r, const std::string& check) {
  for (const auto& c : r.vulkan()["checks"])
    if (c["check"] == check) return &c;
  return nullptr;
}

#define REQUIRE_BINARY()                                                                    \
  do {                                                                                      \
    if (!path_exists(binary())) GTEST_SKIP() << binary() << " not built (ninja steadyocr)"; \
  } while (0)
#define REQUIRE_VULKAN_PLUGIN()                                                                          \
  do {                                                                                                   \
    REQUIRE_BINARY();                                                                                    \
    if (!path_exists(plugin_path()))                                                                     \
      GTEST_SKIP() << "the Vulkan plugin is not built (" << plugin_path()                                \
                   << " missing: install libvulkan-dev and glslc, reconfigure, ninja steadyocr_vulkan)"; \
  } while (0)

bool have_lavapipe() {
  for (const char* dir : {"/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec))
      if (e.path().filename().string().rfind("lvp_icd", 0) == 0) return true;
  }
  return false;
}

TEST(DoctorCliVulkan, LavapipePassesAsACpuDevice) {
  REQUIRE_VULKAN_PLUGIN();
  if (!have_lavapipe()) GTEST_SKIP() << "Mesa's lavapipe is not installed (apt-get install mesa-vulkan-drivers)";
  VulkanRun r = doctor({});
  ASSERT_FALSE(r.report.is_discarded()) << r.child.out << r.child.err;
  EXPECT_NE(r.vulkan()["status"], "not_run");
  for (const char* check : {"vulkan_plugin", "vulkan_loader", "vulkan_instance", "vulkan_devices", "vulkan_queue",
                            "vulkan_memory", "vulkan_shader"}) {
    const json* c = vulkan_check(r, check);
    ASSERT_NE(c, nullptr) << check << ": " << r.vulkan().dump(1);
    EXPECT_EQ((*c)["status"], "pass") << check << ": " << c->dump(1);
    EXPECT_EQ((*c)["layer"], "vulkan");
  }
  // The llvmpipe device, typed CPU, linked to no CUDA device.
  const json* devices = vulkan_check(r, "vulkan_devices");
  int lavapipe = -1;
  const json& usable = (*devices)["evidence"]["usable"];
  for (size_t i = 0; i < usable.size(); ++i) {
    if (usable[i]["name"].get<std::string>().rfind("llvmpipe", 0) != 0) continue;
    lavapipe = static_cast<int>(i);
    EXPECT_EQ(usable[i]["type"], "CPU");
    EXPECT_TRUE(usable[i]["cuda_device"].is_null());
    EXPECT_GE(usable[i]["compute_queue_family"].get<int>(), 0);
  }
  ASSERT_GE(lavapipe, 0) << devices->dump(1);
  if (usable.size() == 1) {  // only lavapipe here: the info code says --backend auto leaves it off the ladder
    EXPECT_EQ((*devices)["code"], "L1_VULKAN_CPU_DEVICE_ONLY");
    EXPECT_EQ((*devices)["severity"], "info");
    EXPECT_EQ((*devices)["class"], "vulkan");
  }
  const json& link = r.vulkan()["devices"][static_cast<size_t>(lavapipe)];
  EXPECT_EQ(link["type"], "CPU");
  EXPECT_TRUE(link["cuda_device"].is_null());
  EXPECT_NE(link["text"].get<std::string>().find("= no CUDA device (a CPU implementation)"), std::string::npos);
  // The shader step on that device: 4096 values within 1e-5 of the host.
  bool shader_seen = false;
  for (const auto& c : r.vulkan()["checks"]) {
    if (c["check"] != "vulkan_shader" || c["evidence"]["vulkan_device"] != lavapipe) continue;
    shader_seen = true;
    EXPECT_EQ(c["evidence"]["values"], 4096);
    ASSERT_TRUE(c["evidence"]["max_abs_error"].is_number()) << c.dump(1);
    EXPECT_GE(c["evidence"]["max_abs_error"].get<double>(), 0.0);
    EXPECT_LE(c["evidence"]["max_abs_error"].get<double>(), 1e-5);
  }
  EXPECT_TRUE(shader_seen) << r.vulkan().dump(1);
  // The Vulkan rows stay out of the layers' counts and findings.
  for (const auto& f : r.report["findings"])
    EXPECT_EQ(f["code"].get<std::string>().find("VULKAN"), std::string::npos) << f.dump();

  // The table: the Vulkan block with the mapping line.
  ChildResult text = run_child({binary(), "doctor", "--level", "1"}, 120000);
  EXPECT_NE(text.out.find("\nVulkan (the vulkan rung"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("vulkan        vulkan_plugin        PASS"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("  Vulkan device " + std::to_string(lavapipe) + " (llvmpipe"), std::string::npos) << text.out;
}

TEST(DoctorCliVulkan, NoVulkanDriverIsAWarningAndKeepsTheExitStatus) {
  REQUIRE_VULKAN_PLUGIN();
  VulkanRun base = doctor({});
  VulkanRun hidden = doctor({}, {{"VK_DRIVER_FILES", "/nonexistent.json"}, {"VK_ICD_FILENAMES", "/nonexistent.json"}});
  ASSERT_FALSE(base.report.is_discarded()) << base.child.out << base.child.err;
  ASSERT_FALSE(hidden.report.is_discarded()) << hidden.child.out << hidden.child.err;
  const json* inst = vulkan_check(hidden, "vulkan_instance");
  ASSERT_NE(inst, nullptr) << hidden.vulkan().dump(1);
  EXPECT_EQ((*inst)["code"], "L2_VULKAN_NO_DRIVER") << inst->dump(1);
  EXPECT_EQ((*inst)["status"], "warn");
  EXPECT_EQ((*inst)["severity"], "warn");
  EXPECT_EQ((*inst)["class"], "vulkan");
  EXPECT_NE((*inst)["evidence"]["error"].get<std::string>().find("VK_ERROR_INCOMPATIBLE_DRIVER"), std::string::npos);
  EXPECT_FALSE((*inst)["remediation"].get<std::string>().empty());
  EXPECT_EQ(hidden.vulkan()["status"], "warn");
  const json* devices = vulkan_check(hidden, "vulkan_devices");
  ASSERT_NE(devices, nullptr);
  EXPECT_EQ((*devices)["status"], "skipped");
  EXPECT_EQ((*devices)["required"], false);
  // The exit status and everything it follows are those of the run with Vulkan working.
  EXPECT_EQ(hidden.child.exit_code, base.child.exit_code);
  EXPECT_EQ(hidden.report["exit_code"], base.report["exit_code"]);
  EXPECT_EQ(hidden.report["ok"], base.report["ok"]);
  EXPECT_EQ(hidden.report["passed_level"], base.report["passed_level"]);
  EXPECT_EQ(hidden.report["verdict"], base.report["verdict"]);
  EXPECT_EQ(hidden.report["counts"], base.report["counts"]);
}

TEST(DoctorCliVulkan, DisabledPluginIsAWarning) {
  REQUIRE_BINARY();
  VulkanRun base = doctor({"--no-vulkan"});
  VulkanRun r = doctor({}, {{"STEADYOCR_DISABLE_VULKAN", "1"}});
  ASSERT_FALSE(r.report.is_discarded()) << r.child.out << r.child.err;
  const json* p = vulkan_check(r, "vulkan_plugin");
  ASSERT_NE(p, nullptr) << r.vulkan().dump(1);
  EXPECT_EQ((*p)["code"], "L2_VULKAN_PLUGIN_MISSING");
  EXPECT_EQ((*p)["status"], "warn");
  EXPECT_EQ((*p)["severity"], "warn");
  EXPECT_NE((*p)["evidence"]["error"].get<std::string>().find("STEADYOCR_DISABLE_VULKAN=1"), std::string::npos);
  const json* loader = vulkan_check(r, "vulkan_loader");
  ASSERT_NE(loader, nullptr);
  EXPECT_EQ((*loader)["code"], "DOCTOR_PREREQUISITE_FAILED");
  EXPECT_EQ(r.child.exit_code, base.child.exit_code);
  EXPECT_EQ(r.report["verdict"], base.report["verdict"]);
}

TEST(DoctorCliVulkan, HungOrCrashedChainBecomesAWarning) {
  REQUIRE_BINARY();
  VulkanRun base = doctor({"--no-vulkan"});
  VulkanRun hang = doctor({"--inject", "vulkan_hang", "--check-timeout-ms", "1000"});
  ASSERT_FALSE(hang.report.is_discarded()) << hang.child.out << hang.child.err;
  const json* h = vulkan_check(hang, "vulkan_chain");
  ASSERT_NE(h, nullptr) << hang.vulkan().dump(1);
  EXPECT_EQ((*h)["code"], "L3_VULKAN_CHAIN_DIED");
  EXPECT_EQ((*h)["status"], "warn");
  EXPECT_EQ((*h)["evidence"]["deadline_ms"], 1000);
  EXPECT_NE((*h)["evidence"]["how"].get<std::string>().find("did not finish within 1000 ms"), std::string::npos);
  EXPECT_EQ(hang.child.exit_code, base.child.exit_code);

  VulkanRun crash = doctor({"--inject", "vulkan_crash"});
  ASSERT_FALSE(crash.report.is_discarded()) << crash.child.out << crash.child.err;
  const json* c = vulkan_check(crash, "vulkan_chain");
  ASSERT_NE(c, nullptr) << crash.vulkan().dump(1);
  EXPECT_EQ((*c)["code"], "L3_VULKAN_CHAIN_DIED");
  EXPECT_EQ((*c)["status"], "warn");
  EXPECT_EQ((*c)["evidence"]["signal"].get<std::string>().rfind("11 (", 0), 0u) << c->dump(1);
  EXPECT_EQ(crash.child.exit_code, base.child.exit_code);
}

TEST(DoctorCliVulkan, NoVulkanSkipsTheChain) {
  REQUIRE_BINARY();
  VulkanRun r = doctor({"--no-vulkan"});
  ASSERT_FALSE(r.report.is_discarded()) << r.child.out << r.child.err;
  EXPECT_EQ(r.vulkan()["status"], "not_run");
  EXPECT_TRUE(r.vulkan()["checks"].empty());
  EXPECT_NE(r.vulkan()["not_run_reason"].get<std::string>().find("--no-vulkan"), std::string::npos);
  ChildResult text = run_child({binary(), "doctor", "--level", "1", "--no-vulkan"}, 120000);
  EXPECT_NE(text.out.find("vulkan        (turned off by --no-vulkan)"), std::string::npos) << text.out;
}

// On a GPU machine whose NVIDIA driver has its Vulkan ICD: the NVIDIA Vulkan device is CUDA device N.
TEST(DoctorCliVulkanGpu, NvidiaVulkanDeviceIsLinkedToItsCudaDevice) {
  REQUIRE_VULKAN_PLUGIN();
  if (!open_library("libcuda.so.1").ok()) GTEST_SKIP() << "no NVIDIA driver here";
  VulkanRun r = doctor({});
  ASSERT_FALSE(r.report.is_discarded()) << r.child.out << r.child.err;
  bool nvidia = false;
  for (const auto& d : r.vulkan()["devices"]) {
    if (d["name"].get<std::string>().find("NVIDIA") == std::string::npos) continue;
    nvidia = true;
    ASSERT_FALSE(d["cuda_device"].is_null()) << d.dump(1);
    EXPECT_NE(d["text"].get<std::string>().find("= CUDA device "), std::string::npos) << d["text"];
  }
  if (!nvidia) GTEST_SKIP() << "no NVIDIA Vulkan device (the driver's Vulkan ICD is not installed or mounted)";
}

}  // namespace
}  // namespace steadyocr::doctor

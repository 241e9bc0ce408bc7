// `steadyocr doctor` as a user runs it: the built binary in a child process with a modified environment,
// its --json output parsed. Failure classes are reproduced through the environment (hidden devices, the
// toolkit's stub libcuda) and, on a GPU machine, through the doctor's fault switch.
#include <gtest/gtest.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "doctor/child.h"
#include "doctor/dynlib.h"

namespace steadyocr::doctor {
namespace {

std::string binary() {
  if (const char* e = std::getenv("STEADYOCR_DOCTOR_BINARY")) return e;  // e.g. on the GPU machine
  return std::string(STEADYOCR_BINARY_DIR) + "/steadyocr";
}

struct DoctorRun {
  ChildResult child;
  nlohmann::json json;
};

DoctorRun doctor(std::vector<std::string> args, std::vector<std::pair<std::string, std::string>> env = {},
                 int timeout_ms = 120000) {
  std::vector<std::string> argv = {binary(), "doctor"};
  argv.insert(argv.end(), args.begin(), args.end());
  DoctorRun r;
  r.child = run_child(argv, timeout_ms, env);
  r.json = nlohmann::json::parse(r.child.out, nullptr, false);
  return r;
}

const nlohmann::json* find_code(const nlohmann::json& report, const std::string& code) {
  if (!report.contains("findings")) return nullptr;
  for (const auto& f : report["findings"])
    if (f["code"].is_string() && f["code"] == code) return &f;
  return nullptr;
}

// This machine has an NVIDIA driver (the GPU tests run; the no-driver tests do not apply).
bool have_driver() {
  return open_library("libcuda.so.1").ok();
}

#define REQUIRE_BINARY()                                                                    \
  do {                                                                                      \
    if (!path_exists(binary())) GTEST_SKIP() << binary() << " not built (ninja steadyocr)"; \
  } while (0)
#define REQUIRE_GPU()                                                                                  \
  do {                                                                                                 \
    if (!have_driver())                                                                                \
      GTEST_SKIP() << "no NVIDIA driver here (libcuda.so.1 not found): GPU doctor tests run on a GPU " \
                      "machine (scripts/device_doctor.sh)";                                            \
  } while (0)

TEST(DoctorCli, NoDriverIsNamedPreciselyAndExitsOne) {
  REQUIRE_BINARY();
  if (have_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  DoctorRun r = doctor({"--json", "--level", "1"});
  ASSERT_FALSE(r.json.is_discarded()) << r.child.out << r.child.err;
  EXPECT_EQ(r.child.exit_code, 1);
  EXPECT_EQ(r.json["schema"], "steadyocr-doctor");
  EXPECT_EQ(r.json["schema_version"], 1);
  EXPECT_EQ(r.json["ok"], false);
  EXPECT_EQ(r.json["passed_level"], 0);
  const nlohmann::json* f = find_code(r.json, "L1_NO_DRIVER");
  ASSERT_NE(f, nullptr) << r.child.out;
  EXPECT_EQ(f->at("status"), "fail");
  EXPECT_EQ(f->at("severity"), "fail");
  EXPECT_EQ(f->at("class"), "no_driver");
  EXPECT_NE(f->at("summary").get<std::string>().find("libcuda.so.1 not found"), std::string::npos);
  EXPECT_NE(f->at("evidence")["dlopen_error"].get<std::string>().find("libcuda.so.1"), std::string::npos);
  EXPECT_FALSE(f->at("remediation").get<std::string>().empty());
  // cuInit could not run: reported as skipped, not as failed.
  bool cuinit_skipped = false;
  for (const auto& c : r.json["layers"][0]["checks"])
    if (c["check"] == "cuinit") cuinit_skipped = c["status"] == "skipped";
  EXPECT_TRUE(cuinit_skipped);
  EXPECT_NE(r.json["verdict"].get<std::string>().find("L1_NO_DRIVER"), std::string::npos) << r.json["verdict"];
}

TEST(DoctorCli, LaterLayersDoNotRunAfterAFailure) {
  REQUIRE_BINARY();
  if (have_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  DoctorRun r = doctor({"--json"});
  ASSERT_FALSE(r.json.is_discarded());
  EXPECT_EQ(r.child.exit_code, 1);
  ASSERT_EQ(r.json["layers"].size(), 4u);
  EXPECT_EQ(r.json["layers"][0]["status"], "fail");
  for (int l = 1; l < 4; ++l) {
    EXPECT_EQ(r.json["layers"][l]["status"], "not_run");
    EXPECT_NE(r.json["layers"][l]["not_run_reason"].get<std::string>().find("layer 1"), std::string::npos);
  }
}

TEST(DoctorCli, HiddenDevicesViaEnvironment) {
  REQUIRE_BINARY();
  for (const char* value : {"", "-1"}) {
    DoctorRun r = doctor({"--json", "--level", "1"}, {{"CUDA_VISIBLE_DEVICES", value}});
    ASSERT_FALSE(r.json.is_discarded()) << r.child.err;
    EXPECT_EQ(r.child.exit_code, 1) << "CUDA_VISIBLE_DEVICES='" << value << "'";
    const nlohmann::json* f = find_code(r.json, "L1_DEVICES_HIDDEN");
    ASSERT_NE(f, nullptr) << "CUDA_VISIBLE_DEVICES='" << value << "': " << r.child.out;
    EXPECT_EQ(f->at("evidence")["value"], std::string("\"") + value + "\"");
  }
}

TEST(DoctorCli, ContainerWithoutGpuRequested) {
  REQUIRE_BINARY();
  DoctorRun r = doctor({"--json", "--level", "1"}, {{"NVIDIA_VISIBLE_DEVICES", "void"}});
  ASSERT_FALSE(r.json.is_discarded());
  const nlohmann::json* f = find_code(r.json, "L1_CONTAINER_NO_GPU_REQUESTED");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->at("status"), "warn");
  r = doctor({"--json", "--level", "1"}, {{"NVIDIA_DRIVER_CAPABILITIES", "utility"}});
  EXPECT_NE(find_code(r.json, "L1_DRIVER_CAPABILITIES_NO_COMPUTE"), nullptr);
}

TEST(DoctorCli, ToolkitStubLibcudaOnLdLibraryPath) {
  REQUIRE_BINARY();
  const std::string stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (!path_exists(stub)) GTEST_SKIP() << stub << " not present (no CUDA toolkit here)";
  std::string dir = ::testing::TempDir() + "/stub_libcuda_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/libcuda.so.1");
  std::filesystem::create_symlink(stub, dir + "/libcuda.so.1");
  const char* old = std::getenv("LD_LIBRARY_PATH");
  std::string ld = dir + (old && *old ? std::string(":") + old : "");
  DoctorRun r = doctor({"--json", "--level", "1"}, {{"LD_LIBRARY_PATH", ld}});
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r.json.is_discarded()) << r.child.out << r.child.err;
  EXPECT_EQ(r.child.exit_code, 1);
  const nlohmann::json* f = find_code(r.json, "L1_STUB_LIBCUDA");
  ASSERT_NE(f, nullptr) << r.child.out;
  EXPECT_EQ(f->at("class"), "stub_libcuda");
  EXPECT_NE(f->at("evidence")["libcuda_realpath"].get<std::string>().find("/stubs/"), std::string::npos);
  // The stub answers cuInit with CUDA_ERROR_STUB_LIBRARY (34); the doctor reports that too.
  bool cuinit_34 = false;
  for (const auto& c : r.json["layers"][0]["checks"])
    if (c["check"] == "cuinit" && c["evidence"].contains("cuinit_result"))
      cuinit_34 = c["evidence"]["cuinit_result"] == 34;
  EXPECT_TRUE(cuinit_34) << r.json["layers"][0].dump(1);
}

TEST(DoctorCli, UsageErrorsExitTwo) {
  REQUIRE_BINARY();
  EXPECT_EQ(doctor({"--level", "5"}).child.exit_code, 2);
  EXPECT_EQ(doctor({"--level", "0"}).child.exit_code, 2);
  EXPECT_EQ(doctor({"--models", "/nonexistent/steadyocr-models"}).child.exit_code, 2);
  EXPECT_EQ(doctor({"--no-such-flag"}).child.exit_code, 2);
}

TEST(DoctorCli, EnvironmentReport) {
  REQUIRE_BINARY();
  DoctorRun r = doctor({"--env", "--json"});
  ASSERT_FALSE(r.json.is_discarded()) << r.child.out;
  EXPECT_EQ(r.child.exit_code, 0);
  const auto& env = r.json["environment"];
  EXPECT_FALSE(env["os"]["glibc"].get<std::string>().empty());
  EXPECT_FALSE(env["os"]["kernel"].get<std::string>().empty());
  EXPECT_GE(env["cpu"]["logical_cores"].get<int>(), 1);
  EXPECT_TRUE(env.contains("cudnn"));
  EXPECT_TRUE(env.contains("cublas"));
  EXPECT_TRUE(env.contains("build"));
  EXPECT_TRUE(env["gpu"].contains("libcuda"));
  // The same section is part of every full report.
  DoctorRun full = doctor({"--json", "--level", "1"});
  EXPECT_TRUE(full.json["environment"].contains("os"));
}

TEST(DoctorCli, HumanTable) {
  REQUIRE_BINARY();
  DoctorRun r = doctor({"--level", "1"}, {{"CUDA_VISIBLE_DEVICES", ""}});
  EXPECT_EQ(r.child.exit_code, 1);
  EXPECT_NE(r.child.out.find("LAYER"), std::string::npos);
  EXPECT_NE(r.child.out.find("EVIDENCE"), std::string::npos);
  EXPECT_NE(r.child.out.find("L1_DEVICES_HIDDEN"), std::string::npos);
  EXPECT_NE(r.child.out.find("Verdict:"), std::string::npos);
}

TEST(DoctorCli, KeepGoingJudgesLayerTwoWithoutADriver) {
  REQUIRE_BINARY();
  if (have_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  if (!open_library("libcudnn.so.9").ok()) GTEST_SKIP() << "no cuDNN 9 on this machine";
  DoctorRun r = doctor({"--json", "--level", "2", "--keep-going"});
  ASSERT_FALSE(r.json.is_discarded()) << r.child.out;
  EXPECT_EQ(r.child.exit_code, 1);  // the chain still fails at layer 1
  EXPECT_EQ(r.json["passed_level"], 0);
  const auto& l2 = r.json["layers"][1];
  EXPECT_NE(l2["status"], "not_run");
  bool cudnn_seen = false;
  for (const auto& c : l2["checks"]) {
    if (c["check"] != "cudnn") continue;
    cudnn_seen = true;
    EXPECT_EQ(c["evidence"]["soname"], "libcudnn.so.9");
    EXPECT_TRUE(c["evidence"]["loaded"].get<bool>());
  }
  EXPECT_TRUE(cudnn_seen) << l2.dump(1);
}

// cuDNN made unloadable for one process: /dev/null bound over every libcudnn.so.9 in a private mount namespace. The
// plugin loads cuDNN at run time, so it still loads; the doctor warns with L2_CUDNN_MISSING (the GPU would serve from
// the -nocudnn rung) and fails nothing on cuDNN's account.
TEST(DoctorCli, CudnnHiddenKeepsThePluginAndWarns) {
  REQUIRE_BINARY();
  if (have_driver()) GTEST_SKIP() << "this machine has an NVIDIA driver";
  LoadedLib cudnn = open_library("libcudnn.so.9");
  if (!cudnn.ok()) GTEST_SKIP() << "no cuDNN 9 on this machine";
  if (!path_exists(std::string(STEADYOCR_BINARY_DIR) + "/libsteadyocr_cuda13.so"))
    GTEST_SKIP() << "the CUDA plugin is not built here";
  std::string script = "mount --bind /dev/null '" + cudnn.realpath + "' || exit 97; exec '" + binary() +
                       "' doctor --json --level 2 --keep-going";
  ChildResult c = run_child({"/usr/bin/unshare", "-m", "/bin/sh", "-c", script}, 60000);
  if (!c.started || c.exit_code == 97 || c.out.empty())
    GTEST_SKIP() << "cannot make a private mount namespace here (needs root): " << c.err;
  nlohmann::json j = nlohmann::json::parse(c.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << c.out;
  const nlohmann::json* missing = find_code(j, "L2_CUDNN_MISSING");
  ASSERT_NE(missing, nullptr) << j["layers"][1].dump(1);
  EXPECT_EQ(missing->at("status"), "warn") << missing->dump(1);
  EXPECT_EQ(find_code(j, "PLUGIN_DLOPEN_FAILED"), nullptr) << j["layers"][1].dump(1);
  bool plugin_passed = false;
  for (const auto& check : j["layers"][1]["checks"]) {
    if (check["check"] == "plugin") plugin_passed = check["status"] == "pass";
  }
  EXPECT_TRUE(plugin_passed) << j["layers"][1].dump(1);
  // Loaded, the plugin tells what it was built against itself.
  EXPECT_EQ(j["environment"]["build"]["built_with_source"], "get_build_info");
  EXPECT_EQ(j["environment"]["build"]["cudnn"], "9.19.0");
}

// ---- GPU machine only: the full chain and each injected failure.

TEST(DoctorCliGpu, AllLevelsPass) {
  REQUIRE_BINARY();
  REQUIRE_GPU();
  DoctorRun r = doctor({"--json", "--level", "4"}, {}, 600000);
  ASSERT_FALSE(r.json.is_discarded()) << r.child.out << r.child.err;
  EXPECT_EQ(r.child.exit_code, 0) << r.json["verdict"];
  EXPECT_EQ(r.json["passed_level"], 4);
}

struct InjectedCase {
  const char* fault;
  const char* check;  // the one check that needs to run (--only)
  const char* code;
};

TEST(DoctorCliGpu, InjectedFaultsBecomeFindings) {
  REQUIRE_BINARY();
  REQUIRE_GPU();
  for (InjectedCase c : {InjectedCase{"no_kernel_image", "kernel_image", "L3_NO_KERNEL_IMAGE"},
                         InjectedCase{"cudnn_not_supported", "cudnn_conv", "L3_CUDNN_NOT_SUPPORTED"},
                         InjectedCase{"illegal_address", "kernel_image", "L3_STICKY_FAULT"},
                         InjectedCase{"numeric_mismatch", "cudnn_conv", "L3_NUMERIC_MISMATCH"},
                         InjectedCase{"stream_hang", "streams", "L4_STREAM_HANG"},
                         InjectedCase{"memory_growth", "memory", "L4_MEMORY_GROWTH"},
                         InjectedCase{"budget_unavailable", "budget", "L4_BUDGET_UNAVAILABLE"}}) {
    DoctorRun r =
        doctor({"--json", "--level", "4", "--only", c.check, "--inject", c.fault, "--watchdog-ms", "3000"}, {}, 300000);
    ASSERT_FALSE(r.json.is_discarded()) << c.fault << ": " << r.child.out << r.child.err;
    EXPECT_EQ(r.child.exit_code, 1) << c.fault;
    EXPECT_NE(find_code(r.json, c.code), nullptr) << c.fault << " did not give " << c.code << ": " << r.json["verdict"];
  }
}

}  // namespace
}  // namespace steadyocr::doctor

// The judgement of layers 1-2 on synthetic facts: every failure class without broken hardware.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "doctor/device_checks.h"
#include "doctor/dynlib.h"
#include "doctor/knowledge_base.h"
#include "doctor/layers.h"
#include "doctor/versions.h"
#include "graph/onnx_import.h"
#include "test_util.h"

namespace steadyocr::doctor {
namespace {

const CheckResult& find_check(const std::vector<CheckResult>& checks, const std::string& name) {
  for (const auto& c : checks)
    if (c.check == name) return c;
  static CheckResult none;
  ADD_FAILURE() << "no check named " << name;
  return none;
}

// A healthy single-GPU machine as layer 1 sees it.
Layer1Facts healthy_l1() {
  Layer1Facts f;
  f.nodes.nvidiactl = true;
  f.nodes.gpus = {"/dev/nvidia0"};
  f.nodes.uvm = true;
  f.driver.loaded = true;
  f.driver.libcuda_path = "/usr/lib/x86_64-linux-gnu/libcuda.so.1";
  f.driver.libcuda_realpath = "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.03";
  f.driver.driver_version = "580.159.03";
  f.driver.init_called = true;
  f.driver.init_result = 0;
  f.driver.init_name = "CUDA_SUCCESS";
  f.driver.driver_cuda_version = 13000;
  f.driver.device_count = 1;
  DriverDevice d;
  d.name = "NVIDIA H200";
  d.cc_major = 9;
  d.cc_minor = 0;
  d.total_bytes = size_t{143771} << 20;
  f.driver.devices = {d};
  f.nvml.loaded = true;
  f.nvml.init_result = 0;
  f.nvml.device_count = 1;
  f.nvml.driver_version = "580.159.03";
  f.nvml.devices = {NvmlDevice{"NVIDIA H200", "GPU-1", 1, 0, 0}};
  return f;
}

// One plugin flavour as probe_plugin_files reports it ("" = not installed).
PluginFileFacts plugin_file(int major, const std::string& path) {
  PluginFileFacts p;
  p.file = "libsteadyocr_cuda" + std::to_string(major) + ".so";
  p.cuda_major = major;
  p.min_driver_cuda = major * 1000;
  p.min_driver = major == 13 ? "R580 (CUDA 13.0)" : "R450.80.02 (CUDA 11.0)";
  p.path = path;
  if (!path.empty()) {
    p.build = {true,
               "file marker",
               major * 1000 + (major == 11 ? 80 : 0),
               91900,
               major == 11 ? 111103 : 130100,
               major == 11 ? "70,75,80,86,89,90" : "80,86,89,90",
               "90",
               ""};
    p.cublas_soname = "libcublas.so." + std::to_string(major);
    p.cublas_path = "/usr/lib/libcublas.so." + std::to_string(major);
    p.loadable = true;
  }
  return p;
}

Layer2Facts healthy_l2() {
  Layer2Facts f;
  f.driver = healthy_l1().driver;
  f.plugin.found = f.plugin.loaded = f.plugin.api_ok = true;
  f.plugin.path = "/opt/steadyocr/bin/libsteadyocr_cuda13.so";
  f.plugin.api_version = 1;
  f.plugin.build = {true, "get_build_info", 13000, 91900, 130100, "80,86,89,90", "90", "nvcc 13.0"};
  f.plugin.fatbin.fatbins = 3;
  f.plugin.fatbin.sass = {80, 86, 89, 90};
  f.plugin.fatbin.ptx = {90};
  f.plugin.runtime_queried = true;
  f.plugin.runtime_rc = 0;
  f.plugin.runtime.runtime_version = 13000;
  f.plugin.runtime.device_count = 1;
  f.cudnn.soname = "libcudnn.so.9";
  f.cudnn.loaded = true;
  f.cudnn.path = "/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
  f.cudnn.version = {9, 19, 0};
  f.cudnn.cudart = {13, 0, 0};
  for (const char* s : {"graph", "ops", "cnn", "engines_precompiled", "engines_runtime_compiled", "heuristic"})
    f.cudnn.sublibraries.push_back({std::string("libcudnn_") + s + ".so.9", "/x/libcudnn_" + std::string(s), true});
  f.cublas.soname = "libcublas.so.13";
  f.cublas.loaded = f.cublas.lt_loaded = true;
  f.cublas.path = "/usr/local/cuda/lib64/libcublas.so.13";
  f.cublas.version = {13, 1, 0};
  f.plugin_files = {plugin_file(13, "/opt/steadyocr/bin/libsteadyocr_cuda13.so"), plugin_file(11, "")};
  return f;
}

TEST(DoctorLayer1, HealthyMachinePasses) {
  auto checks = evaluate_layer1(healthy_l1());
  EXPECT_EQ(summarize_layer(checks), LayerStatus::kPass);
  EXPECT_NE(find_check(checks, "devices").summary.find("NVIDIA H200 (cc 9.0"), std::string::npos);
}

TEST(DoctorLayer1, GpuSharingIsReportedNotFailed) {
  Layer1Facts f = healthy_l1();
  EXPECT_EQ(find_check(evaluate_layer1(f), "mig").code, "");
  EXPECT_EQ(find_check(evaluate_layer1(f), "mps").code, "");
  f.nvml.devices[0].mig_current = f.nvml.devices[0].mig_pending = 1;
  f.nvml.devices[0].mig_instances = 7;
  f.mps.pipe_dir = "/tmp/nvidia-mps";
  f.mps.control_socket = true;
  f.mps.pinned_device_mem_limit = "0=20G";
  auto checks = evaluate_layer1(f);
  const CheckResult& mig = find_check(checks, "mig");
  EXPECT_EQ(mig.code, "L1_MIG_ENABLED");
  EXPECT_EQ(mig.status, CheckStatus::kPass);
  EXPECT_NE(mig.summary.find("GPU 0 (NVIDIA H200): 7 MIG instance(s)"), std::string::npos) << mig.summary;
  const CheckResult& mps = find_check(checks, "mps");
  EXPECT_EQ(mps.code, "L1_MPS_ACTIVE");
  EXPECT_NE(mps.evidence["limits"].get<std::string>().find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20G"),
            std::string::npos);
  EXPECT_EQ(summarize_layer(checks), LayerStatus::kPass);  // information, not a problem
  for (CheckResult c : {mig, mps}) {
    annotate(c, KnowledgeBase::builtin());
    EXPECT_EQ(c.failure_class, "gpu_sharing");
    EXPECT_FALSE(c.fix.empty());
    EXPECT_EQ(c.remediation.find("(unknown)"), std::string::npos) << c.remediation;  // every placeholder filled
  }
}

TEST(DoctorLayer1, MpsControlSocketIsFound) {
  const std::string dir = ::testing::TempDir() + "/mps_pipe";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  ::setenv("CUDA_MPS_PIPE_DIRECTORY", dir.c_str(), 1);
  EXPECT_FALSE(probe_mps().control_socket);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/control";
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  MpsFacts m = probe_mps();
  EXPECT_TRUE(m.control_socket);
  EXPECT_TRUE(m.pipe_dir_from_env);
  EXPECT_EQ(m.pipe_dir, dir);
  ::close(fd);
  ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
  std::filesystem::remove_all(dir);
}

TEST(DoctorLayer1, HiddenDevicesByEnvironment) {
  for (const char* value : {"", "-1", "NoDevFiles", " "}) {
    Layer1Facts f = healthy_l1();
    f.env.cuda_visible_devices = {true, value};
    auto checks = evaluate_layer1(f);
    const auto& c = find_check(checks, "cuda_visible_devices");
    EXPECT_EQ(c.status, CheckStatus::kFail) << "'" << value << "'";
    EXPECT_EQ(c.code, "L1_DEVICES_HIDDEN") << "'" << value << "'";
    EXPECT_EQ(summarize_layer(checks), LayerStatus::kFail);
  }
}

TEST(DoctorLayer1, VisibleDevicesParsing) {
  EXPECT_EQ(parse_cuda_visible_devices("0,1", 2).usable_entries, 2);
  EXPECT_TRUE(parse_cuda_visible_devices("0,1", 2).problem.empty());
  auto v = parse_cuda_visible_devices("0,x,1", 2);
  EXPECT_EQ(v.usable_entries, 1);
  EXPECT_FALSE(v.hides_all);
  EXPECT_NE(v.problem.find("'x'"), std::string::npos);
  v = parse_cuda_visible_devices("3", 1);  // beyond the one GPU NVML sees
  EXPECT_TRUE(v.hides_all);
  EXPECT_EQ(parse_cuda_visible_devices("GPU-8a1e,MIG-77", -1).usable_entries, 2);
  EXPECT_TRUE(parse_cuda_visible_devices("-1", -1).hides_all);
}

TEST(DoctorLayer1, ContainerVariables) {
  Layer1Facts f = healthy_l1();
  f.env.nvidia_visible_devices = {true, "void"};
  EXPECT_EQ(find_check(evaluate_layer1(f), "container_env").code, "L1_CONTAINER_NO_GPU_REQUESTED");
  f = healthy_l1();
  f.env.nvidia_driver_capabilities = {true, "utility,video"};
  auto c = find_check(evaluate_layer1(f), "container_env");
  EXPECT_EQ(c.code, "L1_DRIVER_CAPABILITIES_NO_COMPUTE");
  EXPECT_EQ(c.status, CheckStatus::kWarn);
  f.env.nvidia_driver_capabilities = {true, "compute,utility"};
  EXPECT_EQ(find_check(evaluate_layer1(f), "container_env").status, CheckStatus::kPass);
}

TEST(DoctorLayer1, DeviceNodes) {
  Layer1Facts f = healthy_l1();
  f.nodes = DeviceNodes{};
  EXPECT_EQ(find_check(evaluate_layer1(f), "device_nodes").code, "L1_NO_DEVICE_NODES");
  f.nodes.dxg = true;  // WSL2
  EXPECT_EQ(find_check(evaluate_layer1(f), "device_nodes").status, CheckStatus::kPass);
  f = healthy_l1();
  f.nodes.no_access = {"/dev/nvidia0"};
  EXPECT_EQ(find_check(evaluate_layer1(f), "device_nodes").code, "L1_DEVICE_NODE_NO_ACCESS");
  f = healthy_l1();
  f.nodes.uvm = false;
  auto c = find_check(evaluate_layer1(f), "device_nodes");
  EXPECT_EQ(c.code, "L1_NO_UVM_NODE");
  EXPECT_EQ(c.status, CheckStatus::kWarn);
}

TEST(DoctorLayer1, NoDriverSaysLibcudaNotFound) {
  Layer1Facts f = healthy_l1();
  f.driver = DriverFacts{};
  f.driver.dlopen_error = "libcuda.so.1: cannot open shared object file: No such file or directory";
  f.driver.libcuda_files = {"/usr/local/cuda/lib64/stubs/libcuda.so"};
  auto checks = evaluate_layer1(f);
  const auto& c = find_check(checks, "libcuda");
  EXPECT_EQ(c.code, "L1_NO_DRIVER");
  EXPECT_NE(c.summary.find("libcuda.so.1 not found"), std::string::npos);
  EXPECT_NE(c.summary.find("only the CUDA toolkit's stub"), std::string::npos);
  // What depends on the driver is reported as not run, not as failed.
  EXPECT_EQ(find_check(checks, "cuinit").status, CheckStatus::kSkipped);
  EXPECT_EQ(find_check(checks, "devices").status, CheckStatus::kSkipped);
  f.driver.dlopen_error = "libcuda.so.1: wrong ELF class: ELFCLASS32";
  EXPECT_EQ(find_check(evaluate_layer1(f), "libcuda").code, "L1_LIBCUDA_LOAD_FAILED");
}

TEST(DoctorLayer1, StubLibcuda) {
  Layer1Facts f = healthy_l1();
  f.driver.libcuda_path = "/tmp/x/libcuda.so.1";
  f.driver.libcuda_realpath = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/stubs/libcuda.so";
  f.driver.init_result = 34;
  f.driver.init_name = "CUDA_ERROR_STUB_LIBRARY";
  auto checks = evaluate_layer1(f);
  EXPECT_EQ(find_check(checks, "libcuda").code, "L1_STUB_LIBCUDA");
  EXPECT_EQ(find_check(checks, "cuinit").code, "L1_STUB_LIBCUDA");
  // Detected by cuInit's answer even when the path does not say "stubs".
  f.driver.libcuda_realpath = "/opt/odd/libcuda.so";
  EXPECT_EQ(find_check(evaluate_layer1(f), "libcuda").code, "L1_STUB_LIBCUDA");
}

TEST(DoctorLayer1, CuInitErrors) {
  struct Case {
    int result;
    const char* code;
  };
  for (Case c : {Case{100, "L1_NO_DEVICE"}, Case{803, "L1_DRIVER_KERNEL_MISMATCH"}, Case{999, "L1_CUINIT_FAILED"},
                 Case{304, "L1_CUINIT_FAILED"}}) {
    Layer1Facts f = healthy_l1();
    f.driver.init_result = c.result;
    f.driver.init_name = cu_result_name(c.result);
    auto checks = evaluate_layer1(f);
    EXPECT_EQ(find_check(checks, "cuinit").code, c.code) << c.result;
    EXPECT_EQ(find_check(checks, "devices").status, CheckStatus::kSkipped);
  }
  Layer1Facts f = healthy_l1();
  f.driver.init_result = 100;
  f.env.cuda_visible_devices = {true, ""};
  EXPECT_EQ(find_check(evaluate_layer1(f), "cuinit").code, "L1_DEVICES_HIDDEN");
}

TEST(DoctorLayer1, NvmlFindings) {
  Layer1Facts f = healthy_l1();
  f.nvml = NvmlFacts{};
  f.nvml.dlopen_error = "libnvidia-ml.so.1: cannot open shared object file";
  auto checks = evaluate_layer1(f);
  const auto& c = find_check(checks, "nvml");
  EXPECT_EQ(c.code, "L1_NVML_ABSENT");
  EXPECT_EQ(c.status, CheckStatus::kSkipped);
  EXPECT_FALSE(c.required);
  EXPECT_EQ(summarize_layer(checks), LayerStatus::kPass);  // NVML is optional
  f = healthy_l1();
  f.nvml.init_result = 18;
  f.nvml.init_error = "Driver/library version mismatch";
  EXPECT_EQ(find_check(evaluate_layer1(f), "nvml").code, "L1_DRIVER_KERNEL_MISMATCH");
  f = healthy_l1();
  f.nvml.devices[0].ecc_uncorrected_volatile = 3;
  EXPECT_EQ(find_check(evaluate_layer1(f), "nvml").code, "L1_GPU_ECC_ERRORS");
  f = healthy_l1();
  f.nvml.device_count = 8;
  auto n = find_check(evaluate_layer1(f), "nvml");
  EXPECT_EQ(n.code, "L1_NVML_CUDA_COUNT_DIFFERS");
  EXPECT_EQ(n.status, CheckStatus::kPass);
}

TEST(DoctorLayer2, HealthyPasses) {
  auto checks = evaluate_layer2(healthy_l2());
  for (const auto& c : checks) EXPECT_EQ(c.status, CheckStatus::kPass) << c.check << ": " << c.summary;
}

TEST(DoctorLayer2, PluginProblems) {
  Layer2Facts f = healthy_l2();
  f.plugin = PluginFacts{};
  f.plugin.looked_in = {"/opt/bin/libsteadyocr_cuda13.so", "libsteadyocr_cuda13.so"};
  auto checks = evaluate_layer2(f);
  EXPECT_EQ(find_check(checks, "plugin").code, "PLUGIN_NOT_FOUND");
  EXPECT_EQ(find_check(checks, "arch").status, CheckStatus::kSkipped);
  f = healthy_l2();
  f.plugin.loaded = f.plugin.api_ok = false;
  f.plugin.dlopen_error = "libcudnn.so.9: cannot open shared object file: No such file or directory";
  f.plugin.missing_library = missing_library_from_dlerror(f.plugin.dlopen_error);
  auto c = find_check(evaluate_layer2(f), "plugin");
  EXPECT_EQ(c.code, "PLUGIN_DLOPEN_FAILED");
  EXPECT_EQ(c.evidence["missing_library"], "libcudnn.so.9");
  EXPECT_NE(c.summary.find("libcudnn.so.9 is missing"), std::string::npos);
  f = healthy_l2();
  f.plugin.api_ok = false;
  f.plugin.api_problem = "plugin API version 2, this binary speaks 1";
  EXPECT_EQ(find_check(evaluate_layer2(f), "plugin").code, "PLUGIN_API_MISMATCH");
}

TEST(DoctorLayer2, DriverVersusRuntime) {
  Layer2Facts f = healthy_l2();
  f.driver.driver_cuda_version = 12040;
  auto c = find_check(evaluate_layer2(f), "driver_vs_runtime");
  EXPECT_EQ(c.code, "L2_DRIVER_TOO_OLD");
  EXPECT_EQ(c.evidence["driver_cuda"], "12.4");
  EXPECT_EQ(c.evidence["runtime_built"], "13.0");
  f.plugin.build.cuda_runtime_version = 13020;
  f.driver.driver_cuda_version = 13000;
  EXPECT_EQ(find_check(evaluate_layer2(f), "driver_vs_runtime").code, "L2_DRIVER_OLDER_MINOR");
  f.plugin.runtime_rc = 1;
  std::snprintf(f.plugin.runtime.error, sizeof(f.plugin.runtime.error),
                "cudaGetDeviceCount: cudaErrorInsufficientDriver");
  EXPECT_EQ(find_check(evaluate_layer2(f), "cuda_runtime").code, "L2_CUDA_RUNTIME_INIT_FAILED");
}

TEST(DoctorLayer2, CudnnVersions) {
  Layer2Facts f = healthy_l2();
  f.cudnn.version = {9, 14, 0};
  f.cudnn.path = "/usr/lib/x86_64-linux-gnu/libcudnn.so.9";
  auto older = find_check(evaluate_layer2(f), "cudnn");
  EXPECT_EQ(older.code, "L2_CUDNN_OLDER_THAN_BUILT");
  EXPECT_EQ(older.status, CheckStatus::kWarn);
  EXPECT_EQ(older.summary,
            "cuDNN 9.14 loaded from /usr/lib/x86_64-linux-gnu/libcudnn.so.9 is older than 9.19 we were built with");
  CheckResult annotated = older;
  annotate(annotated, KnowledgeBase::builtin());
  EXPECT_NE(annotated.remediation.find("install cuDNN ≥9.19 or put its lib folder first on LD_LIBRARY_PATH"),
            std::string::npos)
      << annotated.remediation;
  f.cudnn.version = {9, 20, 1};  // newer than built: fine
  EXPECT_EQ(find_check(evaluate_layer2(f), "cudnn").status, CheckStatus::kPass);
  f.cudnn.version = {8, 9, 7};
  EXPECT_EQ(find_check(evaluate_layer2(f), "cudnn").code, "L2_CUDNN_WRONG_MAJOR");
  f = healthy_l2();
  f.cudnn.cudart = {12, 9, 0};
  EXPECT_EQ(find_check(evaluate_layer2(f), "cudnn").code, "L2_CUDNN_CUDA_MISMATCH");
  f = healthy_l2();
  f.cudnn = CudnnFacts{};
  f.cudnn.soname = "libcudnn.so.9";
  f.cudnn.dlopen_error = "libcudnn.so.9: cannot open shared object file: No such file or directory";
  auto checks = evaluate_layer2(f);
  EXPECT_EQ(find_check(checks, "cudnn").code, "L2_CUDNN_MISSING");
  // cuDNN is optional: a missing one warns and blocks nothing above it.
  EXPECT_EQ(find_check(checks, "cudnn").status, CheckStatus::kWarn);
  EXPECT_EQ(find_check(checks, "cudnn_sublibraries").status, CheckStatus::kPass);
  EXPECT_EQ(summarize_layer(checks), LayerStatus::kWarn);
  f.cudnn.other_majors = {"/usr/lib/x86_64-linux-gnu/libcudnn.so.8 -> /usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.7"};
  EXPECT_EQ(find_check(evaluate_layer2(f), "cudnn").code, "L2_CUDNN_WRONG_MAJOR");
  f = healthy_l2();
  f.cudnn.sublibraries[2].path.clear();
  auto sub = find_check(evaluate_layer2(f), "cudnn_sublibraries");
  EXPECT_EQ(sub.code, "L2_CUDNN_SUBLIBRARY_MISSING");
  EXPECT_NE(sub.summary.find("libcudnn_cnn.so.9 missing"), std::string::npos);
}

// The per-plugin report: every flavour, installed or not, whether the driver runs it.
TEST(DoctorLayer2, PluginFilesAgainstTheDriver) {
  Layer2Facts f = healthy_l2();
  CheckResult ok = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(ok.status, CheckStatus::kPass);
  EXPECT_EQ(
      ok.summary,
      "libsteadyocr_cuda13.so serves: libsteadyocr_cuda13.so: /opt/steadyocr/bin/libsteadyocr_cuda13.so (CUDA "
      "13.0, SASS 80,86,89,90, PTX 90), libcublas.so.13 found, loads, the driver runs it; libsteadyocr_cuda11.so: "
      "not installed, the driver runs it");

  // A CUDA 12.2 driver with both installed: the 11.8 plugin serves, the 13 one is named as needing R580.
  f.driver.driver_cuda_version = 12020;
  f.plugin_files[1] = plugin_file(11, "/opt/steadyocr/lib/steadyocr/libsteadyocr_cuda11.so");
  CheckResult r122 = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(r122.status, CheckStatus::kPass);
  EXPECT_EQ(r122.summary.rfind("libsteadyocr_cuda11.so serves: ", 0), 0u) << r122.summary;
  EXPECT_NE(r122.summary.find("libsteadyocr_cuda13.so: /opt/steadyocr/bin/libsteadyocr_cuda13.so (CUDA 13.0, SASS "
                              "80,86,89,90, PTX 90), libcublas.so.13 found, loads, needs a driver of R580 (CUDA 13.0)"),
            std::string::npos)
      << r122.summary;

  // The same driver with only the CUDA 13 plugin: nothing it runs is installed.
  f.plugin_files[1] = plugin_file(11, "");
  CheckResult none = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(none.status, CheckStatus::kFail);
  EXPECT_EQ(none.code, "PLUGIN_NOT_FOUND");

  // A CUDA 13 driver with only the 11.8 plugin: it serves, with a warning naming the better one.
  f.driver.driver_cuda_version = 13000;
  f.plugin_files = {plugin_file(13, ""), plugin_file(11, "/opt/steadyocr/lib/steadyocr/libsteadyocr_cuda11.so")};
  CheckResult older = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(older.status, CheckStatus::kWarn);
  EXPECT_EQ(older.code, "L2_NEWER_PLUGIN_NOT_INSTALLED");
  EXPECT_EQ(older.evidence["better"], "libsteadyocr_cuda13.so");

  // --cuda-plugin pins the 11.8 plugin on a CUDA 13 driver with both installed: the pinned one serves.
  f.plugin_files = {plugin_file(13, "/opt/steadyocr/bin/libsteadyocr_cuda13.so"),
                    plugin_file(11, "/opt/steadyocr/lib/steadyocr/libsteadyocr_cuda11.so")};
  f.plugin.path = "/opt/steadyocr/lib/steadyocr/libsteadyocr_cuda11.so";
  CheckResult pinned = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(pinned.status, CheckStatus::kPass);
  EXPECT_EQ(pinned.summary.rfind("libsteadyocr_cuda11.so serves: ", 0), 0u) << pinned.summary;

  // An installed plugin that does not load (its cuBLAS missing) is passed over: the older one serves, if installed.
  f.plugin.path = "/opt/steadyocr/bin/libsteadyocr_cuda13.so";
  f.plugin.loaded = f.plugin.api_ok = false;  // the doctor's own load of it failed too
  f.plugin_files[0].loadable = false;
  f.plugin_files[0].load_error = "libcublas.so.13: cannot open shared object file: No such file or directory";
  CheckResult broken = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(broken.summary.rfind("libsteadyocr_cuda11.so serves: ", 0), 0u) << broken.summary;
  EXPECT_NE(broken.summary.find("does not load (libcublas.so.13: cannot open shared object file"), std::string::npos)
      << broken.summary;
  f.plugin_files[0].loadable = true;
  f.plugin_files[0].load_error.clear();
  f.plugin.loaded = f.plugin.api_ok = true;

  // Not probed (the engine's pre-flight): nothing to judge, and nothing fails for it.
  Layer2Facts unprobed = healthy_l2();
  unprobed.plugin_files.clear();
  CheckResult none_probed = find_check(evaluate_layer2(unprobed), "plugins");
  EXPECT_EQ(none_probed.status, CheckStatus::kPass);
  EXPECT_NE(none_probed.summary.find("not probed"), std::string::npos) << none_probed.summary;
  EXPECT_EQ(summarize_layer(evaluate_layer2(unprobed)), summarize_layer(evaluate_layer2(healthy_l2())));

  // CUDA 10.2: older than every plugin.
  f.driver.driver_cuda_version = 10020;
  CheckResult old = find_check(evaluate_layer2(f), "plugins");
  EXPECT_EQ(old.status, CheckStatus::kFail);
  EXPECT_EQ(old.code, "L2_DRIVER_TOO_OLD");
  EXPECT_NE(old.summary.find("the driver supports CUDA 10.2, older than every CUDA plugin"), std::string::npos);
  EXPECT_NE(old.summary.find("libsteadyocr_cuda11.so: /opt/steadyocr/lib/steadyocr/libsteadyocr_cuda11.so (CUDA "
                             "11.8, SASS 70,75,80,86,89,90, PTX 90), libcublas.so.11 found, loads, needs a driver "
                             "of R450.80.02 (CUDA 11.0)"),
            std::string::npos)
      << old.summary;
}

TEST(DoctorLayer2, CublasVersions) {
  Layer2Facts f = healthy_l2();
  f.cublas = CublasFacts{};
  f.cublas.soname = "libcublas.so.13";
  f.cublas.dlopen_error = "libcublas.so.13: cannot open shared object file";
  EXPECT_EQ(find_check(evaluate_layer2(f), "cublas").code, "L2_CUBLAS_MISSING");
  f = healthy_l2();
  f.cublas.lt_loaded = false;
  f.cublas.lt_error = "libcublasLt.so.13: cannot open shared object file";
  EXPECT_EQ(find_check(evaluate_layer2(f), "cublas").code, "L2_CUBLAS_MISSING");
  f = healthy_l2();
  f.cublas.version = {13, 0, 2};
  EXPECT_EQ(find_check(evaluate_layer2(f), "cublas").code, "L2_CUBLAS_OLDER_THAN_BUILT");
}

TEST(DoctorLayer2, ArchitectureMatching) {
  int picked = 0;
  EXPECT_EQ(match_arch(90, {80, 86, 89, 90}, {90}, &picked), ArchMatch::kSass);
  EXPECT_EQ(picked, 90);
  EXPECT_EQ(match_arch(87, {80, 86, 89, 90}, {90}, &picked), ArchMatch::kSass);  // sm_86 runs on 8.7
  EXPECT_EQ(picked, 86);
  EXPECT_EQ(match_arch(120, {80, 86, 89, 90}, {90}, &picked), ArchMatch::kPtxJit);  // newer major: JIT from PTX 90
  EXPECT_EQ(picked, 90);
  EXPECT_EQ(match_arch(75, {80, 86, 89, 90}, {90}, &picked), ArchMatch::kNone);
  Layer2Facts f = healthy_l2();
  f.driver.devices[0].cc_major = 7;
  f.driver.devices[0].cc_minor = 5;
  auto none = find_check(evaluate_layer2(f), "arch");
  EXPECT_EQ(none.code, "L2_NO_COMPATIBLE_ARCH");
  EXPECT_EQ(none.evidence["cc_arch"], "75");
  f.driver.devices[0].cc_major = 12;
  f.driver.devices[0].cc_minor = 0;
  EXPECT_EQ(find_check(evaluate_layer2(f), "arch").code, "L2_PTX_JIT_ONLY");
  f.plugin.build.cuda_runtime_version = 13010;
  f.driver.driver_cuda_version = 13000;
  EXPECT_EQ(find_check(evaluate_layer2(f), "arch").code, "L2_PTX_TOO_NEW_FOR_DRIVER");
}

TEST(DoctorLayer2, FatbinScanReadsSassAndPtx) {
  // One container with two SASS entries (sm_80, sm_90) and a PTX entry (compute_90), laid out like nvcc's.
  std::vector<unsigned char> file(64, 0xAB);
  auto put = [&](size_t at, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) file[at + i] = static_cast<unsigned char>(v >> (8 * i));
  };
  size_t start = file.size();
  const uint64_t entry = 64, payload = 32;
  file.resize(start + 16 + 3 * (entry + payload), 0);
  put(start, 0xBA55ED50, 4);
  put(start + 4, 1, 2);
  put(start + 6, 16, 2);
  put(start + 8, 3 * (entry + payload), 8);
  int kinds[3] = {2, 2, 1}, archs[3] = {80, 90, 90};
  for (int i = 0; i < 3; ++i) {
    size_t e = start + 16 + i * (entry + payload);
    put(e, kinds[i], 2);
    put(e + 4, entry, 4);
    put(e + 8, payload, 8);
    put(e + 28, archs[i], 4);
  }
  FatbinArchs a = scan_fatbin_bytes(file.data(), file.size());
  EXPECT_EQ(a.fatbins, 1);
  EXPECT_EQ(a.sass, (std::vector<int>{80, 90}));
  EXPECT_EQ(a.ptx, (std::vector<int>{90}));
  EXPECT_EQ(parse_arch_list("80,86, 89;90"), (std::vector<int>{80, 86, 89, 90}));
}

TEST(DoctorVersions, Encodings) {
  EXPECT_EQ(cuda_version(13000).major_minor(), "13.0");
  EXPECT_EQ(cuda_version(12040).major_minor(), "12.4");
  EXPECT_EQ(cudnn_version(91900).str(), "9.19.0");
  EXPECT_EQ(cudnn_version(8907).str(), "8.9.7");
  EXPECT_EQ(cublas_version(130100).major_minor(), "13.1");
  EXPECT_LT(Version({9, 14, 0}).compare({9, 19, 0}), 0);
}

TEST(DoctorDynlib, DlerrorParsing) {
  EXPECT_EQ(missing_library_from_dlerror("libcudnn.so.9: cannot open shared object file: No such file or directory"),
            "libcudnn.so.9");
  EXPECT_EQ(
      missing_library_from_dlerror(
          "/x/libsteadyocr_cuda13.so: libcublasLt.so.13: cannot open shared object file: No such file or directory"),
      "libcublasLt.so.13");
  EXPECT_EQ(undefined_symbol_from_dlerror("/x/libsteadyocr_cuda13.so: undefined symbol: cudnnGetLastErrorString"),
            "cudnnGetLastErrorString");
  EXPECT_EQ(missing_library_from_dlerror("some other error"), "");
  EXPECT_EQ(rejected_library_from_dlerror("/usr/local/cuda/lib64/libcudnn.so.9: file too short"),
            "/usr/local/cuda/lib64/libcudnn.so.9");
  EXPECT_EQ(rejected_library_from_dlerror("libcudnn.so.9: cannot open shared object file: No such file"), "");
}

TEST(DoctorModels, TypicalShapesPerModelKind) {
  SO_REQUIRE_MODELS();
  struct Case {
    const char* file;
    Shape shape;
  };
  for (const Case& c :
       {Case{"ch_PP-OCRv4_det_infer.onnx", {1, 3, 640, 640}}, Case{"ch_PP-OCRv4_rec_infer.onnx", {1, 3, 48, 320}},
        Case{"ch_ppocr_mobile_v2.0_cls_infer.onnx", {1, 3, 48, 192}}}) {
    auto g = graph::import_onnx(::steadyocr::testing::models_dir() + "/" + c.file);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    EXPECT_EQ(typical_input_shape(*g, 640), c.shape) << c.file;
  }
}

TEST(DoctorReport, ChainAndExitCode) {
  DoctorReport r;
  r.requested_level = 2;
  LayerResult l1{1, LayerStatus::kPass, "", {pass(1, "a", "ok")}};
  LayerResult l2{2, LayerStatus::kPass, "", {finding(2, "b", CheckStatus::kWarn, "L2_CUDNN_OLDER_THAN_BUILT", "old")}};
  LayerResult l3{3, LayerStatus::kNotRun, "above the requested --level 2", {}};
  r.layers = {l1, l2, l3};
  finalize(r);
  EXPECT_TRUE(r.ok);  // warnings allowed
  EXPECT_EQ(r.passed_level, 2);
  EXPECT_EQ(exit_code(r), 0);
  r.requested_level = 3;
  finalize(r);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(exit_code(r), 1);
  // A required check that could not run leaves the layer unverified: not ok, but not "failed" either.
  DoctorReport s;
  s.requested_level = 1;
  s.layers = {LayerResult{1, LayerStatus::kPass, "", {skipped(1, "x", "DOCTOR_CHECK_FAILED_TO_RUN", "no")}}};
  finalize(s);
  EXPECT_EQ(s.layers[0].status, LayerStatus::kIncomplete);
  EXPECT_FALSE(s.ok);
  EXPECT_NE(s.verdict.find("could not be verified"), std::string::npos);
}

}  // namespace
}  // namespace steadyocr::doctor

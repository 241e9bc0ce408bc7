// `steadyocr doctor`: the layered GPU pre-flight (see docs/DOCTOR.md).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "backends/cuda/diagnostics.h"
#include "cli/commands.h"
#include "cli/cuda_plugin_flag.h"
#include "doctor/device_checks.h"
#include "doctor/doctor.h"
#include "doctor/environment.h"

namespace steadyocr::cli {

namespace {
struct DoctorArgs {
  int level = 4;
  bool json = false;
  bool env_only = false;
  bool keep_going = false;
  bool no_vulkan = false;
  std::string models;
  size_t gpu_mem_mb = 0;
  int device = 0;
  int workers = 4;
  int iterations = 20;
  int watchdog_ms = 15000;
  int check_timeout_ms = 60000;
  int det_size = 640;
  std::string inject;
  std::vector<std::string> only;
  std::string json_file;
  std::string internal_check, internal_args;
};
}  // namespace

Command add_doctor_command(CLI::App& root) {
  auto args = std::make_shared<DoctorArgs>();
  Command c;
  c.app = root.add_subcommand("doctor",
                              "Check the GPU stack layer by layer (1 visibility, 2 ABI, 3 kernels, 4 streams/memory); "
                              "exit 0 when the requested level passes, 1 when it fails");
  auto* app = c.app;
  app->add_option("--level", args->level, "Highest layer to check: 1 visibility, 2 ABI, 3 kernels, 4 streams/memory")
      ->check(CLI::Range(1, 4))
      ->capture_default_str();
  app->add_flag("--json", args->json, "Print the report as JSON (schema in docs/DOCTOR.md)");
  app->add_flag("--env", args->env_only,
                "Print only the environment report (GPU, driver, CUDA, cuDNN, cuBLAS, glibc...)");
  app->add_flag("--keep-going", args->keep_going,
                "Judge layers 1-2 even when a layer below failed (to see every ABI problem at once); the exit "
                "status still follows the chain, and layers 3-4 never run after a failure");
  app->add_flag("--no-vulkan", args->no_vulkan,
                "Skip the Vulkan chain (loader, driver, devices, a shader on each device), which otherwise runs on "
                "every doctor run beside the layers; it never changes the exit status");
  app->add_option("--models", args->models, "Folder with the ONNX models: check every conv shape of them (layer 3)")
      ->check(CLI::ExistingDirectory);
  app->add_option("--gpu-mem", args->gpu_mem_mb, "Device memory budget in MB that layer 4 must be able to allocate");
  app->add_option("--device", args->device, "CUDA device index for layers 3-4")->capture_default_str();
  add_cuda_plugin_flag(app);
  app->add_option("--workers", args->workers, "Concurrent workers in layer 4")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app->add_option("--iterations", args->iterations, "Runs per worker / for the memory check in layer 4")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app->add_option("--watchdog-ms", args->watchdog_ms, "Layer 4: time the workers get before it counts as a hang")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  app->add_option("--check-timeout-ms", args->check_timeout_ms,
                  "Deadline of each layer 3-4 check process and of the Vulkan chain's process")
      ->check(CLI::Range(1000, 3600000))
      ->capture_default_str();
  app->add_option("--det-size", args->det_size, "Side of the det model input used for its conv shapes")
      ->check(CLI::Range(32, 4096))
      ->capture_default_str();
  app->add_option("--inject", args->inject,
                  "Inject faults into the layer 3-4 checks, for testing (comma-separated: no_kernel_image, "
                  "illegal_address, cudnn_not_supported, numeric_mismatch, stream_hang, memory_growth, "
                  "budget_unavailable, hang_child, vulkan_hang, vulkan_crash); same as STEADYOCR_DOCTOR_FAULT");
  app->add_option("--only", args->only,
                  "Run only these layer 3-4 checks (kernel_image, cudnn_conv, backend_ops, fp16, backend_fp16, "
                  "model_convs, streams, backend_workers, memory, budget); layers 1-2 always run")
      ->delimiter(',')
      ->check(CLI::IsMember({"kernel_image", "cudnn_conv", "backend_ops", "fp16", "backend_fp16", "model_convs",
                             "streams", "backend_workers", "memory", "budget"}));
  app->add_option("--json-file", args->json_file, "Also write the JSON report to this file (with the table on stdout)");
  // The child side of layers 3-4 (the doctor re-runs itself with these).
  app->add_option("--internal-check", args->internal_check)->group("");
  app->add_option("--internal-args", args->internal_args)->group("");

  c.run = [args]() -> int {
    if (!args->internal_check.empty()) return doctor::run_internal_check(args->internal_check, args->internal_args);
    if (!args->inject.empty()) ::setenv(STEADYOCR_DOCTOR_FAULT_ENV, args->inject.c_str(), 1);
    if (args->env_only) {
      nlohmann::json env = doctor::environment_only();
      if (args->json) {
        nlohmann::json j = {
            {"schema", "steadyocr-doctor-env"}, {"schema_version", doctor::kDoctorSchemaVersion}, {"environment", env}};
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
      } else {
        std::printf("steadyocr environment\n%s", doctor::render_environment_text(env).c_str());
      }
      return kExitOk;
    }
    doctor::DoctorOptions o;
    o.level = args->level;
    o.keep_going = args->keep_going;
    o.vulkan = !args->no_vulkan;
    o.device.device = args->device;
    o.device.models_dir = args->models;
    o.device.gpu_mem_budget_mb = args->gpu_mem_mb;
    o.device.workers = args->workers;
    o.device.iterations = args->iterations;
    o.device.watchdog_ms = args->watchdog_ms;
    o.device.check_timeout_ms = args->check_timeout_ms;
    o.device.det_size = args->det_size;
    o.device.only = std::set<std::string>(args->only.begin(), args->only.end());
    doctor::DoctorReport report = doctor::run_doctor(o);
    if (!args->json_file.empty()) {
      std::ofstream f(args->json_file);
      f << doctor::report_to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      if (!f) std::fprintf(stderr, "steadyocr doctor: cannot write %s\n", args->json_file.c_str());
    }
    if (args->json) {
      std::printf("%s\n",
                  doctor::report_to_json(report).dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else {
      std::printf("%s", doctor::render_report_text(report).c_str());
    }
    std::fflush(stdout);
    return doctor::exit_code(report) == 0 ? kExitOk : kExitFailed;
  };
  return c;
}

}  // namespace steadyocr::cli

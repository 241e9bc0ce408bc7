// The four layers. Layers 1-2 are probe (facts) + evaluate (judgement, a pure function tested on
// synthetic facts). Layers 3-4 run their device work in child processes under a deadline.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "doctor/libraries.h"
#include "doctor/plugin_probe.h"
#include "doctor/probes.h"
#include "doctor/report.h"

namespace steadyocr::doctor {

// ---- layer 1: visibility
Layer1Facts probe_layer1();
std::vector<CheckResult> evaluate_layer1(const Layer1Facts& facts);

// ---- layer 2: driver / runtime / library ABI
struct Layer2Facts {
  DriverFacts driver;  // from layer 1 (driver CUDA version, devices and their compute capability)
  PluginFacts plugin;  // the plugin the engine loads (the newest the driver runs, or the pinned one)
  std::vector<PluginFileFacts> plugin_files;  // every plugin flavour: installed or not (check "plugins")
  CudnnFacts cudnn;
  CublasFacts cublas;
};
// Loads the plugin, then cuDNN and cuBLAS by the sonames the plugin links, then (when `query_runtime`)
// asks the plugin's CUDA runtime, which initialises it in this process.
// `every_plugin` false leaves plugin_files empty (the check "plugins" then says it was not probed): the engine's
// pre-flight, which runs at every GPU rung start and re-probe, needs only the plugin it loads, not a dlopen of each
// installed one with its cuBLAS.
Layer2Facts probe_layer2(const DriverFacts& driver, bool query_runtime, bool every_plugin = true);
std::vector<CheckResult> evaluate_layer2(const Layer2Facts& facts);

// What the plugin was built against, from the plugin or, when it says nothing, the release defaults.
PluginBuild effective_build(const PluginFacts& plugin);

// How a device of compute capability cc (e.g. 90) is served by a fatbinary.
enum class ArchMatch { kSass, kPtxJit, kNone };
// sm_XY SASS runs on devices of major X and minor >= Y; PTX of arch <= cc can be JIT-compiled.
ArchMatch match_arch(int cc, const std::vector<int>& sass, const std::vector<int>& ptx, int* picked);

// ---- layers 3-4: run in child processes (see device_checks.h)
struct DeviceCheckOptions {
  int device = 0;
  std::string models_dir;        // empty: no model-shape check
  size_t gpu_mem_budget_mb = 0;  // 0: budget check allocates a default share
  int workers = 4;
  int iterations = 20;
  int check_timeout_ms = 60000;  // deadline of one check's child process
  int watchdog_ms = 15000;       // layer 4: how long concurrent workers may take before it is a hang
  int det_size = 640;            // det input side used to specialise the det model for its conv shapes
  std::set<std::string> only;    // non-empty: run only these layer 3-4 checks (the others are reported skipped)
  // The steadyocr binary whose `doctor --internal-check` runs each check (empty: this process's own executable; the
  // Python module and the C library, which live in another program, name it).
  std::string executable;
};
std::vector<CheckResult> run_layer3(const DeviceCheckOptions& options);
std::vector<CheckResult> run_layer4(const DeviceCheckOptions& options);

}  // namespace steadyocr::doctor

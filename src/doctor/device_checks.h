// Layer 3-4 checks as they run inside a child process (`steadyocr doctor --internal-check NAME`): either
// the plugin's own diagnostics (run_check: raw CUDA/cuDNN/cuBLAS) or host-side checks that drive the CUDA
// backend through the Backend interface and compare with the CPU oracle.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"
#include "doctor/plugin_probe.h"

namespace steadyocr::doctor {

// What a child prints: {"status":"pass|warn|fail|skipped","code":"...","summary":"...","evidence":{...}}.
struct ChildCheckResult {
  std::string check;  // set when one child reports several checks (parts)
  std::string status = "pass";
  std::string code;
  std::string summary;
  nlohmann::json evidence = nlohmann::json::object();
  std::vector<ChildCheckResult> parts;  // non-empty: printed as {"results":[...]} instead

  nlohmann::json to_json() const;
  static ChildCheckResult from_json(const nlohmann::json& j);
};

ChildCheckResult make_child_result(std::string status, std::string code, std::string summary,
                                   nlohmann::json evidence = nlohmann::json::object());
// Whether STEADYOCR_DOCTOR_FAULT (comma-separated) names `fault`.
bool fault_injected(const std::string& fault);
// Free device memory as the plugin's mem_info check reports it.
Result<int64_t> free_device_bytes(const PluginFacts& plugin, int device);

// Names the plugin's run_check implements (raw device checks) vs. those run here on the Backend.
bool is_plugin_check(const std::string& name);

// Child entry point: runs one check and prints its result as one JSON line on stdout. Returns the exit
// status (0 when a result was printed).
int run_internal_check(const std::string& name, const std::string& args_json);

// The CUDA backend of a loaded plugin (destroyed through the plugin's destroy_backend).
Result<std::shared_ptr<Backend>> create_plugin_backend(const PluginFacts& plugin, int device,
                                                       const std::string& precision, size_t budget_bytes);

// Host-side checks (backend_checks.cpp). `args` carries device, models_dir, workers, iterations, ...
ChildCheckResult check_backend_ops(const PluginFacts& plugin, const nlohmann::json& args, bool fp16);
ChildCheckResult check_model_convs(const PluginFacts& plugin, const nlohmann::json& args);
ChildCheckResult check_backend_workers(const PluginFacts& plugin, const nlohmann::json& args);

// The input shape a PP-OCR model is typically run at, told apart by its output rank: det ([N,1,H,W]) at
// det_size x det_size, rec ([N,T,C]) at 48x320, cls ([N,2]) at 48x192; dimensions the model fixes are kept.
Shape typical_input_shape(const graph::Graph& model, int det_size);

// Maps a backend error to a finding code: L3_NO_KERNEL_IMAGE, L3_CUDNN_NOT_SUPPORTED, L3_STICKY_FAULT,
// L3_OUT_OF_MEMORY, L3_CUDNN_FAILED, L3_CUBLAS_FAILED or L3_CUDA_ERROR.
std::string code_for_backend_error(const Status& status);

}  // namespace steadyocr::doctor

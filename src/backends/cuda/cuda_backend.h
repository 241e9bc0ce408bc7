// The CUDA backend (cuda-fp32 / cuda-fp16) as seen through the Backend contract, and the state its prepared
// graphs share.
#pragma once

#include <condition_variable>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

#include "backends/backend.h"
#include "backends/cuda/backend_config.h"
#include "backends/cuda/device.h"
#include "backends/cuda/plan_builder.h"

namespace steadyocr::cuda {

// Shared by the backend and every plan it prepared (plans may outlive the backend object).
struct BackendState {
  std::shared_ptr<CudaDevice> device;
  Precision precision = Precision::kF32;
  std::string name;  // "cuda-fp32" / "cuda-fp16"
  bool use_graphs = true;
  int graph_arenas = BackendConfig::kDefaultGraphArenas;  // CUDA graphs a plan instance keeps (BackendConfig)
  bool calibrate = true;    // reduced precision: verify per layer on the first real input of each model
  bool debug_sync = false;  // synchronise and check after every step (BackendConfig::debug_sync)
  bool own_conv = true;     // depthwise/pointwise convolutions without cuDNN (BackendConfig::own_conv)
  bool own_arenas = false;  // BackendConfig::own_arenas
  int profile_ops = 0;      // BackendConfig::profile_ops
  bool cudnn = true;        // false: no convolution through cuDNN (BackendConfig::cudnn)
  std::mutex mu;
  std::map<std::string, std::set<std::string>> f32_nodes;  // model signature -> nodes kept in fp32
  // model signature -> the static rules' fp32 nodes (static_f32_nodes), worked out once by the model's first plan; the
  // plans that start before it finishes wait for its result (warm-up starts a dozen at once, and each scanning the
  // weights itself cost 116-131 ms of host time per fp16 warm-up where one scan takes ~13 ms).
  std::map<std::string, std::shared_future<std::shared_ptr<const std::set<std::string>>>> static_f32;
  // Signatures whose calibration is running: one plan calibrates a model, the plans of its other shapes wait for the
  // result (warm-up plans dozens at once; each calibrating on its own ran fp32 keep-all plans of up to 2.5 GiB).
  std::set<std::string> calibrating;
  std::condition_variable calibrated;
  // model signature -> the smallest input (elements) whose calibration the memory budget refused: its fp32 keep-all
  // check did not fit. Inputs as large or larger do not try again (each try builds a keep-all plan first); they run
  // with the static policy until a smaller input calibrates the model, and then take its result.
  std::map<std::string, int64_t> calibration_too_large;
};

class CudaBackend final : public Backend {
 public:
  // Creates the backend as `config` says (device, precision, budget, lanes made now, debug switches).
  static Result<std::unique_ptr<CudaBackend>> create(const BackendConfig& config);
  std::string name() const override { return state_->name; }
  DeviceInfo device_info() const override;
  bool supports(const graph::Node& node) const override;
  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override;
  // One plan for every input shape, shared by every call in flight (CudaSymbolicPlan, symbolic_plan.h).
  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override;

 private:
  explicit CudaBackend(std::shared_ptr<BackendState> s) : state_(std::move(s)) {}
  std::shared_ptr<BackendState> state_;
  DeviceInfo info_;
};

// "det" (N,1,H,W probability map), "rec" (N,T,classes), "cls" (N,classes) or "model": the name used by fault
// rules and metrics labels.
std::string model_role(const graph::Graph& g);
// Identifies a model across shape buckets (same nodes, any input shape).
std::string model_signature(const graph::Graph& g);

}  // namespace steadyocr::cuda

// One planned shape bucket: its arena and plan; each run leases an execution lane (stream, handles, events) from the
// device, so plans cost no streams or handles of their own. Replayed as a CUDA graph after the first good run.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/faults.h"
#include "backends/cuda/plan_builder.h"

namespace steadyocr::cuda {

class CudaPreparedGraph final : public PreparedGraph {
 public:
  static Result<std::unique_ptr<PreparedGraph>> create(std::shared_ptr<BackendState> state, const graph::Graph& g);
  ~CudaPreparedGraph() override;
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  size_t workspace_bytes() const override;

 private:
  explicit CudaPreparedGraph(std::shared_ptr<BackendState> state) : state_(std::move(state)) {}
  Status init(const graph::Graph& g);
  Status run_once(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs);
  Status stage_inputs(const Plan& plan, const std::vector<Tensor>& inputs);
  Status ensure_precision(const std::vector<Tensor>& inputs);
  Status rebuild(const std::set<std::string>& f32_nodes);
  void capture();
  void record_stage_times();
  void drop_graph();
  ExecContext context(const Plan& plan) const;

  std::shared_ptr<BackendState> state_;
  graph::Graph graph_;  // kept for rebuilding after the reduced-precision calibration
  std::string role_, signature_;
  std::unique_ptr<Plan> plan_;
  std::set<std::string> built_f32_;  // f32 nodes the plan was built with
  bool precision_settled_ = false;
  Handles* lane_ = nullptr;          // the lane leased for the run in progress
  DeviceMemoryPtr graph_cublas_ws_;  // cuBLAS workspace baked into the captured graph (lanes' own are shared)
  double host_copy_ms_ = 0;
  cudaGraphExec_t exec_ = nullptr;
  bool graph_disabled_ = false;
  int good_runs_ = 0;
  // Host staging of the run in flight, from the device's pinned pool (never held between runs: a plan of a shape
  // seen once would otherwise keep page-locked memory that only a cudaHostAlloc can replace).
  std::vector<PinnedPtr> staging_;
};

// Enqueues every step of `plan` (eagerly) on ctx.stream; errors name the step. With sync_each, waits for each
// step and checks it (STEADYOCR_CUDA_DEBUG_SYNC=1: attributes an asynchronous fault to its step).
Status enqueue_plan(const Plan& plan, const ExecContext& ctx, bool sync_each = false);

}  // namespace steadyocr::cuda

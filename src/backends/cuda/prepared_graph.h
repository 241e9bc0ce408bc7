// One planned shape bucket: its plan; each run leases an execution lane (stream, cuDNN/cuBLAS handles, events) and
// an activation arena from the device, so plans cost neither lanes nor memory of their own: device memory follows
// the runs in flight, not the shapes cached. Replayed as CUDA graphs after the first good run, one per arena the plan
// ran on (up to BackendConfig::graph_arenas; graph_policy.h).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/faults.h"
#include "backends/cuda/graph_policy.h"
#include "backends/cuda/plan_builder.h"

namespace steadyocr::cuda {

// What an instance of a plan for every shape (CudaSymbolicPlan) is built from besides its graph: the model's names and
// the schedule, worked out once per model.
struct InstanceSource {
  std::string role, signature;
  const std::vector<const graph::Node*>* order = nullptr;  // the graph's schedule
  WeightMemo* weights = nullptr;                           // the graph's constants on the device (PlanOptions)
};

// Where a plan's preparation went, ms (the debug line of each new shape; issue 13's 0.5 ms bar).
struct PrepareTimes {
  double graph = 0;     // the graph copied (and its epilogues expanded) for the plan to keep
  double lane = 0;      // an execution lane leased for cuDNN's queries
  double cudnn = 0;     // a cuDNN handle leased
  double builder = 0;   // PlanBuilder::build (its own parts: Plan::build_times)
  std::string top_ops;  // an instance's (create_instance) costliest op builders, at debug level (PlanBuilder::top_ops)
};

class CudaPreparedGraph final : public PreparedGraph {
 public:
  // Plans `g` (static shapes), keeping a copy of it.
  static Result<std::unique_ptr<PreparedGraph>> create(std::shared_ptr<BackendState> state, const graph::Graph& g);
  // Plans `expanded` (static shapes, epilogues expanded) without copying it: it is only read while this call builds,
  // unless the model's reduced precision is still to be calibrated (the plan then keeps a copy to rebuild on).
  static Result<std::unique_ptr<CudaPreparedGraph>> create_instance(std::shared_ptr<BackendState> state,
                                                                    const graph::Graph& expanded,
                                                                    const InstanceSource& source);
  ~CudaPreparedGraph() override;
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  size_t workspace_bytes() const override;
  RunProfile last_profile() const override { return profile_; }
  const PrepareTimes& prepare_times() const { return times_; }
  const Plan& plan() const { return *plan_; }

 private:
  explicit CudaPreparedGraph(std::shared_ptr<BackendState> state)
      : state_(std::move(state)), graphs_(state_->graph_arenas) {}
  Status init(const graph::Graph& g);
  // Builds the plan on `g` (graph_ itself, or a borrowed graph); `order`: g's schedule when known.
  Status build_first(const graph::Graph& g, const std::vector<const graph::Node*>* order);
  Status run_once(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs);
  Status stage_inputs(const Plan& plan, const std::vector<Tensor>& inputs);
  Status ensure_precision(const std::vector<Tensor>& inputs);
  Status rebuild(const std::set<std::string>& f32_nodes);
  // Captures the plan into a CUDA graph for the run's arena (a failure only disables graphs for this bucket); an error
  // means the lane's cuBLAS workspace could not be restored, so the lane must not go back to the pool.
  Status capture();
  // Leases a cuDNN handle for the rest of the run (plan builds, eager enqueues, captures), unless it holds one.
  Status need_cudnn();
  void record_stage_times();
  void drop_graphs();
  void destroy_graph(cudaGraphExec_t exec);
  ExecContext context(const Plan& plan) const;
  PlanOptions plan_options() const;  // what every plan of this backend is built with (before calibration)

  std::shared_ptr<BackendState> state_;
  graph::Graph graph_;  // kept for rebuilding after the reduced-precision calibration (when owns_graph_)
  bool owns_graph_ = false;
  WeightMemo* weights_ = nullptr;  // during create_instance's build only (InstanceSource::weights)
  bool instance_ = false;          // made by create_instance (an instance of a plan for every shape)
  PrepareTimes times_;
  std::string role_, signature_;
  std::unique_ptr<Plan> plan_;
  std::set<std::string> built_f32_;  // f32 nodes the plan was built with
  bool precision_settled_ = false;
  Lane* lane_ = nullptr;     // the lane leased for the run in progress
  bool lane_dirty_ = false;  // that lane's state is no longer the pool's: discard it after the run
  CudnnLease cudnn_;         // held from the first step of the run that calls cuDNN to the run's end
  // The activation arena leased for the run in progress: [cuBLAS workspace of a captured graph | the plan's
  // buffers]. The plan is bound to whichever arena its run gets (the one of its graph when free).
  Arena arena_;
  size_t arena_ws_bytes_ = 0;
  DeviceMemoryPtr graph_cublas_ws_;  // the graph's cuBLAS workspace when the plan has an arena of its own
  Status lease_arena();
  double host_copy_ms_ = 0;
  RunProfile profile_;  // the last run's
  // The plan's CUDA graphs, one per arena it was captured on (each replays only there), and when to capture another.
  ArenaGraphs<cudaGraphExec_t> graphs_;
  bool graph_disabled_ = false;
  int good_runs_ = 0;  // good runs since the plan was built
  // Host staging of the run in flight, from the device's pinned pool (never held between runs: a plan of a shape
  // seen once would otherwise keep page-locked memory that only a cudaHostAlloc can replace).
  std::vector<PinnedPtr> staging_;
  // BackendConfig::profile_ops: an event after each step, and device ms summed per step over the profiled runs.
  std::vector<cudaEvent_t> step_events_;
  std::vector<double> step_ms_;
  int profiled_runs_ = 0;
  // The plan with an event after each step (STEADYOCR_CUDA_PROFILE_OPS); `capturing`: into a CUDA graph, whose
  // replays then time every step without the host's launch gaps.
  Status enqueue_profiled(const Plan& plan, const ExecContext& ctx, bool capturing);
  // Adds this run's step times; `replayed`: the run was a graph replay. The first run of a plan whose later runs
  // replay a graph is left out (its gaps are the host's launches, not the device's work).
  void record_step_times(const Plan& plan, bool replayed, bool graphs);
};

// The step runner: enqueues every step of `plan` (eagerly) on ctx.stream; errors name the step. With sync_each,
// waits for each step and checks it (BackendConfig::debug_sync: attributes an asynchronous fault to its step).
// `fault` is the fault armed for this run (faults::on_run): a per-step one (no_kernel_image, cudnn_not_supported)
// fails the first step that calls its library (Step::calls) with the error that library gives, instead of
// enqueueing it; the ops themselves know nothing of faults.
Status enqueue_plan(const Plan& plan, const ExecContext& ctx, bool sync_each = false,
                    faults::Kind fault = faults::Kind::kNone);

}  // namespace steadyocr::cuda

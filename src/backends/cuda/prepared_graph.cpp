#include "backends/cuda/prepared_graph.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <future>
#include <map>
#include <numeric>
#include <optional>

#include "backends/cuda/check.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/precision.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::cuda {
namespace {

// The library a per-step fault belongs to (StepCalls bits); 0 for the faults that act on the whole run.
unsigned library_of(faults::Kind fault) {
  switch (fault) {
    case faults::Kind::kNoKernelImage:
      return kCallsOwnKernels;
    case faults::Kind::kCudnnNotSupported:
      return kCallsCudnn;
    default:
      return 0;
  }
}

// The error the step's call into that library gives on a GPU our fatbinary lacks, or with a cuDNN that has no
// engine for the problem.
Status injected_step_error(faults::Kind fault) {
  if (fault == faults::Kind::kNoKernelImage) {
    return gpu_status(cudaErrorNoKernelImageForDevice, "kernel launch [injected no_kernel_image]", __FILE__, __LINE__);
  }
  return gpu_status(CUDNN_STATUS_NOT_SUPPORTED, "cuDNN convolution [injected cudnn_not_supported]", __FILE__, __LINE__);
}

}  // namespace

Status enqueue_plan(const Plan& plan, const ExecContext& ctx, bool sync_each, faults::Kind fault) {
  unsigned armed = library_of(fault);  // hits one step per run
  for (const auto& s : plan.steps) {
    Status st;
    if (armed != 0 && (s->calls() & armed) != 0) {
      armed = 0;
      st = injected_step_error(fault);
    } else {
      st = s->enqueue(ctx);
    }
    if (st.is_ok() && sync_each) {
      cudaError_t e = cudaStreamSynchronize(ctx.stream);
      if (e != cudaSuccess) st = gpu_status(e, "cudaStreamSynchronize after the step", __FILE__, __LINE__);
    }
    if (!st.is_ok()) return st.with_context(s->label);
  }
  return Status::ok();
}

Result<std::unique_ptr<PreparedGraph>> CudaPreparedGraph::create(std::shared_ptr<BackendState> state,
                                                                 const graph::Graph& g) {
  std::unique_ptr<CudaPreparedGraph> pg(new CudaPreparedGraph(std::move(state)));
  RETURN_IF_ERROR(pg->init(g));
  return std::unique_ptr<PreparedGraph>(std::move(pg));
}

Result<std::unique_ptr<CudaPreparedGraph>> CudaPreparedGraph::create_instance(std::shared_ptr<BackendState> state,
                                                                              const graph::Graph& expanded,
                                                                              const InstanceSource& source) {
  std::unique_ptr<CudaPreparedGraph> pg(new CudaPreparedGraph(std::move(state)));
  pg->role_ = source.role;
  pg->signature_ = source.signature;
  pg->weights_ = source.weights;
  pg->instance_ = true;
  RETURN_IF_ERROR(pg->build_first(expanded, source.order));
  pg->weights_ = nullptr;  // the memo is the graph copy's, used by one build at a time
  return pg;
}

Status CudaPreparedGraph::init(const graph::Graph& g) {
  Stopwatch graph_sw;
  graph_ = g.clone();
  owns_graph_ = true;
  // The stages of fused epilogues become elementwise steps again, which the plan's program fusion merges into the
  // convolution's epilogue (backends/cuda/fusion.cpp): the plans are those of the unfused graph.
  graph::expand_epilogues(graph_);
  role_ = model_role(graph_);
  signature_ = model_signature(graph_);
  times_.graph = graph_sw.elapsed_ms();
  metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "graph"}}, times_.graph);
  return build_first(graph_, nullptr);
}

Status CudaPreparedGraph::build_first(const graph::Graph& g, const std::vector<const graph::Node*>* order) {
  CudaDevice& dev = *state_->device;
  SO_GPU_CHECK(cudaSetDevice(dev.index()));
  PlanOptions opts = plan_options();
  opts.order = order;
  opts.weights = weights_;
  if (state_->precision == Precision::kF16) {
    Stopwatch rules;
    using Rules = std::shared_ptr<const std::set<std::string>>;
    std::shared_future<Rules> rules_ready;
    std::promise<Rules> mine;  // set when this plan is the model's first
    bool first = false;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      auto it = state_->f32_nodes.find(signature_);
      if (it != state_->f32_nodes.end()) {
        opts.force_f32 = it->second;
        precision_settled_ = true;
      }
      auto st = state_->static_f32.find(signature_);
      if (st == state_->static_f32.end()) {
        first = true;
        st = state_->static_f32.emplace(signature_, mine.get_future().share()).first;
      }
      rules_ready = st->second;
    }
    if (first) {
      metrics::inc("steadyocr_cuda_static_precision_scans_total");
      try {
        mine.set_value(std::make_shared<const std::set<std::string>>(static_f32_nodes(g)));
      } catch (...) {
        mine.set_exception(std::current_exception());  // the waiting plans see it too, none waits forever
        throw;
      }
    }
    opts.static_f32 = rules_ready.get();
    // The scan's own time, and apart from it the time later plans waited for it.
    metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", first ? "static_precision" : "static_precision_wait"}},
                 rules.elapsed_ms());
  } else {
    precision_settled_ = true;
  }
  if (!state_->calibrate) precision_settled_ = true;
  // A plan whose precision is still to be calibrated rebuilds on its graph afterwards: an instance of a plan for
  // every shape (whose graph is borrowed) keeps a copy of its own until then.
  if (!precision_settled_ && !owns_graph_) {
    Stopwatch copying;
    graph_ = g.clone();
    owns_graph_ = true;
    times_.graph += copying.elapsed_ms();
  }
  built_f32_ = opts.force_f32;
  opts.lease_arena = !state_->own_arenas;
  // A lane (for its stream) and a cuDNN handle only when the build must ask cuDNN something: under load both are
  // held by runs, and a new shape whose convolutions the device's cache answers waits for neither.
  std::optional<Lane> lane;
  CudnnLease dnn;
  opts.cudnn_source = [&]() -> Result<cudnnHandle_t> {
    if (!state_->cudnn) return unavailable("cuDNN is not used by " + state_->name);
    Stopwatch setup;
    ASSIGN_OR_RETURN(Lane l, dev.acquire_lane());
    lane.emplace(std::move(l));
    times_.lane = setup.elapsed_ms();
    metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "setup"}}, times_.lane);
    Stopwatch leasing;
    ASSIGN_OR_RETURN(dnn, dev.lease_cudnn(lane->stream));
    times_.cudnn = leasing.elapsed_ms();
    metrics::inc("steadyocr_cuda_cudnn_lease_ms_total", {{"for", "plan"}}, times_.cudnn);
    return dnn.get();
  };
  Stopwatch builder_sw;
  PlanBuilder builder(dev, nullptr, g, std::move(opts));
  auto plan = builder.build();
  times_.builder = builder_sw.elapsed_ms() - times_.lane - times_.cudnn;
  metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "builder"}}, times_.builder);
  // An instance's line is its plan's (CudaSymbolicPlan), logged after that plan has timed the whole instance.
  if (plan.is_ok() && instance_ && log::level() <= log::Level::kDebug) times_.top_ops = builder.top_ops();
  if (plan.is_ok() && !instance_) builder.log_summary();
  dnn = CudnnLease();
  if (lane && !device_lost()) dev.release_lane(std::move(*lane));
  if (!plan.is_ok()) return plan.status();
  plan_ = std::move(plan).value();
  // Runs lease their arena; a plan whose arena cannot fit the budget beside the weights is refused now, with the
  // figures, rather than at its first run.
  const size_t budget = dev.pool()->budget(), weights = dev.weight_bytes();
  if (budget > 0 && plan_->arena_bytes + weights > budget) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("GPU memory budget exceeded: {} at {} needs an activation arena of {:.1f} MiB beside "
                              "{:.1f} MiB of weights, over the budget of {:.1f} MiB; raise --gpu-mem or lower the "
                              "image size / batch",
                              role_, plan_->inputs.empty() ? "?" : shape_str(plan_->inputs[0].shape),
                              plan_->arena_bytes / 1048576.0, weights / 1048576.0, budget / 1048576.0));
  }
  return Status::ok();
}

CudaPreparedGraph::~CudaPreparedGraph() {
  // Runs are synchronous: nothing of this plan is in flight once no run holds it.
  if (state_ && state_->device) SO_GPU_TRY(cudaSetDevice(state_->device->index()));
  drop_graphs();
  for (cudaEvent_t e : step_events_) SO_GPU_TRY(cudaEventDestroy(e));
  plan_.reset();
}

size_t CudaPreparedGraph::workspace_bytes() const {
  return plan_ ? plan_->arena_bytes : 0;  // what a run leases
}

namespace {
std::atomic<int64_t> g_graphs_held{0};  // CUDA graph execs held by every plan of the process
}  // namespace

void CudaPreparedGraph::destroy_graph(cudaGraphExec_t exec) {
  if (!exec) return;
  SO_GPU_TRY(cudaGraphExecDestroy(exec));
  metrics::set_gauge("steadyocr_cuda_graphs_held", {}, static_cast<double>(--g_graphs_held));
}

void CudaPreparedGraph::drop_graphs() {
  for (cudaGraphExec_t e : graphs_.clear()) destroy_graph(e);
}

Status CudaPreparedGraph::lease_arena() {
  if (plan_->arena) return Status::ok();  // a plan with an arena of its own (BackendConfig::own_arenas)
  // Room for the cuBLAS workspace a captured graph bakes in: it must be the arena's, not the lane's (which other
  // plans use while the graph replays).
  arena_ws_bytes_ = lane_->cublas_workspace ? lane_->cublas_workspace->bytes : 0;
  // The arenas of the plan's graphs first (the most recently replayed first), else the one it is bound to.
  std::vector<uint64_t> prefer = graphs_.arenas();
  if (plan_->bound_arena != 0) prefer.push_back(plan_->bound_arena);
  ASSIGN_OR_RETURN(arena_, state_->device->acquire_arena(arena_ws_bytes_ + plan_->arena_bytes, prefer));
  if (plan_->bound_arena != arena_.id) {
    RETURN_IF_ERROR(bind_arena(*plan_, static_cast<char*>(arena_.mem->ptr) + arena_ws_bytes_, arena_.id));
  }
  return Status::ok();
}

PlanOptions CudaPreparedGraph::plan_options() const {
  PlanOptions o;
  o.precision = state_->precision;
  o.own_conv = state_->own_conv;
  o.cudnn = state_->cudnn;
  return o;
}

ExecContext CudaPreparedGraph::context(const Plan& plan) const {
  ExecContext ctx;
  ctx.stream = lane_->stream;
  ctx.cudnn = cudnn_.get();  // null unless the run holds a cuDNN lease (need_cudnn)
  ctx.cublas = lane_->cublas;
  const bool bound = plan.arena || plan.bound_arena != 0;
  ctx.workspace = bound ? plan.bindings.ptr(plan.workspace) : nullptr;
  ctx.workspace_bytes = bound ? plan.workspace_bytes : 0;
  return ctx;
}

Status CudaPreparedGraph::stage_inputs(const Plan& plan, const std::vector<Tensor>& inputs) {
  Stopwatch sw;
  staging_.clear();
  std::vector<const void*> src(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DevTensor& t = plan.inputs[i];
    // Page-locked inputs go straight to the device; others through a pinned staging buffer (one host copy).
    src[i] = inputs[i].raw();
    cudaPointerAttributes attr{};
    if (cudaPointerGetAttributes(&attr, src[i]) != cudaSuccess || attr.type != cudaMemoryTypeHost) {
      (void)cudaGetLastError();
      ASSIGN_OR_RETURN(PinnedPtr buf, state_->device->pinned()->get(t.nbytes()));
      std::memcpy(buf->ptr, src[i], t.nbytes());
      src[i] = buf->ptr;
      staging_.push_back(std::move(buf));
    }
  }
  // The upload's events bracket the copies alone (the host copies above are staging_ms).
  SO_GPU_CHECK(cudaEventRecord(lane_->events[0], lane_->stream));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DevTensor& t = plan.inputs[i];
    SO_GPU_CHECK(cudaMemcpyAsync(plan.bindings.ptr(t.ref), src[i], t.nbytes(), cudaMemcpyHostToDevice, lane_->stream));
  }
  host_copy_ms_ = sw.elapsed_ms();
  return Status::ok();
}

Status CudaPreparedGraph::enqueue_profiled(const Plan& plan, const ExecContext& ctx, bool capturing) {
  if (step_events_.size() != plan.steps.size()) {
    for (cudaEvent_t e : step_events_) SO_GPU_TRY(cudaEventDestroy(e));
    step_events_.assign(plan.steps.size(), nullptr);
    for (auto& e : step_events_) SO_GPU_CHECK(cudaEventCreate(&e));
    step_ms_.assign(plan.steps.size(), 0.0);
    profiled_runs_ = 0;
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const Status st = plan.steps[i]->enqueue(ctx);
    if (!st.is_ok()) return st.with_context(plan.steps[i]->label);
    // Inside a capture a plain record only orders streams; an external one becomes a record node of the graph.
    SO_GPU_CHECK(capturing ? cudaEventRecordWithFlags(step_events_[i], ctx.stream, cudaEventRecordExternal)
                           : cudaEventRecord(step_events_[i], ctx.stream));
  }
  return Status::ok();
}

void CudaPreparedGraph::record_step_times(const Plan& plan, bool replayed, bool graphs) {
  if (step_events_.size() != plan.steps.size()) return;
  if (graphs && !replayed && good_runs_ == 0) return;  // the run before the capture
  cudaEvent_t prev = lane_->events[1];
  for (size_t i = 0; i < step_events_.size(); ++i) {
    float ms = 0;
    if (!SO_GPU_TRY(cudaEventElapsedTime(&ms, prev, step_events_[i]))) return;
    step_ms_[i] += ms;
    prev = step_events_[i];
  }
  if (++profiled_runs_ % state_->profile_ops != 0) return;
  // Per op kind (the label's first word: "Conv", "MatMul", ...) and the slowest steps, averaged per run.
  std::map<std::string, std::pair<double, int>> kinds;
  double total = 0;
  for (size_t i = 0; i < step_ms_.size(); ++i) {
    const std::string& l = plan.steps[i]->label;
    auto& k = kinds[l.substr(0, l.find(' '))];
    k.first += step_ms_[i];
    ++k.second;
    total += step_ms_[i];
  }
  std::vector<std::pair<double, std::string>> by_kind;
  for (const auto& [name, v] : kinds) {
    by_kind.push_back({v.first, fmt::format("{} x{} {:.3f}", name, v.second, v.first / profiled_runs_)});
  }
  std::sort(by_kind.rbegin(), by_kind.rend());
  std::vector<size_t> order(step_ms_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return step_ms_[a] > step_ms_[b]; });
  std::string kinds_text, steps_text;
  for (const auto& [ms, text] : by_kind) kinds_text += (kinds_text.empty() ? "" : ", ") + text;
  for (size_t i = 0; i < order.size() && i < 8; ++i) {
    steps_text +=
        fmt::format("{}{} {:.3f}", i ? ", " : "", plan.steps[order[i]]->label, step_ms_[order[i]] / profiled_runs_);
  }
  log::info("cuda",
            "op profile {} {} ({} steps, {} runs{}): {:.3f} ms per run on the device; by op kind: {}; slowest: {}",
            role_, signature_, step_ms_.size(), profiled_runs_,
            replayed ? ", graph replays"
                     : ", eager (launch gaps "
                       "included)",
            total / profiled_runs_, kinds_text, steps_text);
  // Every step in plan order, for comparing two builds step by step (--log-level debug; not built otherwise).
  if (log::level() > log::Level::kDebug) return;
  std::string all_text;
  for (size_t i = 0; i < step_ms_.size(); ++i) {
    all_text += fmt::format("{}{} {:.4f}", i ? "; " : "", plan.steps[i]->label, step_ms_[i] / profiled_runs_);
  }
  log::debug("cuda", "op profile steps {} {}: {}", role_, signature_, all_text);
}

void CudaPreparedGraph::record_stage_times() {
  float h2d = 0, compute = 0, d2h = 0;
  const cudaEvent_t* ev = lane_->events;
  if (!SO_GPU_TRY(cudaEventElapsedTime(&h2d, ev[0], ev[1])) ||
      !SO_GPU_TRY(cudaEventElapsedTime(&compute, ev[1], ev[2])) ||
      !SO_GPU_TRY(cudaEventElapsedTime(&d2h, ev[2], ev[3]))) {
    return;  // timings only; the failure is logged
  }
  profile_.measured = true;
  profile_.staging_ms = host_copy_ms_;
  profile_.upload_ms = h2d;
  profile_.compute_ms = compute;
  profile_.download_ms = d2h;
  const std::string& b = state_->name;
  metrics::inc("steadyocr_cuda_stage_ms_total", {{"model", role_}, {"backend", b}, {"stage", "host_staging"}},
               host_copy_ms_);
  metrics::inc("steadyocr_cuda_stage_ms_total", {{"model", role_}, {"backend", b}, {"stage", "h2d"}}, h2d);
  metrics::inc("steadyocr_cuda_stage_ms_total", {{"model", role_}, {"backend", b}, {"stage", "compute"}}, compute);
  metrics::inc("steadyocr_cuda_stage_ms_total", {{"model", role_}, {"backend", b}, {"stage", "d2h"}}, d2h);
}

Status CudaPreparedGraph::rebuild(const std::set<std::string>& f32_nodes) {
  drop_graphs();
  PlanOptions opts = plan_options();
  opts.force_f32 = f32_nodes;
  opts.lease_arena = !state_->own_arenas;
  plan_.reset();
  RETURN_IF_ERROR(need_cudnn());
  PlanBuilder builder(*state_->device, cudnn_.get(), graph_, opts);
  ASSIGN_OR_RETURN(plan_, builder.build());
  builder.log_summary();
  built_f32_ = f32_nodes;
  good_runs_ = 0;
  graphs_.reset();
  return Status::ok();
}

Status CudaPreparedGraph::ensure_precision(const std::vector<Tensor>& inputs) {
  if (precision_settled_) return Status::ok();
  int64_t numel = 0;
  for (const Tensor& t : inputs) numel += t.numel();
  {
    // One calibration per model at a time: a plan whose model is being calibrated waits for the result (it holds a
    // lane but no cuDNN handle and no arena, so the calibrating run never waits for it).
    std::unique_lock<std::mutex> lock(state_->mu);
    for (;;) {
      auto it = state_->f32_nodes.find(signature_);
      if (it != state_->f32_nodes.end()) {
        precision_settled_ = true;
        std::set<std::string> settled = it->second;
        lock.unlock();
        return settled == built_f32_ ? Status::ok() : rebuild(settled);
      }
      // An input at least as large as one whose check did not fit the budget runs with the static policy for now
      // (unsettled: a later run takes the model's result once a smaller input has calibrated it).
      auto too_large = state_->calibration_too_large.find(signature_);
      if (too_large != state_->calibration_too_large.end() && numel >= too_large->second) {
        metrics::inc("steadyocr_cuda_precision_calibration_deferred_total",
                     {{"model", role_}, {"reason", "too_large"}});
        return Status::ok();
      }
      if (state_->calibrating.insert(signature_).second) break;
      metrics::inc("steadyocr_cuda_precision_calibration_waits_total", {{"model", role_}});
      state_->calibrated.wait(lock);
    }
  }
  struct Done {  // the next waiter calibrates when this one failed
    BackendState& st;
    const std::string& sig;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(st.mu);
        st.calibrating.erase(sig);
      }
      st.calibrated.notify_all();
    }
  } done{*state_, signature_};
  Stopwatch sw;
  RETURN_IF_ERROR(need_cudnn());
  auto cal =
      calibrate_precision(*state_->device, cudnn_.get(), context(*plan_), graph_, inputs, built_f32_, plan_options());
  if (!cal.is_ok()) {
    if (cal.status().code() == StatusCode::kDeviceFault) {
      precision_settled_ = true;
      return cal.status();
    }
    if (cal.status().code() == StatusCode::kResourceExhausted) {
      // The fp32 keep-all check of this input needs more memory than the budget has: a smaller input calibrates
      // the model (the engine's self-test runs small ones), and this plan takes that result on a later run.
      bool first = false;
      {
        std::lock_guard<std::mutex> lock(state_->mu);
        auto [it, inserted] = state_->calibration_too_large.try_emplace(signature_, numel);
        first = inserted;
        it->second = std::min(it->second, numel);
      }
      metrics::inc("steadyocr_cuda_precision_calibration_deferred_total", {{"model", role_}, {"reason", "budget"}});
      std::string why = cal.status().message();
      why = why.substr(0, why.find("; raise"));  // the pool's advice is for a run; this one runs regardless
      const std::string what = fmt::format(
          "{} calibration for {} waits for a smaller input: the fp32 check of a {}-element input does not "
          "fit the memory budget ({}); until then its runs keep the static per-layer policy",
          state_->name, role_, numel, why);
      if (first) {
        log::info("cuda", "{}", what);
      } else {
        log::debug("cuda", "{}", what);
      }
      return Status::ok();
    }
    precision_settled_ = true;
    log::warn("cuda", "{} calibration for {} could not run ({}); keeping the static per-layer policy", state_->name,
              role_, cal.status().to_string());
    return Status::ok();
  }
  precision_settled_ = true;
  log::info("cuda", "{} precision for {} ({:.0f} ms): {}", state_->name, role_, sw.elapsed_ms(), cal->summary);
  metrics::inc("steadyocr_cuda_precision_calibrations_total", {{"model", role_}});
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    state_->f32_nodes[signature_] = cal->f32_nodes;
  }
  return cal->f32_nodes == built_f32_ ? Status::ok() : rebuild(cal->f32_nodes);
}

Status CudaPreparedGraph::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  Status s;
  profile_ = {};
  if (device_lost()) {
    s = run_once(inputs, outputs);  // names the first sticky error without touching the device
  } else {
    Stopwatch acquiring;
    auto lane = state_->device->acquire_lane();
    profile_.acquire_ms = acquiring.elapsed_ms();
    if (!lane.is_ok()) {
      s = lane.status();
    } else {
      lane_ = &lane.value();
      lane_dirty_ = false;
      s = run_once(inputs, outputs);
      if (!s.is_ok() && s.code() != StatusCode::kDeviceFault) {
        SO_GPU_TRY(cudaStreamSynchronize(lane_->stream));  // leave nothing of the failed run in flight
        s = with_context_state(std::move(s));
      }
      // Nothing of the run is in flight any more (synchronised above or in run_once), unless the context is lost.
      if (device_lost()) {
        arena_ = Arena();
      } else {
        state_->device->release_arena(std::move(arena_));
      }
      cudnn_ = CudnnLease();
      lane_ = nullptr;
      // A lane of a lost context is dropped with the process; otherwise the next run takes it.
      if (lane_dirty_ && !device_lost()) {
        state_->device->discard_lane(std::move(lane).value());
      } else if (!device_lost()) {
        state_->device->release_lane(std::move(lane).value());
      }
    }
  }
  metrics::inc(
      "steadyocr_cuda_runs_total",
      {{"model", role_}, {"backend", state_->name}, {"result", s.is_ok() ? "ok" : status_code_name(s.code())}});
  return s;
}

Status CudaPreparedGraph::run_once(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  if (device_lost()) {
    GpuErrorRecord r = first_sticky_error();
    return Status(StatusCode::kDeviceFault,
                  fmt::format("the CUDA context of this process was lost earlier ({} at {}:{} in '{}'); restart the "
                              "worker or process to use the GPU again",
                              r.name, r.file, r.line, r.expression));
  }
  if (inputs.size() != plan_->inputs.size()) {
    return invalid_argument(fmt::format("expected {} inputs, got {}", plan_->inputs.size(), inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DevTensor& t = plan_->inputs[i];
    if (inputs[i].dtype() != t.dtype || inputs[i].shape() != t.shape) {
      return invalid_argument(fmt::format("input {} is {}; this plan was prepared for {}[{}]", i, inputs[i].describe(),
                                          dtype_name(t.dtype), shape_str(t.shape)));
    }
  }
  SO_GPU_CHECK(cudaSetDevice(state_->device->index()));
  const faults::Kind fault = faults::on_run(role_);
  if (fault == faults::Kind::kOom) {
    // A real allocation failure (non-sticky): more than any device has.
    void* p = nullptr;
    cudaError_t e = cudaMalloc(&p, size_t{1} << 52);
    if (e == cudaSuccess) SO_GPU_TRY(cudaFree(p));
    return gpu_status(e == cudaSuccess ? cudaErrorMemoryAllocation : e, "cudaMalloc(&p, 1 << 52) [injected oom]",
                      __FILE__, __LINE__);
  }
  RETURN_IF_ERROR(ensure_precision(inputs));
  // A calibration's cuDNN handle goes back before the arena is leased: a run waits for a handle only while it holds an
  // arena, never for an arena while it holds a handle, so the two waits cannot close a circle.
  cudnn_ = CudnnLease();
  Stopwatch leasing;
  RETURN_IF_ERROR(lease_arena());
  profile_.acquire_ms += leasing.elapsed_ms();
  const Plan& plan = *plan_;
  RETURN_IF_ERROR(stage_inputs(plan, inputs));
  if (fault == faults::Kind::kIllegalAddress) {
    SO_GPU_CHECK(k::launch_illegal_address(lane_->stream));
    SO_GPU_CHECK(cudaStreamSynchronize(lane_->stream));
    return internal_error("injected illegal address did not fault");
  }
  if (fault == faults::Kind::kHang) {
    ASSIGN_OR_RETURN(const volatile int* flag, faults::hang_flag());
    SO_GPU_CHECK(k::launch_spin(flag, faults::hang_timeout_ms(), lane_->stream));
  }
  // A bucket seen a second time is captured into a CUDA graph and replayed from then on; a bucket seen once
  // never pays for the capture. A graph replays only on the arena it was captured on: the plan keeps one per arena it
  // ran on, up to BackendConfig::graph_arenas, and a run on an arena without one captures there while there is room,
  // else after two such runs in place of the least recently used graph, after a wait when that one had not paid
  // (ArenaGraphs: with many runs in flight, captures that rarely replay only cost the host).
  // Profiling replays the same graphs, with an event after each step captured in them (enqueue_profiled).
  const bool profiling = state_->profile_ops > 0 && fault == faults::Kind::kNone && !state_->debug_sync;
  const bool graphs = fault == faults::Kind::kNone && state_->use_graphs && !state_->debug_sync && !graph_disabled_;
  const cudaGraphExec_t* exec = graphs ? graphs_.replay(arena_.id) : nullptr;
  if (graphs && !exec) {
    const int waits = graphs_.waits();
    if (auto old = graphs_.evict(good_runs_)) destroy_graph(*old);
    if (graphs_.waits() != waits) metrics::inc("steadyocr_cuda_graph_capture_waits_total", {{"model", role_}});
    if (graphs_.should_capture(good_runs_)) {
      RETURN_IF_ERROR(capture());
      exec = graphs_.replay(arena_.id);
    }
  }
  const bool replay = exec != nullptr;
  if (!replay) RETURN_IF_ERROR(need_cudnn());  // the steps call cuDNN as they are enqueued
  const ExecContext ctx = context(plan);
  // How the steps went to the device: a replayed graph (one launch) or enqueued one by one (a launch per kernel, cuDNN
  // and cuBLAS calls on the host); with many input shapes few plans run often enough to replay.
  metrics::inc("steadyocr_cuda_run_modes_total", {{"model", role_}, {"mode", replay ? "replay" : "eager"}});
  SO_GPU_CHECK(cudaEventRecord(lane_->events[1], lane_->stream));
  if (replay) {
    SO_GPU_CHECK(cudaGraphLaunch(*exec, lane_->stream));
  } else if (profiling) {
    RETURN_IF_ERROR(enqueue_profiled(plan, ctx, /*capturing=*/false));
  } else {
    RETURN_IF_ERROR(enqueue_plan(plan, ctx, state_->debug_sync, fault));
  }
  SO_GPU_CHECK(cudaEventRecord(lane_->events[2], lane_->stream));
  // Outputs land in pinned buffers from the pool handed to the caller as is; each goes back to the pool when the
  // caller lets go.
  std::vector<PinnedPtr> outs;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    const DevTensor& t = plan.outputs[i];
    ASSIGN_OR_RETURN(PinnedPtr buf, state_->device->pinned()->get(t.nbytes()));
    SO_GPU_CHECK(
        cudaMemcpyAsync(buf->ptr, plan.bindings.ptr(t.ref), t.nbytes(), cudaMemcpyDeviceToHost, lane_->stream));
    outs.push_back(std::move(buf));
  }
  SO_GPU_CHECK(cudaEventRecord(lane_->events[3], lane_->stream));
  Stopwatch syncing;
  RETURN_IF_ERROR(state_->device->wait_lane(*lane_));
  profile_.sync_ms = syncing.elapsed_ms();
  staging_.clear();
  record_stage_times();
  if (profiling) record_step_times(plan, replay, graphs);
  outputs->clear();
  for (size_t i = 0; i < outs.size(); ++i) {
    const DevTensor& t = plan.outputs[i];
    void* data = outs[i]->ptr;
    outputs->push_back(Tensor::wrap(t.dtype, t.shape, data, std::shared_ptr<void>(outs[i], data)));
  }
  if (fault == faults::Kind::kNone) {
    ++good_runs_;
    if (graphs && !replay) graphs_.missed();
  }
  return Status::ok();
}

Status CudaPreparedGraph::need_cudnn() {
  if (cudnn_.get() || !state_->cudnn) return Status::ok();
  Stopwatch sw;
  ASSIGN_OR_RETURN(cudnn_, state_->device->lease_cudnn(lane_->stream));
  profile_.acquire_ms += sw.elapsed_ms();
  metrics::inc("steadyocr_cuda_cudnn_lease_ms_total", {{"for", "run"}}, sw.elapsed_ms());
  return Status::ok();
}

Status CudaPreparedGraph::capture() {
  // cuBLAS calls bake their workspace into the graph: it must be the arena's (the head of it, which only the run
  // holding the arena uses), not the lane's, which other plans use.
  if (!lane_->cublas_workspace) return Status::ok();  // stays eager
  void* ws = nullptr;
  size_t ws_bytes = lane_->cublas_workspace->bytes;
  if (plan_->arena) {  // an arena of its own (BackendConfig::own_arenas): a workspace of its own too
    if (!graph_cublas_ws_) {
      auto mem = state_->device->pool()->allocate(ws_bytes, "cuBLAS workspace of a CUDA graph");
      if (!mem.is_ok()) {
        graph_disabled_ = true;
        log::warn("cuda", "no memory for a CUDA graph of {} ({}); this bucket runs its kernels one by one", role_,
                  mem.status().to_string());
        return Status::ok();
      }
      graph_cublas_ws_ = std::move(mem).value();
    }
    ws = graph_cublas_ws_->ptr;
  } else {
    if (arena_ws_bytes_ < ws_bytes) return Status::ok();  // stays eager
    ws = arena_.mem->ptr;
  }
  RETURN_IF_ERROR(need_cudnn());
  Stopwatch capture_sw;
  cudaGraph_t g = nullptr;
  Status s;
  const bool ws_set = SO_GPU_TRY(cublasSetWorkspace(lane_->cublas, ws, ws_bytes));
  cudaError_t e = ws_set ? cudaStreamBeginCapture(lane_->stream, cudaStreamCaptureModeThreadLocal) : cudaSuccess;
  if (ws_set && e == cudaSuccess) {
    const bool profiling = state_->profile_ops > 0;
    s = profiling ? enqueue_profiled(*plan_, context(*plan_), /*capturing=*/true)
                  : enqueue_plan(*plan_, context(*plan_));
    e = cudaStreamEndCapture(lane_->stream, &g);
  }
  // The lane goes back to the pool with its own workspace, or not at all: another plan's run on it would otherwise
  // write into this plan's graph workspace while the graph replays on another lane.
  cublasStatus_t restored =
      cublasSetWorkspace(lane_->cublas, lane_->cublas_workspace->ptr, lane_->cublas_workspace->bytes);
  // cudaGraphInstantiateWithFlags has the same signature in CUDA 11.4+ and 12/13 (cudaGraphInstantiate does not).
  cudaGraphExec_t exec = nullptr;
  if (e == cudaSuccess && s.is_ok() && g) e = cudaGraphInstantiateWithFlags(&exec, g, 0);
  if (g) SO_GPU_TRY(cudaGraphDestroy(g));
  if (exec) metrics::set_gauge("steadyocr_cuda_graphs_held", {}, static_cast<double>(++g_graphs_held));
  if (restored != CUBLAS_STATUS_SUCCESS) {
    lane_dirty_ = true;
    destroy_graph(exec);
    drop_graphs();
    graph_disabled_ = true;
    return gpu_status(restored, "cublasSetWorkspace(lane_->cublas, <the lane's own workspace>)", __FILE__, __LINE__);
  }
  if (!ws_set || e != cudaSuccess || !s.is_ok() || !exec) {
    // The capture's own error is recorded and classified like any other (a sticky one fails the run's next call).
    std::string why = !ws_set            ? "the graph's cuBLAS workspace could not be set"
                      : !s.is_ok()       ? s.to_string()
                      : e != cudaSuccess ? gpu_status(e, "CUDA graph capture", __FILE__, __LINE__).to_string()
                                         : "no graph was instantiated";
    destroy_graph(exec);
    drop_graphs();
    graph_disabled_ = true;
    metrics::inc("steadyocr_cuda_graph_capture_failures_total", {{"model", role_}});
    log::warn("cuda", "CUDA graph capture failed for {} ({}); this bucket runs its kernels one by one", role_, why);
    return Status::ok();
  }
  graphs_.add(arena_.id, exec);
  metrics::inc("steadyocr_cuda_graphs_captured_total", {{"model", role_}});
  metrics::inc("steadyocr_cuda_graph_capture_ms_total", {{"model", role_}}, capture_sw.elapsed_ms());
  log::debug("cuda",
             "{}: captured {} {} into a CUDA graph on arena {} in {:.2f} ms (after {} good runs; {} of {} held)",
             state_->name, role_, signature_, arena_.id, capture_sw.elapsed_ms(), good_runs_, graphs_.size(),
             graphs_.capacity());
  return Status::ok();
}

}  // namespace steadyocr::cuda

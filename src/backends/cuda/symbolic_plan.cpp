#include "backends/cuda/symbolic_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>

#include "backends/common/schedule.h"
#include "backends/cuda/check.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "graph/symbolic.h"

namespace steadyocr::cuda {
namespace {

// The calling thread's last run of a plan for every shape (runs of one plan come from many threads at once).
struct LastRun {
  const void* plan = nullptr;
  RunProfile profile;
  double plan_ms = 0;
};
thread_local LastRun t_last;

}  // namespace

Result<std::unique_ptr<CudaSymbolicPlan>> CudaSymbolicPlan::create(std::shared_ptr<BackendState> state,
                                                                   const graph::Graph& graph) {
  if (!graph.symbols()) return unsupported(fmt::format("'{}' was not specialised on symbols", graph.name()));
  if (device_lost()) {
    GpuErrorRecord r = first_sticky_error();
    return Status(
        StatusCode::kDeviceFault,
        fmt::format("the CUDA context was lost earlier ({} in '{}'); restart the process", r.name, r.expression));
  }
  std::unique_ptr<CudaSymbolicPlan> plan(new CudaSymbolicPlan());
  plan->state_ = std::move(state);
  plan->base_ = graph.clone();
  // As every CUDA plan: the fused epilogues' stages become elementwise steps again, which the plan's own fusion
  // merges into their producers (backends/cuda/fusion.cpp).
  graph::expand_epilogues(plan->base_);
  for (const graph::Value* v : plan->base_.inputs()) {
    plan->input_shapes_.push_back(v->shape);
    plan->input_dtypes_.push_back(v->dtype);
  }
  plan->source_.role = model_role(plan->base_);
  plan->source_.signature = model_signature(plan->base_);
  // Checked once here on the symbolic shapes, not by each instance's build.
  for (const auto& n : plan->base_.nodes()) {
    if (common::is_folded(*n)) continue;
    std::string why;
    if (!op_supported(*n, &why)) return unsupported(fmt::format("{}: not supported on CUDA: {}", n->describe(), why));
  }
  // As many graph copies as builds kept apart at once: a cold process's first pages bring their new shapes together,
  // and each build at once needs a copy of its own (made here at load, not on those builds' time).
  for (size_t i = 0; i < kGraphCopiesKept; ++i) {
    ASSIGN_OR_RETURN(std::unique_ptr<GraphCopy> copy, plan->copy_graph());
    plan->copies_.push_back(std::move(copy));
  }
  return plan;
}

CudaSymbolicPlan::~CudaSymbolicPlan() {
  // Runs are synchronous and hold the plan: none is in flight once it is destroyed.
  if (state_ && state_->device) SO_GPU_TRY(cudaSetDevice(state_->device->index()));
  entries_.clear();
}

Result<std::unique_ptr<CudaSymbolicPlan::GraphCopy>> CudaSymbolicPlan::copy_graph() const {
  auto c = std::make_unique<GraphCopy>();
  c->graph = base_.clone();
  c->shapes.emplace(c->graph);
  ASSIGN_OR_RETURN(c->order, common::schedule(c->graph, common::ScheduleOrder::kGraph));
  return c;
}

Status CudaSymbolicPlan::check_inputs(const std::vector<Tensor>& inputs) const {
  if (inputs.size() != input_shapes_.size()) {
    return invalid_argument(fmt::format("the plan takes {} inputs, {} given", input_shapes_.size(), inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& symbolic = input_shapes_[i];
    if (inputs[i].dtype() != input_dtypes_[i] || !graph::fits_declared(symbolic, inputs[i].shape())) {
      return invalid_argument(fmt::format("input '{}' is {}, the plan takes {} {}", base_.inputs()[i]->name,
                                          inputs[i].describe(), dtype_name(input_dtypes_[i]),
                                          base_.symbols()->describe(symbolic)));
    }
  }
  return Status::ok();
}

Result<std::unique_ptr<CudaPreparedGraph>> CudaSymbolicPlan::build(const std::vector<Shape>& shapes) {
  Stopwatch sw;
  std::unique_ptr<GraphCopy> copy;
  std::shared_ptr<const WeightMemo> seed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!copies_.empty()) {
      copy = std::move(copies_.back());
      copies_.pop_back();
    }
    seed = seed_;
  }
  double copy_ms = 0;
  if (!copy) {  // more builds at once than copies kept
    Stopwatch copying;
    ASSIGN_OR_RETURN(copy, copy_graph());
    copy_ms = copying.elapsed_ms();
    metrics::inc("steadyocr_cuda_symbolic_graph_copies_total", {{"model", source_.role}});
  }
  struct GiveBack {  // the copy goes back however the build ends (its shapes are written again by the next)
    CudaSymbolicPlan& plan;
    std::unique_ptr<GraphCopy>& copy;
    ~GiveBack() {
      std::lock_guard<std::mutex> lock(plan.mu_);
      if (plan.copies_.size() < kGraphCopiesKept) plan.copies_.push_back(std::move(copy));
    }
  } give_back{*this, copy};
  // A copy whose memo knows fewer weights than another build found starts from that build's.
  if (seed && copy->weights.size() < seed->size()) copy->weights = *seed;
  Stopwatch evaluating;
  RETURN_IF_ERROR(copy->shapes->write(shapes));
  const double symbols_ms = evaluating.elapsed_ms();
  InstanceSource source = source_;
  source.order = &copy->order;
  source.weights = &copy->weights;
  ASSIGN_OR_RETURN(std::unique_ptr<CudaPreparedGraph> instance,
                   CudaPreparedGraph::create_instance(state_, copy->graph, source));
  const double ms = sw.elapsed_ms();
  if (!seed || copy->weights.size() > seed->size()) {  // the memo grew: later copies start from it (the copy made
    // outside the lock; only while memos grow, the first builds of each model)
    auto grown = std::make_shared<const WeightMemo>(copy->weights);
    std::lock_guard<std::mutex> lock(mu_);
    if (!seed_ || seed_->size() < grown->size()) seed_ = std::move(grown);
  }
  metrics::inc("steadyocr_cuda_buckets_planned_total", {{"model", source_.role}, {"backend", state_->name}});
  metrics::inc("steadyocr_cuda_plan_ms_total", {{"model", source_.role}, {"backend", state_->name}}, ms);
  if (log::level() <= log::Level::kDebug) {
    const PrepareTimes& p = instance->prepare_times();
    const BuildTimes& b = instance->plan().build_times;
    log::debug("cuda",
               "{}: {} instance for {} in {:.2f} ms (symbols {:.3f}, graph {:.2f}, lane {:.2f}, cudnn {:.2f}, builder "
               "{:.2f}: walk {:.2f} (conv {:.2f}, cudnn_calls {:.2f}), fuse {:.2f}, place {:.2f}; {} steps) [{}]",
               state_->name, source_.role, shape_str(shapes[0]), ms, symbols_ms, p.graph + copy_ms, p.lane, p.cudnn,
               p.builder, b.walk, b.conv, b.cudnn, b.fuse, b.place, instance->plan().steps.size(), p.top_ops);
  }
  return instance;
}

std::vector<std::unique_ptr<CudaSymbolicPlan::Instance>> CudaSymbolicPlan::evict_locked() {
  std::vector<std::unique_ptr<Instance>> out;
  while (entries_.size() > kShapesKept) {
    auto victim = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      const Entry& e = it->second;
      if (e.building > 0 || e.waiting > 0) continue;
      if (std::any_of(e.instances.begin(), e.instances.end(), [](const auto& i) { return i->busy; })) continue;
      if (victim == entries_.end() || e.used < victim->second.used) victim = it;
    }
    if (victim == entries_.end()) break;  // every shape in use: over the bound until some are idle
    for (auto& i : victim->second.instances) out.push_back(std::move(i));
    entries_.erase(victim);
    metrics::inc("steadyocr_cuda_symbolic_shapes_evicted_total", {{"model", source_.role}});
  }
  return out;
}

Status CudaSymbolicPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  t_last = LastRun{this, {}, 0};
  RETURN_IF_ERROR(check_inputs(inputs));
  std::vector<Shape> shapes;
  shapes.reserve(inputs.size());
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  Instance* instance = nullptr;
  Entry* entry = nullptr;
  double waited_ms = 0;  // for a busy instance of this shape: the caller's wait, not planning
  {
    std::unique_lock<std::mutex> lock(mu_);
    entry = &entries_[shapes];  // map nodes stay put; an entry in use is never evicted
    entry->used = ++clock_;
    const auto patient_until = std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitForInstanceMs);
    for (;;) {
      for (auto& i : entry->instances) {
        if (!i->busy) {
          i->busy = true;
          instance = i.get();
          break;
        }
      }
      if (instance) break;
      // The shape's first instance; another only after a wait that the busy ones did not end (kWaitForInstanceMs).
      const size_t have = entry->instances.size() + entry->building;
      if (have == 0 ||
          (have < kInstancesPerShape && entry->building == 0 && std::chrono::steady_clock::now() >= patient_until)) {
        ++entry->building;
        break;
      }
      ++entry->waiting;  // every instance of this shape is running (or being built): one finishes in milliseconds
      Stopwatch waiting;
      freed_.wait_until(lock, patient_until > std::chrono::steady_clock::now()
                                  ? patient_until
                                  : std::chrono::steady_clock::now() + std::chrono::milliseconds(kWaitForInstanceMs));
      waited_ms += waiting.elapsed_ms();
      --entry->waiting;
    }
  }
  std::vector<std::unique_ptr<Instance>> evicted;
  if (!instance) {
    Stopwatch building;
    auto built = build(shapes);
    t_last.plan_ms = building.elapsed_ms();
    std::lock_guard<std::mutex> lock(mu_);
    --entry->building;
    if (!built.is_ok()) {  // an entry left without instances goes with the least recently used
      freed_.notify_all();
      return built.status();
    }
    largest_arena_ = std::max(largest_arena_, (*built)->workspace_bytes());
    entry->instances.push_back(std::make_unique<Instance>());
    instance = entry->instances.back().get();
    instance->graph = std::move(built).value();
    instance->busy = true;
    evicted = evict_locked();
  }
  Status s = instance->graph->run(inputs, outputs);
  t_last.profile = instance->graph->last_profile();
  t_last.profile.acquire_ms += waited_ms;  // beside the wait for a stream and an arena
  {
    std::lock_guard<std::mutex> lock(mu_);
    instance->busy = false;
  }
  freed_.notify_all();
  evicted.clear();  // their plans and graphs destroyed after this call's run, outside the lock
  return s;
}

size_t CudaSymbolicPlan::workspace_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return largest_arena_;  // what one run leases at most
}

RunProfile CudaSymbolicPlan::last_profile() const {
  return t_last.plan == this ? t_last.profile : RunProfile{};
}

double CudaSymbolicPlan::last_plan_ms() const {
  return t_last.plan == this ? t_last.plan_ms : 0;
}

size_t CudaSymbolicPlan::shapes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t CudaSymbolicPlan::instances() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [shapes, e] : entries_) n += e.instances.size();
  return n;
}

}  // namespace steadyocr::cuda

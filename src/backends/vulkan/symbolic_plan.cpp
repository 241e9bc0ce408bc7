// One plan for every input shape (SymbolicPlan, declared in plan.h): instances of the plan per shape on shared
// buffers, and the helper thread that frees dropped instances and makes the next one's Vulkan objects ahead.
#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "backends/common/schedule.h"
#include "backends/vulkan/plan.h"
#include "core/log.h"
#include "core/timer.h"
#include "graph/symbolic.h"

namespace steadyocr::vk {

Result<std::unique_ptr<SymbolicPlan>> SymbolicPlan::create(const graph::Graph& graph, std::shared_ptr<Device> device,
                                                           std::shared_ptr<WeightCache> weights, bool f16) {
  if (!graph.symbols()) return unsupported(fmt::format("'{}' was not specialised on symbols", graph.name()));
  std::unique_ptr<SymbolicPlan> plan(new SymbolicPlan());
  plan->device_ = std::move(device);
  plan->weights_ = std::move(weights);
  plan->f16_ = f16;
  plan->graph_ = graph.clone();
  graph::expand_epilogues(plan->graph_);  // every stage is its own dispatch, as in Backend::prepare
  plan->shapes_.emplace(plan->graph_);
  for (const graph::Value* v : plan->graph_.inputs()) plan->input_shapes_.push_back(v->shape);
  ASSIGN_OR_RETURN(plan->order_, common::schedule(plan->graph_, common::ScheduleOrder::kGraph));
  // Checked once on the symbolic shapes; the element-count limit (2^31) again by each instance's build, where a
  // shape over it is declined (the runtime then plans that shape on its own, placing what the device cannot run).
  for (const graph::Node* n : plan->order_) {
    if (common::is_folded(*n)) continue;
    std::string why;
    if (!op_supported(*n, f16, &why)) {
      return unsupported(fmt::format("{}: {}", n->describe(), why));
    }
  }
  return plan;
}

SymbolicPlan::~SymbolicPlan() {
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    retire_stop_ = true;
  }
  retire_cv_.notify_all();
  if (retirer_.joinable()) retirer_.join();  // it destroys what it was given first
  retired_.clear();
  if (spare_) destroy_instance_objects(*device_, &*spare_);
  instances_.clear();  // before the shared buffers they run on
}

void SymbolicPlan::start_helper_locked() {
  if (retirer_.joinable()) return;
  retirer_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(retire_mu_);
    for (;;) {
      retire_cv_.wait(lock, [this] { return retire_stop_ || !retired_.empty() || (!spare_ && spare_sets_ > 0); });
      if (!retired_.empty()) {
        std::vector<std::unique_ptr<Plan>> batch = std::move(retired_);
        retired_.clear();
        lock.unlock();
        batch.clear();
        lock.lock();
        continue;
      }
      if (retire_stop_) return;  // nothing left to destroy; a spare is not needed any more
      const uint32_t sets = spare_sets_;
      const size_t bytes = spare_param_bytes_;
      lock.unlock();
      auto made = make_instance_objects(device_, sets, bytes);
      lock.lock();
      if (!made.is_ok()) {  // the call that needs them makes them itself, and says why if it cannot
        log::debug("vulkan", "{}: objects for the next instance not made ahead: {}", graph_.name(),
                   made.status().to_string());
        spare_sets_ = 0;
        continue;
      }
      spare_ = std::move(made).value();
    }
  });
}

void SymbolicPlan::retire(std::vector<std::unique_ptr<Plan>> plans) {
  std::lock_guard<std::mutex> lock(retire_mu_);
  for (auto& p : plans) retired_.push_back(std::move(p));
  start_helper_locked();
  retire_cv_.notify_one();
}

void SymbolicPlan::want_spare(uint32_t sets, size_t param_bytes) {
  std::lock_guard<std::mutex> lock(retire_mu_);
  spare_sets_ = sets;
  spare_param_bytes_ = param_bytes;
  start_helper_locked();
  retire_cv_.notify_one();
}

size_t SymbolicPlan::workspace_bytes() const {
  size_t b = 0;
  for (const auto* x : {&shared_.arena, &shared_.staging_in, &shared_.staging_out}) b += *x ? (*x)->bytes() : 0;
  for (const auto& [shapes, plan] : instances_) b += plan->workspace_bytes();
  return b;
}

Result<Plan*> SymbolicPlan::instance(const std::vector<Tensor>& inputs) {
  for (auto it = instances_.rbegin(); it != instances_.rend(); ++it) {
    const std::vector<Shape>& shapes = it->first;
    bool same = shapes.size() == inputs.size();
    for (size_t i = 0; same && i < inputs.size(); ++i) same = shapes[i] == inputs[i].shape();
    if (!same) continue;
    if (it != instances_.rbegin()) std::rotate(std::prev(it.base()), it.base(), instances_.end());
    return instances_.back().second.get();
  }
  Stopwatch sw;
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  const std::vector<graph::Value*>& declared = graph_.inputs();
  if (shapes.size() != declared.size()) {
    return invalid_argument(fmt::format("the plan takes {} inputs, {} given", declared.size(), shapes.size()));
  }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& symbolic = input_shapes_[i];
    if (inputs[i].dtype() != declared[i]->dtype || !graph::fits_declared(symbolic, shapes[i])) {
      return invalid_argument(fmt::format("input '{}' is {}, the plan takes {} {}", declared[i]->name,
                                          inputs[i].describe(), dtype_name(declared[i]->dtype),
                                          graph_.symbols()->describe(symbolic)));
    }
  }
  RETURN_IF_ERROR(shapes_->write(shapes));
  InstanceTimes times;
  std::optional<InstanceObjects> spare;
  {
    std::lock_guard<std::mutex> lock(retire_mu_);
    spare.swap(spare_);
  }
  InstanceContext context{&order_, &shared_, &times, spare ? &*spare : nullptr};
  shared_.grown = false;
  auto built = Plan::build(graph_, device_, weights_.get(), f16_, context);
  if (spare) destroy_instance_objects(*device_, &*spare);  // what did not fit (none when the sizes held)
  if (shared_.grown) {  // they hold the smaller buffers: freed, rebuilt when seen again
    std::vector<std::unique_ptr<Plan>> dropped;
    for (auto& [shape, plan] : instances_) dropped.push_back(std::move(plan));
    instances_.clear();
    retire(std::move(dropped));
  }
  if (!built.is_ok()) return built.status();
  // The next shape's objects, made ahead: room for a few more dispatches and parameters than this one's.
  want_spare(static_cast<uint32_t>((*built)->dispatches() + 16), (*built)->param_bytes() * 5 / 4 + 256);
  if (instances_.size() >= kInstancesKept) {
    std::vector<std::unique_ptr<Plan>> dropped;
    dropped.push_back(std::move(instances_.front().second));
    retire(std::move(dropped));
    instances_.erase(instances_.begin());
  }
  instances_.emplace_back(std::move(shapes), std::move(built).value());
  last_plan_ms_ = sw.elapsed_ms();
  log::debug("vulkan",
             "{}: instance for {} in {:.2f} ms (walk {:.2f}, memory {:.2f}, objects {:.2f}, sets {:.2f}, commands "
             "{:.2f}; {} kept)",
             graph_.name(), shape_str(instances_.back().first[0]), last_plan_ms_, times.walk, times.memory,
             times.objects, times.sets, times.commands, instances_.size());
  return instances_.back().second.get();
}

Status SymbolicPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  last_plan_ms_ = 0;
  ASSIGN_OR_RETURN(Plan * plan, instance(inputs));
  return plan->run(inputs, outputs);
}

}  // namespace steadyocr::vk

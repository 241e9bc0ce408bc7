#include "runtime/model.h"

#include "core/log.h"
#include "core/timer.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"

namespace steadyocr::runtime {

Result<std::unique_ptr<Model>> Model::load(const std::string& path, std::shared_ptr<Backend> backend,
                                           ModelOptions options) {
  if (!backend) return invalid_argument("Model::load: no backend given");
  ASSIGN_OR_RETURN(graph::Graph g, graph::import_onnx(path));
  if (g.inputs().size() != 1 || g.outputs().size() != 1) {
    return unsupported("model " + path + " has " + std::to_string(g.inputs().size()) + " inputs and " +
                       std::to_string(g.outputs().size()) +
                       " outputs; PP-OCR det/rec/cls models have exactly one of each");
  }
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  m->graph_ = std::move(g);
  m->backend_ = std::move(backend);
  m->options_ = options;
  return m;
}

Result<std::shared_ptr<Model::Plan>> Model::plan_for(const Shape& shape) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if ((*it)->shape == shape) {
        auto p = *it;
        plans_.erase(it);
        plans_.push_front(p);
        return p;
      }
    }
  }
  // Plan outside the lock: other shapes keep running meanwhile. Two threads may race to build the same
  // shape; the loser's plan is dropped, which costs time but never correctness.
  Stopwatch sw;
  graph::Graph g = graph_.clone();
  RETURN_IF_ERROR(graph::specialize(g, {shape}));
  if (options_.optimize) RETURN_IF_ERROR(graph::optimize(g, options_.passes));
  auto prepared = backend_->prepare(g);
  if (!prepared.is_ok()) {
    return prepared.status().with_context("preparing " + path_ + " for input " + shape_str(shape) + " on backend " +
                                          backend_->name());
  }
  auto plan = std::make_shared<Plan>();
  plan->shape = shape;
  plan->prepared = std::move(prepared).value();
  double ms = sw.elapsed_ms();
  log::debug("runtime", "planned {} for {} on {} in {:.1f} ms", graph_.name(), shape_str(shape), backend_->name(), ms);

  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : plans_) {
    if (p->shape == shape) return p;
  }
  plans_.push_front(plan);
  ++stats_.plans_built;
  stats_.plan_ms_total += ms;
  while (plans_.size() > options_.max_cached_shapes) {
    plans_.pop_back();
    ++stats_.plans_evicted;
  }
  return plan;
}

Result<Tensor> Model::run(const Tensor& input) {
  if (input.dtype() != DType::kF32) {
    return invalid_argument(std::string("model input must be f32, got ") + dtype_name(input.dtype()));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, plan_for(input.shape()));
  std::vector<Tensor> outs;
  {
    std::lock_guard<std::mutex> lock(plan->run_mu);
    RETURN_IF_ERROR(plan->prepared->run({input}, &outs));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.runs;
  }
  if (outs.size() != 1) return internal_error("backend returned " + std::to_string(outs.size()) + " outputs");
  return std::move(outs[0]);
}

void Model::clear_plans() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_.plans_evicted += plans_.size();
  plans_.clear();
}

ModelStats Model::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace steadyocr::runtime

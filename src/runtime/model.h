// A loaded model bound to one backend: imports once, specialises and prepares per input shape
// (bounded cache), and runs. This is what the pipeline calls.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "backends/backend.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"
#include "graph/passes/passes.h"

namespace steadyocr::runtime {

struct ModelOptions {
  bool optimize = true;  // run the graph passes after specialisation
  graph::PassOptions passes;
  size_t max_cached_shapes = 24;  // prepared plans kept (least recently used dropped first)
};

struct ModelStats {
  uint64_t runs = 0;
  uint64_t plans_built = 0;  // first run of a new input shape
  uint64_t plans_evicted = 0;
  double plan_ms_total = 0;  // time spent specialising + preparing
};

// What the pipeline runs a model through: a plain Model, or the engine's ladder-aware runner.
class Runner {
 public:
  virtual ~Runner() = default;
  // Runs one input (f32, NCHW) and returns the single output. Thread-safe.
  virtual Result<Tensor> run(const Tensor& input) = 0;
  // The backend that ran (or will run) the last call, for results and logs.
  virtual std::string backend_name() const = 0;
};

class Model : public Runner {
 public:
  // Imports `path` and checks it has one input and one output. `backend` is shared by models.
  static Result<std::unique_ptr<Model>> load(const std::string& path, std::shared_ptr<Backend> backend,
                                             ModelOptions options = {});

  // Runs one input (f32, NCHW) and returns the single output. Thread-safe; calls on the same input
  // shape are serialised on that shape's plan.
  Result<Tensor> run(const Tensor& input) override;
  std::string backend_name() const override { return backend_->name(); }

  const graph::Graph& graph() const { return graph_; }
  const std::string& path() const { return path_; }
  Backend& backend() const { return *backend_; }
  ModelStats stats() const;
  // Drops every cached plan (and the device memory it holds); the next run plans again. Used on OOM.
  void clear_plans();

 private:
  struct Plan {
    Shape shape;
    std::unique_ptr<PreparedGraph> prepared;
    std::mutex run_mu;
  };
  Model() = default;
  Result<std::shared_ptr<Plan>> plan_for(const Shape& shape);

  std::string path_;
  graph::Graph graph_;
  std::shared_ptr<Backend> backend_;
  ModelOptions options_;
  mutable std::mutex mu_;
  std::list<std::shared_ptr<Plan>> plans_;  // most recently used first
  ModelStats stats_;
};

}  // namespace steadyocr::runtime

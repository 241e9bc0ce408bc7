// One plan for every input shape on CUDA (Backend::prepare_symbolic): the model's graph, specialised on symbols and
// optimised once by the runtime, is planned per shape without any graph pass. A new input shape evaluates the
// symbols, writes the shapes into a copy of the graph this plan keeps (its epilogues expanded and its schedule made
// once), and builds an instance on it (the op builders, fusion, the arena's layout): no clone, no instantiation, no
// verification, no schedule, and the weights already on the device. Instances are kept per shape (a few each, for
// the calls of one shape in flight together), each with its CUDA graph once the shape recurs.
//
// Unlike the per-shape plans, this one object takes every call in flight at once (PreparedGraph::concurrent): calls
// of a shape seen before take an idle instance of it, new shapes are built outside the lock (several at once, each
// on a graph copy of its own), and the runtime makes no replicas of it.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/prepared_graph.h"
#include "graph/ir.h"
#include "graph/symbolic_shapes.h"

namespace steadyocr::cuda {

class CudaSymbolicPlan final : public PreparedGraph {
 public:
  static constexpr size_t kShapesKept = 512;  // input shapes with instances (the least recently used go first), as
  // the runtime keeps per-shape plans on a device (pipeline.cpp)
  // Instances of one shape: a call of a shape whose instances are all busy waits for one (a run, milliseconds),
  // as the per-shape plans' callers do, rather than building another: every extra instance runs eagerly until its
  // CUDA graph is captured, and its graph replays only on the arena it was captured on, so more instances of a shape
  // meant more eager runs and captures (images/s 1-18 % below the per-shape plans' with up to 4, 2026-12-07; with
  // this wait, within 1.2 % of them either way over three rounds, H100, docs/BENCHMARKS.md). A second instance is
  // built only by a call that has waited kWaitForInstanceMs for the busy ones.
  static constexpr size_t kInstancesPerShape = 4;
  static constexpr int kWaitForInstanceMs = 50;
  static constexpr size_t kGraphCopiesKept = 4;  // graph copies for concurrent builds, made at load and kept

  // Unsupported where the graph was not specialised on symbols or a node has no CUDA kernel (the runtime then plans
  // per shape and places what CUDA declines).
  static Result<std::unique_ptr<CudaSymbolicPlan>> create(std::shared_ptr<BackendState> state,
                                                          const graph::Graph& graph);
  ~CudaSymbolicPlan() override;
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  size_t workspace_bytes() const override;
  bool concurrent() const override { return true; }
  // The calling thread's last run of this plan.
  RunProfile last_profile() const override;
  double last_plan_ms() const override;
  size_t shapes() const;     // input shapes with instances now
  size_t instances() const;  // instances over every shape

 private:
  // A copy of the symbolic graph that one build at a time writes a shape into.
  struct GraphCopy {
    graph::Graph graph;
    std::optional<graph::SymbolicShapes> shapes;  // of `graph`
    std::vector<const graph::Node*> order;
    WeightMemo weights;  // its constants' device copies, found by every build on this copy
  };
  struct Instance {
    std::unique_ptr<CudaPreparedGraph> graph;
    bool busy = false;
  };
  struct Entry {
    std::vector<std::unique_ptr<Instance>> instances;
    size_t building = 0;  // instances being built for this shape now
    size_t waiting = 0;   // calls waiting for one of its instances
    uint64_t used = 0;    // clock_ at its last call
  };
  CudaSymbolicPlan() = default;
  Result<std::unique_ptr<GraphCopy>> copy_graph() const;
  // Builds an instance for `shapes` on a graph copy (taken from the kept ones or made), outside the lock.
  Result<std::unique_ptr<CudaPreparedGraph>> build(const std::vector<Shape>& shapes);
  Status check_inputs(const std::vector<Tensor>& inputs) const;
  // Takes the least recently used shapes out (none of their instances busy or building) while over kShapesKept.
  std::vector<std::unique_ptr<Instance>> evict_locked();

  std::shared_ptr<BackendState> state_;
  graph::Graph base_;  // the symbolic graph, epilogues expanded; never written (copies are)
  std::vector<Shape> input_shapes_;
  std::vector<DType> input_dtypes_;
  InstanceSource source_;  // role and signature (the order is each copy's)
  mutable std::mutex mu_;
  std::condition_variable freed_;  // an instance became idle, or a build ended
  std::map<std::vector<Shape>, Entry> entries_;
  std::vector<std::unique_ptr<GraphCopy>> copies_;  // idle graph copies
  std::shared_ptr<const WeightMemo> seed_;          // the fullest memo a build has left (new memos start from it)
  uint64_t clock_ = 0;
  size_t largest_arena_ = 0;
};

}  // namespace steadyocr::cuda

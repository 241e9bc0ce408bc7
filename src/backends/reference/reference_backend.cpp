// The reference interpreter: runs a statically shaped graph node by node with the reference kernels,
// freeing each intermediate after its last use.
#include <unordered_map>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr {
namespace {

class ReferencePrepared : public PreparedGraph {
 public:
  static Result<std::unique_ptr<PreparedGraph>> create(const graph::Graph& source) {
    auto p = std::unique_ptr<ReferencePrepared>(new ReferencePrepared());
    p->graph_ = source.clone();
    // Fused epilogues run as the nodes they were: the oracle computes exactly the unfused graph.
    graph::expand_epilogues(p->graph_);
    RETURN_IF_ERROR(p->plan());
    return std::unique_ptr<PreparedGraph>(std::move(p));
  }

  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
    const auto& gin = graph_.inputs();
    if (inputs.size() != gin.size()) {
      return invalid_argument(
          fmt::format("graph '{}' takes {} input(s), {} given", graph_.name(), gin.size(), inputs.size()));
    }
    std::vector<Tensor> slots(slot_count_);
    for (const auto& [s, t] : constant_slots_) slots[s] = t;
    for (size_t i = 0; i < gin.size(); ++i) {
      const graph::Value* v = gin[i];
      const Tensor& t = inputs[i];
      if (!t.defined()) return invalid_argument(fmt::format("input '{}' is not set", v->name));
      if (t.dtype() != v->dtype) {
        return invalid_argument(fmt::format("input '{}' is {} but the graph expects {}", v->name, dtype_name(t.dtype()),
                                            dtype_name(v->dtype)));
      }
      if (t.shape() != v->shape) {
        return invalid_argument(
            fmt::format("input '{}' has shape {} but the graph was prepared for {}; prepare "
                        "a plan for this shape",
                        v->name, shape_str(t.shape()), shape_str(v->shape)));
      }
      slots[slot_of_.at(v)] = t;
    }
    std::vector<const Tensor*> args;
    std::vector<Tensor> results;
    for (size_t k = 0; k < steps_.size(); ++k) {
      const Step& step = steps_[k];
      args.clear();
      for (int s : step.inputs) args.push_back(s < 0 ? nullptr : &slots[s]);
      RETURN_IF_ERROR(run_node_reference(*step.node, args, &results));
      for (size_t o = 0; o < step.outputs.size(); ++o) slots[step.outputs[o]] = std::move(results[o]);
      for (int s : step.release) slots[s] = Tensor();
    }
    outputs->clear();
    for (int s : output_slots_) outputs->push_back(slots[s]);
    return Status::ok();
  }

 private:
  struct Step {
    const graph::Node* node = nullptr;
    std::vector<int> inputs;   // slot per input, -1 for an omitted optional input
    std::vector<int> outputs;  // slot per output
    std::vector<int> release;  // slots whose last reader is this step
  };

  ReferencePrepared() = default;

  Status plan() {
    RETURN_IF_ERROR(graph_.toposort());
    // Constants live in their Value; everything else gets a slot filled at run time.
    int next = 0;
    auto slot = [&](const graph::Value* v) {
      auto it = slot_of_.find(v);
      if (it != slot_of_.end()) return it->second;
      slot_of_[v] = next;
      return next++;
    };
    for (const graph::Value* v : graph_.inputs()) {
      if (!v->has_static_shape()) {
        return invalid_argument(
            fmt::format("graph '{}': input '{}' has no static shape ({}); specialise the graph "
                        "to an input shape before preparing",
                        graph_.name(), v->name, shape_str(v->shape)));
      }
      slot(v);
    }
    std::unordered_map<const graph::Value*, size_t> last_use;
    for (size_t k = 0; k < graph_.nodes().size(); ++k) {
      const graph::Node& n = *graph_.nodes()[k];
      if (find_reference_kernel(n.op) == nullptr) {
        return unsupported(
            fmt::format("{}: the reference backend has no kernel for op {}", n.describe(), graph::op_name(n.op)));
      }
      Step step;
      step.node = &n;
      for (const graph::Value* v : n.inputs) {
        if (v == nullptr) {
          step.inputs.push_back(-1);
          continue;
        }
        if (!v->is_constant() && v->producer == nullptr && !slot_of_.count(v)) {
          return invalid_argument(
              fmt::format("{}: input '{}' is neither a graph input, a constant nor produced by "
                          "a node",
                          n.describe(), v->name));
        }
        step.inputs.push_back(slot(v));
        last_use[v] = k;
      }
      for (const graph::Value* v : n.outputs) {
        if (!v->has_static_shape()) {
          return invalid_argument(
              fmt::format("{}: output '{}' has no static shape ({}); specialise the graph to an "
                          "input shape before preparing",
                          n.describe(), v->name, shape_str(v->shape)));
        }
        step.outputs.push_back(slot(v));
      }
      steps_.push_back(std::move(step));
    }
    for (const graph::Value* v : graph_.outputs()) {
      if (!v->is_constant() && v->producer == nullptr && !slot_of_.count(v)) {
        return invalid_argument(fmt::format("graph '{}': output '{}' is never computed", graph_.name(), v->name));
      }
      output_slots_.push_back(slot(v));
    }
    slot_count_ = next;
    // Intermediates die after their last reader; graph inputs/outputs and constants are never released.
    for (auto& [v, k] : last_use) {
      if (v->is_constant() || graph_.is_graph_output(v)) continue;
      steps_[k].release.push_back(slot_of_.at(v));
    }
    // Constants share storage with their Value; each run binds them to their slots.
    for (auto& [v, s] : slot_of_) {
      if (v->is_constant()) constant_slots_.emplace_back(s, v->constant);
    }
    return Status::ok();
  }

  graph::Graph graph_;
  std::unordered_map<const graph::Value*, int> slot_of_;
  std::vector<Step> steps_;
  std::vector<int> output_slots_;
  std::vector<std::pair<int, Tensor>> constant_slots_;
  int slot_count_ = 0;
};

class ReferenceBackend : public Backend {
 public:
  std::string name() const override { return "reference"; }

  DeviceInfo device_info() const override {
    DeviceInfo d;
    d.backend = "reference";
    d.name = fmt::format("host CPU, plain C++ kernels ({} threads)", num_threads());
    return d;
  }

  bool supports(const graph::Node& node) const override { return find_reference_kernel(node.op) != nullptr; }

  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override {
    return ReferencePrepared::create(graph);
  }
};

}  // namespace

std::unique_ptr<Backend> make_reference_backend() {
  return std::make_unique<ReferenceBackend>();
}

}  // namespace steadyocr

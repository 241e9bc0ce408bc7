// Internal to the oneDNN CPU backend: one plan for every input shape of a model (issue 13's shape-free plans). The
// plan is built once from the graph specialised on symbols (graph/symbolic.h); a run evaluates the symbols for its
// input (microseconds), places its buffers for those sizes (a liveness plan cached per input shape, tens of
// microseconds the first time) and runs steps that read their dims at run time: oneDNN's GEMM (sgemm, no
// primitive per shape), and our own vectorised kernels for depthwise convolutions, pooling, resizing and the
// rest. No step creates or JITs anything per shape.
//
// Activations of 4-D values live channels-last (NHWC): a 1x1 convolution is then one GEMM over pixels, a depthwise
// one runs along contiguous channel vectors, and epilogues (bias, activation, per-channel arithmetic, residual)
// are applied to each GEMM chunk while it is in cache. Values read by ops that see the logical NCHW order
// (Reshape, Transpose, MatMul, ...) are converted to plain row-major once, where they are read.
#pragma once

#include <deque>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/common/arena.h"
#include "backends/cpu/arena_pool.h"
#include "graph/ir.h"

namespace steadyocr::cpu {

enum class Layout : uint8_t {
  kPlain,  // row-major over the logical shape
  kNhwc,   // rank 4, stored as [N, H, W, C]
};

struct SymBuffer {
  enum class Storage : uint8_t { kArena, kConstant, kInput, kView };
  DType dtype = DType::kF32;
  Shape shape;  // logical, static or symbolic dims
  Layout layout = Layout::kPlain;
  Storage storage = Storage::kArena;
  int root = -1;                   // kView: the buffer whose bytes these are
  const void* constant = nullptr;  // kConstant
  int input_index = -1;            // kInput
  std::string name;
};

// What a step sees while it runs: the evaluated dims and every buffer's address for this run.
class SymRun {
 public:
  const Shape& shape(int buf) const { return shapes_[static_cast<size_t>(buf)]; }
  // [N, H, W, C] for an NHWC buffer, the logical shape otherwise.
  Shape physical(int buf) const;
  int64_t dim(int64_t d) const { return dims_->dim(d); }
  void* ptr(int buf) const { return ptrs_[static_cast<size_t>(buf)]; }
  float* f32(int buf) const { return static_cast<float*>(ptrs_[static_cast<size_t>(buf)]); }
  const SymBuffer& buffer(int buf) const { return (*buffers_)[static_cast<size_t>(buf)]; }

 private:
  friend class SymbolicPlan;
  const graph::SymbolValues* dims_ = nullptr;
  const std::vector<SymBuffer>* buffers_ = nullptr;
  std::vector<Shape> shapes_;
  std::vector<void*> ptrs_;
};

class SymStep {
 public:
  virtual ~SymStep() = default;
  virtual Status run(const SymRun& r) const = 0;
  // Short label for profiles and tests ("gemm 1x1 +hardswish", "depthwise 5x5/2").
  virtual std::string describe() const = 0;
  // Makes what the step makes once for every shape (oneDNN primitives): called for all steps at once, across the
  // team, when the plan is built, so that a run makes nothing. Thread-safe.
  virtual Status make_kernels() const { return Status::ok(); }
};

class SymbolicPlan;

// What op factories see while the plan is built.
class SymBuilder {
 public:
  SymBuilder(SymbolicPlan& plan, const graph::Graph& graph);

  const graph::Graph& graph() const { return graph_; }
  const SymBuffer& buffer(int id) const;
  // The buffer `v` lives in now, in its own layout.
  Result<int> home(const graph::Value* v);
  // `v` in `layout` (a conversion step added once when its home differs; constants converted at build).
  Result<int> in_layout(const graph::Value* v, Layout layout);
  // A new arena buffer for `v`'s shape.
  int new_buffer(const graph::Value* v, Layout layout);
  int new_buffer(DType dtype, const Shape& shape, Layout layout, const std::string& name);
  // A buffer with `of`'s bytes under another logical shape (plain only).
  int new_view(int of, const Shape& shape, const std::string& name);
  // A constant kept alive by the plan.
  int new_constant(Tensor t, Layout layout, const std::string& name);
  void set_home(const graph::Value* v, int buf);
  void add_step(std::unique_ptr<SymStep> step, std::vector<int> reads, std::vector<int> writes,
                const graph::Node* node);
  // Keeps a tensor alive for the plan's lifetime (packed weights).
  const Tensor& keep(Tensor t);
  int root_of(int buf) const;

 private:
  SymbolicPlan& plan_;
  const graph::Graph& graph_;
  std::unordered_map<const graph::Value*, int> home_;
  std::map<std::pair<const graph::Value*, Layout>, int> converted_;
};

class SymbolicPlan : public PreparedGraph {
 public:
  // Builds the plan for a graph whose shapes are symbolic (graph::specialize_symbolic, then optimised); fails
  // (kUnsupported) naming the first node it cannot run without per-shape planning. Runs take their activation
  // memory from `pool`.
  static Result<std::unique_ptr<SymbolicPlan>> build(const graph::Graph& graph, std::shared_ptr<ArenaPool> pool);
  ~SymbolicPlan() override;

  // Runs any input shape the graph's symbols fit (SymbolTable::evaluate): no planning besides the first run of a
  // shape's buffer placement.
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  std::vector<std::string> step_labels() const;
  size_t workspace_bytes() const override { return last_arena_bytes_; }
  double last_plan_ms() const override { return last_plan_ms_; }
  // Input shapes whose buffer placement is cached.
  size_t placements_cached() const { return layouts_.size(); }

 private:
  friend class SymBuilder;
  struct Step {
    std::unique_ptr<SymStep> step;
    std::vector<int> reads, writes;
    std::string node;
    std::string kind;
    double ms = 0;
  };
  struct Placement {
    std::vector<Shape> inputs;
    common::ArenaLayout layout;
  };
  SymbolicPlan() = default;
  // The buffer placement for these input shapes, made now (*fresh) or found among those kept.
  Result<const Placement*> placement(const std::vector<Shape>& inputs, const SymRun& r, bool* fresh);
  void print_profile() const;

  graph::Graph graph_;  // holds the symbol table the buffers' shapes refer to
  std::vector<SymBuffer> buffers_;
  std::vector<Step> steps_;
  std::deque<Tensor> kept_;
  std::vector<int> input_bufs_, output_bufs_;
  std::vector<common::ArenaBuffer> live_;  // per buffer: the steps that touch it (sizes filled per shape)
  std::list<Placement> layouts_;           // most recently used first
  std::shared_ptr<ArenaPool> pool_;
  size_t last_arena_bytes_ = 0;
  double last_plan_ms_ = 0;  // the last run's symbol evaluation and (for a new shape) buffer placement
  int profile_ = 0;          // STEADYOCR_PROFILE
  uint64_t runs_ = 0;
  double run_ms_ = 0;
};

// Op factories (one file per family): add the node's steps through the builder; kUnsupported when the node needs
// what only a per-shape plan does.
using SymOpFn = Status (*)(SymBuilder& b, const graph::Node& n);
SymOpFn find_sym_op(graph::OpKind op);

}  // namespace steadyocr::cpu

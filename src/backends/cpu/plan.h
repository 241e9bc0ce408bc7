// Internal to the oneDNN CPU backend: a graph planned for one static input shape. The builder walks the
// nodes once, asks each op file for a step, tracks which layout every value lives in (oneDNN's blocked
// layouts between oneDNN primitives, plain row-major for our own kernels, reorders only where they
// differ), then places every buffer in one arena by liveness. Running is a loop over prepared steps.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/arena_pool.h"
#include "backends/cpu/dnnl_util.h"
#include "graph/ir.h"

namespace steadyocr::cpu {

class WeightCache;

enum class Storage : uint8_t {
  kArena,     // lives in the plan's arena
  kConstant,  // a graph constant (host memory owned by a kept Tensor)
  kInput,     // a graph input: the caller's tensor, bound per run
  kView,      // the same bytes as `root` under another shape (Reshape/Squeeze/...)
};

struct Buffer {
  DType dtype = DType::kF32;
  Shape shape;  // logical shape
  Md md;        // physical layout (f32 only; other dtypes are always plain)
  size_t bytes = 0;
  Storage storage = Storage::kArena;
  int root = -1;  // kView: the buffer holding the bytes
  const void* constant = nullptr;
  int input_index = -1;
  size_t offset = 0;  // arena offset (kArena roots), from the common planner
  std::string name;
};

class RunContext {
 public:
  void* ptr(int buf) const { return ptrs_[buf]; }
  float* f32(int buf) const { return static_cast<float*>(ptrs_[buf]); }
  // True when the buffer's address changes between runs (graph inputs).
  bool is_external(int buf) const { return external_[buf]; }
  dnnl::stream& stream() { return *stream_; }
  void* scratchpad() const { return scratchpad_; }
  // Changes whenever the arena moved (a run got another block from the pool): bound memories must follow.
  uint64_t epoch() const { return epoch_; }

 private:
  friend class CpuPlan;
  std::vector<void*> ptrs_;
  std::vector<bool> external_;
  dnnl::stream* stream_ = nullptr;
  void* scratchpad_ = nullptr;
  uint64_t epoch_ = 0;
};

// One prepared step. Steps are built at prepare and keep no per-run state besides bound memories.
class CpuOp {
 public:
  virtual ~CpuOp() = default;
  // Called once after memory planning (buffer addresses are only known per run: see RunContext::epoch).
  virtual Status bind(const RunContext& ctx) { return Status::ok(); }
  // Runs the step on the plan's buffers.
  virtual Status run(RunContext& ctx) = 0;
  // Short label for the profiler, e.g. "conv 3x3 dw +hardswish nChw16c".
  virtual std::string describe() const = 0;
  // oneDNN user scratchpad this step needs (the plan provides the largest one).
  virtual size_t scratchpad_bytes() const { return 0; }
};

// oneDNN arguments backed by plan buffers: memories are created at bind(); their handles follow the arena
// when it moves and the graph inputs on every run.
class DnnlArgs {
 public:
  // `offset`: bytes into the buffer where the argument starts (a strided window of a larger tensor).
  void add(int arg, int buf, const Md& md, size_t offset = 0) { bufs_.push_back({arg, buf, md, offset}); }
  void add_memory(int arg, const dnnl::memory& m) { fixed_[arg] = m; }
  // Creates the memories (and the scratchpad argument when `scratch_md` is non-empty).
  Status bind(const RunContext& ctx, const Md& scratch_md = Md());
  // Executes `p` with these arguments; `what` names the step in errors.
  Status execute(RunContext& ctx, const dnnl::primitive& p, const char* what);

 private:
  struct BufArg {
    int arg;
    int buf;
    Md md;
    size_t offset;
  };
  std::vector<BufArg> bufs_;
  std::unordered_map<int, dnnl::memory> fixed_;
  std::unordered_map<int, dnnl::memory> args_;
  bool has_scratch_ = false;
  uint64_t epoch_ = ~uint64_t{0};
};

class CpuPlan;

// What op factories see while a plan is being built.
class PlanBuilder {
 public:
  PlanBuilder(CpuPlan& plan, const graph::Graph& graph, WeightCache& weights);

  const graph::Graph& graph() const { return graph_; }
  const Buffer& buffer(int id) const;
  // The buffer a value currently lives in (its producer's layout; constants and inputs are plain).
  Result<int> home(const graph::Value* v);
  // A buffer holding `v` in layout `md`, adding a reorder step when the home layout differs (cached).
  Result<int> in_layout(const graph::Value* v, const Md& md);
  // `v` as a dense row-major buffer (any dtype).
  Result<int> plain(const graph::Value* v);
  // A new arena buffer.
  int new_buffer(DType dtype, const Shape& shape, const Md& md, const std::string& name);
  // A buffer sharing `of`'s bytes under another (same-size) shape; `of` must be dense row-major.
  int new_view(int of, const Shape& shape, const std::string& name);
  // A constant buffer over `t`'s bytes (kept alive by the plan) in layout `md`.
  int new_constant(Tensor t, const Md& md, const std::string& name);
  // Records that `v` now lives in `buf`.
  void set_home(const graph::Value* v, int buf);
  void add_step(std::unique_ptr<CpuOp> op, std::vector<int> reads, std::vector<int> writes, const graph::Node* node);
  // Reorder `src` into the existing buffer `dst` (layouts may differ; same logical dims).
  Status add_reorder(int src, int dst, const graph::Node* node);

  // Whether `buf`'s bytes are read by nothing after the nodes in `current` (so it may be overwritten).
  bool dies_with(int buf, const std::set<const graph::Node*>& current) const;
  const std::vector<graph::Node*>& consumers(const graph::Value* v) const;
  bool is_graph_output(const graph::Value* v) const;
  // Whether `v` is available before the node being built (constant, input or from a built node).
  bool available(const graph::Value* v) const;
  // Nodes folded into the step being built (skipped when the walk reaches them).
  void absorb(const graph::Node* n) { absorbed_.insert(n); }
  // For a node whose epilogue oneDNN took only in part: asks CpuPlan::build to plan again with the node's epilogue
  // stages expanded into nodes (graph::expand_epilogue), which then run as steps of their own. Returns the error
  // that stops this attempt.
  Status expand_epilogue(const graph::Node& n);

  // Keeps a tensor alive for the plan's lifetime (post-op constants, packed parameters).
  const Tensor& keep(Tensor t);
  WeightCache& weights() { return weights_; }
  int root_of(int buf) const;

 private:
  friend class CpuPlan;
  CpuPlan& plan_;
  const graph::Graph& graph_;
  WeightCache& weights_;
  std::unordered_map<const graph::Value*, int> home_;
  std::map<std::pair<const graph::Value*, std::string>, int> layout_cache_;
  std::unordered_map<const graph::Value*, std::vector<graph::Node*>> consumers_;
  std::set<const graph::Value*> outputs_;
  std::set<const graph::Node*> built_;
  std::set<const graph::Node*> absorbed_;
  std::vector<std::vector<const graph::Value*>> root_values_;  // per buffer id (roots): values stored there
  std::set<std::string> expand_;                               // nodes whose epilogues to expand (expand_epilogue)
};

class CpuPlan : public PreparedGraph {
 public:
  // Builds the plan; fails (kUnsupported) naming the first node this backend cannot run. Runs take their
  // activation memory from `pool`.
  static Result<std::unique_ptr<CpuPlan>> build(const graph::Graph& graph, WeightCache& weights,
                                                std::shared_ptr<ArenaPool> pool);
  ~CpuPlan() override;

  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  // One line per step ("conv 3x3/1 ... +hardswish"), in run order: what fused where, for tests and debugging.
  std::vector<std::string> step_labels() const;
  // Activation + scratchpad bytes a run takes from the pool.
  size_t workspace_bytes() const override { return total_bytes_; }

 private:
  friend class PlanBuilder;
  // One attempt at `graph`; adds to `expand` the nodes whose epilogues must run as nodes of their own.
  static Result<std::unique_ptr<CpuPlan>> build_once(const graph::Graph& graph, WeightCache& weights,
                                                     std::shared_ptr<ArenaPool> pool, std::set<std::string>* expand);
  struct Step {
    std::unique_ptr<CpuOp> op;
    std::vector<int> reads, writes;
    std::string node;  // node name ("" for inserted reorders)
    std::string kind;  // op name for the per-kind profile
    double ms = 0;
    double cpu_ms = 0;  // process CPU time (all threads): compute cost even when the machine is oversubscribed
  };
  Status plan_memory();
  // Points every arena buffer (and the scratchpad) into `base`.
  void rebase(void* base);
  void print_profile() const;

  std::string name_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  std::deque<Tensor> kept_;
  std::vector<Shape> input_shapes_;
  std::vector<int> input_bufs_;
  std::vector<int> output_bufs_;
  std::vector<DType> output_dtypes_;
  std::shared_ptr<ArenaPool> pool_;
  void* base_ = nullptr;  // the block the memories are bound to
  size_t arena_bytes_ = 0;
  size_t scratch_bytes_ = 0;
  size_t total_bytes_ = 0;  // arena, then the scratchpad
  RunContext ctx_;
  std::unique_ptr<dnnl::stream> stream_;
  int profile_ = 0;  // STEADYOCR_PROFILE: 1 = summary when the plan is dropped, 2 = also every run
  uint64_t runs_ = 0;
  double run_ms_ = 0;
  double run_cpu_ms_ = 0;
};

}  // namespace steadyocr::cpu

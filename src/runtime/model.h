// A loaded model bound to one backend: imports once, specialises and prepares per input shape
// (bounded cache), and runs. Nodes the backend declines run on the next backend of its fallback chain, counted
// and logged (runtime/placement.h). This is what the pipeline calls.
#pragma once

#include <condition_variable>
#include <list>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"
#include "graph/passes/passes.h"
#include "runtime/placement.h"

namespace steadyocr::runtime {

struct ModelOptions {
  bool optimize = true;  // run the graph passes after specialisation
  graph::PassOptions passes;
  size_t max_cached_shapes = 24;  // prepared plans kept (least recently used dropped first)
  // Prepared instances per input shape that warm_up() (or two callers planning a new shape at once) may create;
  // concurrent calls of one shape run on separate instances (each with its own stream and buffers on a GPU) and
  // wait when all are busy. 1 serialises them (right for CPU backends, whose runs use every core).
  int max_replicas = 1;
  // Specialises the model on symbolic shapes once, at load, and runs the passes on that (graph::specialize_symbolic):
  // a new input shape then only evaluates the symbols (graph::instantiate, ~0.1 ms) instead of running the whole
  // pass pipeline (1-5 ms). Checked at load against the plain path on the reference backend (tens of ms, once), and
  // turned off for the model on a mismatch. Pays off when many shapes get planned.
  bool reuse_generic_passes = false;
  // With reuse_generic_passes: one plan for every input shape where the backend makes one (Backend::prepare_symbolic:
  // cpu, vulkan, cuda), so a new shape runs no graph pass. Off, or where the backend plans per shape, each new shape
  // is instantiated and prepared.
  bool symbolic_plans = true;
  // Where a passed check of the symbolic graph (reuse_generic_passes) is remembered between processes
  // (core/disk_cache.h; "" for nowhere): the same model file, options and build skip the check's plain passes and
  // reference runs at the next load (~100 ms of a cold process on 2 cores). The graph those passes make must still
  // match the one remembered, op for op, and each shape's graph is verified as before.
  std::string cache_dir;
  // Where the nodes the backend declines (Backend::supports) run, in order: cpu then reference below a CUDA
  // backend, reference below cpu (runtime::fallback_chain). Empty: a declined node fails the plan.
  std::vector<std::shared_ptr<Backend>> fallbacks;
  // Appends a Top1 node (graph/ir.h) to the model's output: the model then returns f32 [..., 2] (the largest value
  // over the last axis and its index) instead of [..., C]. For the recogniser on a device, whose CTC decoder reads
  // only these: C = 6625 classes stay on the device. Only where the backend runs Top1 itself (Model::load refuses
  // otherwise: it would cross through host memory and gain nothing; Model::options() then says false).
  bool top1_output = false;
  // Prepends an ImageLut node (graph/ir.h) with this table (f32 [C, 256]) to the model's input: the model then takes
  // the picture's bytes, u8 [N, H, W, C], instead of f32 [N, C, H, W], and normalises them on the backend with the
  // host's own table (the same floats). For the detector on a device: a quarter of the bytes cross, and the host's
  // normalisation pass goes away. Only where the backend runs ImageLut (Model::load leaves it off otherwise, with an
  // INFO line; Model::options() then holds no table).
  Tensor image_lut;
  // With image_lut: the bytes carry a mask, u8 [N, H, W, C + 1] (the last byte 0: the pixel's values are 0). For the
  // recogniser, whose rows are zero-padded on the right past each crop (0 is no byte's value in its table).
  bool image_lut_masked = false;
};

// Nodes of one op kind that the model's backend declined and the runtime placed on another backend.
struct OpPlacement {
  std::string op;      // "Resize"
  std::string from;    // the model's backend, which declined them
  std::string to;      // the backend they run on
  uint64_t nodes = 0;  // placements made: nodes of this op, summed over the shapes planned
};

// `options` with constant folding evaluating nodes on the reference kernels (graph/ knows no backend). Model uses
// it when its options bring no evaluator; callers that run the passes themselves (doctor, run-model, tests) too.
graph::PassOptions reference_pass_options(graph::PassOptions options = {});

// Makes `g`'s single output the Top1 of what it was (ModelOptions::top1_output). Unsupported (and `g` unchanged)
// when `backend` does not run Top1; invalid_argument when the output is not f32 with a last axis.
Status append_top1(graph::Graph& g, const Backend& backend);

// Makes `g`'s single input the bytes that `lut` (f32 [C, 256]) turns into what it was (ModelOptions::image_lut): the
// input f32 [N, C, H, W] becomes u8 [N, H, W, C] (masked: [N, H, W, C + 1], ModelOptions::image_lut_masked).
// Unsupported (and `g` unchanged) when `backend` does not run ImageLut; invalid_argument when the input is not f32 of
// rank 4 with C channels.
Status prepend_image_lut(graph::Graph& g, const Tensor& lut, const Backend& backend, bool masked = false);

// The model's input element type: u8 with an ImageLut in front, f32 otherwise.
DType model_input_dtype(const graph::Graph& g);

struct ModelStats {
  uint64_t runs = 0;
  uint64_t plans_built = 0;  // first run of a new input shape
  uint64_t plans_evicted = 0;
  uint64_t replicas_built = 0;          // extra instances of an already planned shape (warm-up, racing callers)
  double plan_ms_total = 0;             // time spent specialising + preparing
  bool generic_passes = false;          // new shapes start from the pre-optimised graph
  bool symbolic_plan = false;           // one plan serves every input shape (ModelOptions::symbolic_plans)
  std::vector<OpPlacement> placements;  // empty while every node runs on the model's backend
};

// The model call that served one run: its rows (the caller's and any merged in from other callers) and how many
// callers' inputs it carried (runtime/batching.h). A plain runner's call is the caller's alone.
// Where a model call's time went (milliseconds), as the caller lived it: waits included.
struct CallProfile {
  double wait_ms = 0;  // waiting for other callers' rows to stack with, for a call slot, for a free plan instance
  double plan_ms = 0;  // finding this input shape's plan, and planning it when it was new
  double run_ms = 0;   // the backend's run, wall clock
  RunProfile backend;  // inside run_ms, where the backend can tell
  CallProfile& operator+=(const CallProfile& o);
};

struct CallInfo {
  int64_t rows = 0;
  int callers = 1;
  CallProfile profile;
};

// What the pipeline runs a model through: a plain Model, or the engine's ladder-aware runner.
class Runner {
 public:
  virtual ~Runner() = default;
  // Runs one input (f32, NCHW) and returns the single output. Thread-safe.
  virtual Result<Tensor> run(const Tensor& input) = 0;
  // run(), also saying which call served it (`info` may be null).
  virtual Result<Tensor> run_call(const Tensor& input, CallInfo* info) {
    if (info) *info = {input.rank() > 0 ? input.dim(0) : 1, 1, {}};
    return run(input);
  }
  // The backend that ran (or will run) the last call, for results and logs.
  virtual std::string backend_name() const = 0;
};

class Model : public Runner {
 public:
  // Imports `path` and checks it has one input and one output. `backend` is shared by models.
  static Result<std::unique_ptr<Model>> load(const std::string& path, std::shared_ptr<Backend> backend,
                                             ModelOptions options = {});

  // Runs one input (f32, NCHW) and returns the single output. Thread-safe; calls on the same input
  // shape share that shape's prepared instances (max_replicas), each serving one call at a time.
  Result<Tensor> run(const Tensor& input) override { return run_call(input, nullptr); }
  Result<Tensor> run_call(const Tensor& input, CallInfo* info) override;
  std::string backend_name() const override { return backend_->name(); }

  const graph::Graph& graph() const { return graph_; }
  const std::string& path() const { return path_; }
  Backend& backend() const { return *backend_; }
  const ModelOptions& options() const { return options_; }
  ModelStats stats() const;
  // Drops every cached plan (and the device memory it holds); the next run plans again. Used on OOM.
  void clear_plans();
  // Plans `input`'s shape now with up to `instances` prepared instances (max_replicas caps it) and runs each one
  // `runs` times, so that planning, calibration and graph capture happen before the first request of that shape.
  Status warm_up(const Tensor& input, int instances, int runs);

 private:
  // One input shape: its optimised graph and the prepared instances (fields below `graph` guarded by mu_).
  struct Plan {
    Shape shape;
    graph::Graph graph;
    std::vector<std::unique_ptr<PreparedGraph>> replicas;
    std::vector<bool> busy;
    int building = 0;       // replicas being prepared now (warm_up)
    int limit = 1;          // lowered when preparing another replica fails
    bool symbolic = false;  // `graph` is symbolic and every instance runs every input shape
    // Its one instance takes every call at once (PreparedGraph::concurrent): never busy, no replicas.
    bool concurrent = false;
  };
  Model() = default;
  Result<std::shared_ptr<Plan>> plan_for(const Shape& shape);
  Result<graph::Graph> specialized_graph(const Shape& shape) const;
  // Specialises symbolically and optimises once; keeps the result when it instantiates to the same computation as
  // the plain path.
  void prepare_generic_graph();
  // The file remembering that the symbolic graph passed its check ("" without a cache directory).
  std::string symbolic_check_marker() const;
  // Plans the symbolic graph once on the backend, when it can (Backend::prepare_symbolic).
  void prepare_symbolic_plan();
  // Whether `shape` fits the symbolic plan: rank and static dims as declared, every assumption on the symbols held.
  bool fits_symbolic_plan(const Shape& shape) const;
  // warm_up() of a plan whose one instance takes concurrent calls: `instances` callers at once (max_replicas caps it).
  Status warm_up_concurrent(Plan& plan, const Tensor& input, int instances, int runs);
  // Takes a free instance of `plan`, waiting while all are busy (the one instance of a concurrent plan at once).
  Result<std::pair<size_t, PreparedGraph*>> acquire(Plan& plan);
  // Prepares `g` on the backend, placing the nodes it declines on the fallbacks (runtime/placement.h).
  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& g, std::vector<NodePlacement>* placements);
  // Another instance of `plan` (warm_up): symbolic or per shape.
  Result<std::unique_ptr<PreparedGraph>> prepare_instance(const Plan& plan);
  // Counts a new plan's placements: ModelStats::placements, steadyocr_op_placements_total, a WARN line once per
  // op kind. Called with mu_ held.
  void record_placements_locked(const std::vector<NodePlacement>& placements);

  std::string path_;
  graph::Graph graph_;
  graph::Graph generic_;  // graph_ specialised symbolically and optimised (valid when has_generic_)
  bool has_generic_ = false;
  std::shared_ptr<Backend> backend_;
  ModelOptions options_;
  mutable std::mutex mu_;
  std::condition_variable freed_;           // an instance became free or was added
  std::list<std::shared_ptr<Plan>> plans_;  // most recently used first
  std::shared_ptr<Plan> symbolic_plan_;     // serves every shape when set (then plans_ stays empty)
  // Shapes the symbolic plan declined at run time (a size past a device limit): planned on their own, as without it.
  std::set<Shape> symbolic_declined_;
  static constexpr size_t kDeclinedKept = 256;  // beyond it the set starts again (each shape is declined anew)
  ModelStats stats_;
  std::set<std::string> placement_logged_;  // op kinds whose placement was logged
};

}  // namespace steadyocr::runtime

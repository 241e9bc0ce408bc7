// Turns a graph with static shapes into a Plan: chooses each node's precision, builds its steps through the op
// builders (ops/), inserts casts at precision boundaries, fuses elementwise chains, and places every buffer in
// one arena by liveness.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/plan.h"
#include "graph/ir.h"

namespace steadyocr::cuda {

enum class Precision { kF32, kF16 };

// The device copies of one graph's constants by the constants' storage, for the builds of a plan for every input
// shape: each new shape's build finds its weights here (one hash lookup) instead of through the device's cache (its
// lock, a tree walk, a counter each; ~1.3 us a weight under load on the H100 host, 2026-12-07). One build at a time.
// Only graph constants go in (their storage lives as long as the graph), at most kMaxEntries (emptied beyond).
class WeightMemo {
 public:
  static constexpr size_t kMaxEntries = 4096;
  DeviceMemoryPtr find(const Tensor& t, DType dt) const;
  void keep(const Tensor& t, DType dt, DeviceMemoryPtr m);
  size_t size() const { return map_.size(); }

 private:
  struct Key {
    const void* raw = nullptr;
    size_t bytes = 0;
    DType from = DType::kF32, to = DType::kF32;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  std::unordered_map<Key, std::pair<Tensor, DeviceMemoryPtr>, KeyHash> map_;  // the tensor keeps its storage alive
};

struct PlanOptions {
  Precision precision = Precision::kF32;
  std::set<std::string> force_f32;  // nodes kept in fp32 (by name), from the calibration
  bool keep_all = false;            // no buffer reuse, no fusion: every value readable after a run (calibration)
  bool own_conv = true;             // depthwise/pointwise convolutions without cuDNN (BackendConfig::own_conv)
  bool cudnn = true;                // false: no convolution through cuDNN (BackendConfig::cudnn)
  bool lease_arena = false;         // no arena of its own: each run binds the plan to a leased one (bind_arena)
  // fp16: the nodes the static rules keep in fp32 (static_f32_nodes), worked out once per model rather than by
  // scanning every weight for each new shape's plan; null: the builder works them out.
  std::shared_ptr<const std::set<std::string>> static_f32;
  // The graph's schedule, worked out once by a plan for every shape (null: the builder works it out). Its nodes
  // were checked against op_supported when it was made, so the builder does not check them again.
  const std::vector<const graph::Node*>* order = nullptr;
  // Where a builder made without a cuDNN handle gets one, the first time cuDNN must be asked (heuristics, a workspace
  // query): a new shape whose convolutions the device's cache answers leases none.
  std::function<Result<cudnnHandle_t>()> cudnn_source;
  // Where graph constants' device copies are looked up first (a plan for every shape's, one build at a time); null:
  // the device's cache only.
  WeightMemo* weights = nullptr;
};

// Where a plan's build went, ms.
struct BuildTimes {
  double walk = 0;   // the op builders over the schedule
  double conv = 0;   // of which Conv and ConvTranspose
  double cudnn = 0;  // of which cuDNN's descriptors and algorithm choice (its workspace query for a new size)
  double cudnn_descriptors = 0;  // of which the descriptors
  double fuse = 0;               // elementwise programs merged
  double place = 0;              // the arena's placement (and binding, for a plan with an arena of its own)
};

// fp16: the nodes kept in fp32 whatever the input (weights beyond fp16's comfortable range, producers of unfolded
// BatchNorms); a function of the model's constants only.
std::set<std::string> static_f32_nodes(const graph::Graph& graph);

struct Plan {
  struct Buffer {
    enum class Kind { kArena, kWeight } kind = Kind::kArena;
    size_t bytes = 0;
    bool whole_run = false;  // graph inputs/outputs and the workspace live for the whole run
    DeviceMemoryPtr weight;  // kWeight
    size_t arena_offset = 0;
  };
  std::vector<std::unique_ptr<Step>> steps;
  std::vector<Buffer> buffers;
  std::vector<DevTensor> inputs, outputs;  // graph inputs (f32) and outputs (f32) as stored on the device
  // Filled for keep_all plans only (the calibration's), whose every value is compared by name:
  std::map<std::string, DevTensor> values;      // every value by name
  std::map<std::string, std::string> producer;  // value name -> producing node name
  std::map<std::string, bool> node_is_f16;      // precision chosen per compute node
  BufRef workspace;
  size_t workspace_bytes = 0;
  size_t arena_bytes = 0;
  DeviceMemoryPtr arena;     // its own (PlanOptions::lease_arena false), else null
  uint64_t bound_arena = 0;  // the leased arena the steps are bound to (0: none yet)
  Bindings bindings;
  int fused_nodes = 0;
  BuildTimes build_times;
};

// Binds the steps of a plan built with lease_arena to the arena at `base` (at least arena_bytes), known by `id`:
// pointer arithmetic only, no device calls (microseconds).
Status bind_arena(Plan& plan, char* base, uint64_t id);

class PlanBuilder {
 public:
  PlanBuilder(CudaDevice& device, cudnnHandle_t cudnn, const graph::Graph& graph, PlanOptions options);
  // Builds, fuses, places and binds the plan (allocating its arena from the device pool).
  Result<std::unique_ptr<Plan>> build();
  // At debug level, the built plan's line (build, fuse, place, its three costliest ops): logged by the caller after
  // it has timed the build, so that the line's own cost is not counted as planning.
  void log_summary() const;
  // The three ops whose builders took longest, with their ms ("Conv 0.11, Add 0.04, MatMul 0.03").
  std::string top_ops() const;

  // ---- for op builders -----------------------------------------------------------------------------------------
  // The floating type the node computes in (f16 only in reduced precision, by the policy).
  DType compute_type(const graph::Node& n) const;
  // The value as stored (any dtype); constants are uploaded as f32 (floats) or as is (integers).
  Result<DevTensor> input_any(const graph::Value* v);
  // The value in `want` (a cast step or a converted constant is added once when needed).
  Result<DevTensor> input(const graph::Value* v, DType want);
  // A new arena buffer for `v` stored as `dt`.
  Result<DevTensor> output(const graph::Value* v, DType dt);
  // `out` shares `in`'s storage with out's shape (Reshape, Squeeze, Unsqueeze, Identity).
  Status alias(const graph::Value* out, const DevTensor& in);
  // Device copy of a graph constant (PlanOptions::weights first, then the device's cache by storage or content).
  Result<BufRef> weight(const Tensor& t, DType dt);
  // Device copy of data the builder made (the device's cache by content only).
  Result<BufRef> weight_made(const Tensor& t, DType dt);
  Result<BufRef> weight_floats(const std::vector<float>& v);
  // A buffer live only during the step being added next.
  BufRef scratch(size_t bytes);
  void need_workspace(size_t bytes);
  BufRef workspace() const { return plan_->workspace; }
  void add_step(std::unique_ptr<Step> s, const graph::Node* n);
  // Time spent in cuDNN's planning calls (BuildTimes::cudnn; counted in the metrics once at the build's end).
  void add_cudnn_ms(double descriptors_ms, double algorithm_ms) {
    plan_->build_times.cudnn += descriptors_ms + algorithm_ms;
    plan_->build_times.cudnn_descriptors += descriptors_ms;
  }
  CudaDevice& device() { return device_; }
  // The build's cuDNN handle: the one given, else PlanOptions::cudnn_source's (asked once).
  Result<cudnnHandle_t> cudnn();
  const graph::Graph& graph() const { return graph_; }
  Precision precision() const { return options_.precision; }
  bool own_conv() const { return options_.own_conv || !options_.cudnn; }
  bool use_cudnn() const { return options_.cudnn; }

 private:
  Status build_node(const graph::Node& n);
  Status finish_outputs();
  int new_buffer(size_t bytes, bool whole_run);
  Result<BufRef> add_weight(DeviceMemoryPtr m);
  Status place_and_bind();

  CudaDevice& device_;
  cudnnHandle_t cudnn_;
  const graph::Graph& graph_;
  PlanOptions options_;
  std::unique_ptr<Plan> plan_;
  std::array<double, static_cast<size_t>(graph::OpKind::kCount)> op_ms_{};  // build time per op kind (metrics)
  std::unordered_map<const graph::Value*, DevTensor> stored_;
  BuildTimes times_;  // of the built plan (log_summary)
  size_t steps_ = 0;
  std::map<std::pair<const graph::Value*, DType>, DevTensor> converted_;
  const std::set<std::string>* static_f32_ = nullptr;  // fp16: the static rules' nodes (options_ or own_static_f32_)
  std::set<std::string> own_static_f32_;
};

// Op builders (one file per op in ops/): add the node's steps through the builder.
using OpBuildFn = Status (*)(PlanBuilder& b, const graph::Node& n);
OpBuildFn find_op_builder(graph::OpKind op);
// Whether the node's op and dtypes are handled (static check used by Backend::supports).
bool op_supported(const graph::Node& n, std::string* why);

// Merges single-consumer elementwise chains into the producing program (conv epilogues or elementwise steps).
int fuse_elementwise(std::vector<std::unique_ptr<Step>>& steps, const std::set<int>& pinned_buffers);

}  // namespace steadyocr::cuda

// A graph planned on a Vulkan device for one set of static shapes. The builder walks the schedule once, gives
// every value a buffer (an arena slice, a cached weight, or a view of another buffer for Reshape-like ops), asks the
// op builders (ops.cpp) for dispatches, places the arena by liveness (common/arena), writes every dispatch's
// parameters into one buffer, and records one command buffer: inputs copied in from a staging buffer, the
// dispatches with a barrier between each, outputs copied out. Running is a memcpy in, one submission, a memcpy out.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "backends/backend.h"
#include "backends/common/arena.h"
#include "backends/vulkan/device.h"
#include "graph/ir.h"
#include "graph/symbolic_shapes.h"

namespace steadyocr::vk {

// A weight's place: a slice of one of the cache's chunks.
struct WeightRef {
  std::shared_ptr<DeviceBuffer> chunk;
  size_t offset = 0;
  size_t bytes = 0;
};

// Weights uploaded once per backend and shared by its plans, keyed by content (folded weights are new tensors for
// every input shape, with the same bytes), sub-allocated from 16 MiB chunks of device memory, uploaded through one
// staging buffer and command buffer kept for the purpose: a new input shape whose weights are known costs no upload.
class WeightCache {
 public:
  explicit WeightCache(std::shared_ptr<Device> device) : device_(std::move(device)) {}
  ~WeightCache();
  Result<WeightRef> get(const void* data, size_t bytes, const std::string& name);
  // A weight placed before from the same live host storage (`owner`, a constant's tensor: every instantiation of a
  // model's graph shares its constants), in the same form (`f16`): a new input shape finds its weights without
  // converting or hashing their bytes (the hash of every weight was most of a new shape's host time).
  std::optional<WeightRef> known(const void* data, const std::shared_ptr<void>& owner, size_t bytes, bool f16) const;
  void remember(const void* data, const std::shared_ptr<void>& owner, size_t bytes, bool f16, const WeightRef& ref);
  size_t bytes() const;

 private:
  Status upload_locked(const void* data, size_t bytes, const WeightRef& dst);
  std::shared_ptr<Device> device_;
  mutable std::mutex mu_;
  std::map<std::pair<uint64_t, size_t>, WeightRef> cache_;
  // known(): by host address; the weak owner tells a live storage from a freed one whose address came back.
  struct Known {
    std::weak_ptr<void> owner;
    size_t bytes = 0;
    bool f16 = false;
    WeightRef ref;
  };
  std::map<const void*, Known> known_;
  size_t known_pruned_ = 0;  // entries after the last sweep of freed owners
  std::vector<std::shared_ptr<DeviceBuffer>> chunks_;
  size_t chunk_used_ = 0;
  size_t bytes_ = 0;
  std::unique_ptr<DeviceBuffer> staging_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

enum class BufKind : uint8_t { kArena, kWeight, kView };

struct Buf {
  DType dtype = DType::kF32;
  size_t bytes = 0;
  BufKind kind = BufKind::kArena;
  int root = -1;  // kView: the buffer holding the bytes
  WeightRef weight;
  common::ArenaBuffer live;
  size_t offset = 0;                    // arena offset of a kArena buffer
  const graph::Value* value = nullptr;  // for messages while the plan is built (a table has none)
};

struct Dispatch {
  Shader shader = Shader::kUnary;
  bool f16 = false;    // the shader's fp16-storage form (set by PlanBuilder::add from the plan's precision)
  bool words = false;  // moves 32-bit words (integer tensors): the fp32 form whatever the precision
  std::vector<uint32_t> params;
  std::vector<int> tensors;  // buffer ids for bindings 1.., in order
  uint32_t groups[3] = {1, 1, 1};
  const graph::Node* node = nullptr;  // what it computes, for messages while the plan is built (null after)
};

class PlanBuilder {
 public:
  // f16: every f32 value is kept as fp16 on the device (weights too); the shaders compute in fp32.
  PlanBuilder(std::shared_ptr<Device> device, WeightCache* weights, bool f16)
      : device_(std::move(device)), weights_(weights), f16_(f16) {}
  bool f16() const { return f16_; }
  // Bytes of one element of `dt` on the device.
  size_t element_bytes(DType dt) const { return f16_ && dt == DType::kF32 ? 2 : dtype_size(dt); }
  // The buffer of a value read by the step being built (a weight for constants).
  Result<int> in(const graph::Value* v);
  // A new arena buffer for a value the step writes.
  int out(const graph::Value* v);
  // `v` shares the bytes of buffer `of` (Reshape, Squeeze, Unsqueeze, Identity).
  int view(const graph::Value* v, int of);
  // `v` is a constant of the plan (e.g. Shape's output), uploaded as a weight.
  Status constant(const graph::Value* v, const Tensor& t);
  // A small table the host computed (e.g. a folded BatchNorm), uploaded as a weight.
  Result<int> table(const std::vector<float>& values, const std::string& name);
  // Adds a dispatch; groups computed from the invocation count (1-D shaders, 256 per workgroup).
  void add_1d(Shader s, std::vector<uint32_t> params, std::vector<int> tensors, uint64_t invocations,
              const graph::Node& n, bool words = false);
  // One workgroup per row (reduce_rows, layernorm).
  void add_rows(Shader s, std::vector<uint32_t> params, std::vector<int> tensors, uint64_t rows, const graph::Node& n,
                bool words = false);
  void add(Dispatch d, const graph::Node& n);
  const Buf& buf(int id) const { return bufs_[static_cast<size_t>(id)]; }
  const Device& device() const { return *device_; }

 private:
  friend class Plan;
  int root_of(int id) const;
  void touch(int id);
  // `owner`: the host storage of a constant, when there is one (WeightCache::known).
  Result<WeightRef> weight(const void* data, size_t bytes, DType dt, const std::string& name,
                           const std::shared_ptr<void>& owner = nullptr);
  std::shared_ptr<Device> device_;
  WeightCache* weights_;
  bool f16_ = false;
  std::vector<Buf> bufs_;
  std::unordered_map<const graph::Value*, int> of_value_;
  std::vector<Dispatch> dispatches_;
};

// Device memory the instances of one shape-free plan (SymbolicPlan) take turns on, one run at a time: the arena and
// the staging buffers, grown to the largest input shape seen.
struct SharedBuffers {
  std::shared_ptr<DeviceBuffer> arena, staging_in, staging_out;
  bool grown = false;  // set by the build that replaced one of them (the instances made before hold the old one)
};

// What a shape-free plan hands each instance it builds: its schedule, made once, and its shared buffers.
// Where an instance's host time went, ms (the debug line of each new shape; issue 13's 0.5 ms bar).
struct InstanceTimes {
  double walk = 0;      // the op builders over the schedule
  double memory = 0;    // the arena's placement, the parameters' buffer, the shared buffers (grown if need be)
  double objects = 0;   // descriptor pool, command pool and buffer, fence
  double sets = 0;      // descriptor sets allocated and written
  double commands = 0;  // the command buffer recorded
};

// A plan's own Vulkan objects: made by driver calls that cost a new shape's call more than the rest of its plan on
// some drivers, so a SymbolicPlan's helper thread makes the next instance's ahead of the shape that needs them.
struct InstanceObjects {
  VkDescriptorPool pool = VK_NULL_HANDLE;
  uint32_t sets = 0;  // the pool's capacity (descriptor sets of Device::kBindings buffers)
  VkCommandPool cmd_pool = VK_NULL_HANDLE;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  std::unique_ptr<DeviceBuffer> params;  // the dispatches' parameter words (host-visible)
};
// `sets` descriptor sets' pool, a command pool and buffer, a fence, and `param_bytes` of parameters (none when 0).
Result<InstanceObjects> make_instance_objects(const std::shared_ptr<Device>& device, uint32_t sets, size_t param_bytes);
// Destroys what `o` still holds (the device must not be running its command buffer).
void destroy_instance_objects(const Device& device, InstanceObjects* o);

struct InstanceContext {
  const std::vector<const graph::Node*>* order = nullptr;
  SharedBuffers* shared = nullptr;
  InstanceTimes* times = nullptr;  // filled when given
  // Objects made ahead: the plan takes those large enough (moved out, leaving the rest here), makes the others.
  InstanceObjects* spare = nullptr;
};

class Plan final : public PreparedGraph {
 public:
  static Result<std::unique_ptr<Plan>> build(const graph::Graph& g, std::shared_ptr<Device> device,
                                             WeightCache* weights, bool f16, const InstanceContext& context = {});
  ~Plan() override;
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  size_t workspace_bytes() const override;
  size_t dispatches() const { return dispatches_.size(); }
  // The parameter bytes its dispatches use (not the buffer's size, which may be a larger spare's: sizing the next
  // spare by that grew it by a quarter per instance, 2026-12-07, to hundreds of MiB and seconds per new shape).
  size_t param_bytes() const { return param_used_; }

 private:
  Plan() = default;
  Status finish(PlanBuilder& b, const graph::Graph& g, SharedBuffers* shared, InstanceObjects* spare);
  Status record(InstanceTimes* times, InstanceObjects* spare);
  struct Port {
    int buf = -1;
    DType dtype = DType::kF32;
    Shape shape;
    size_t bytes = 0;         // host bytes
    size_t device_bytes = 0;  // on the device (half for f32 values of an fp16 plan)
    bool half = false;        // converted f32 <-> fp16 on the way
    size_t staging_offset = 0;
    std::string name;
  };
  std::shared_ptr<Device> device_;
  std::vector<Buf> bufs_;
  std::vector<Dispatch> dispatches_;
  std::vector<Port> inputs_, outputs_;
  std::shared_ptr<DeviceBuffer> arena_, staging_in_, staging_out_;  // a SymbolicPlan's SharedBuffers, or its own
  std::unique_ptr<DeviceBuffer> params_;
  bool shared_ = false;  // arena and staging belong to a SymbolicPlan (workspace_bytes counts the parameters only)
  std::vector<size_t> param_offsets_;
  size_t param_used_ = 0;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  VkCommandPool cmd_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cmd_ = VK_NULL_HANDLE;
  VkFence fence_ = VK_NULL_HANDLE;
};

// One plan for every input shape of a graph specialised on symbols (Backend::prepare_symbolic): a new input shape
// evaluates the symbols, writes the shapes into the plan's own copy of the graph, and builds an instance of it (the
// node walk, the arena's placement, one command buffer: no graph passes, no clone, no schedule, and the weights
// already on the device) on one arena and staging pair shared by every instance. Instances of the last
// kInstancesKept shapes are kept; a shape seen again plans nothing. Runs one call at a time, as every PreparedGraph.
class SymbolicPlan final : public PreparedGraph {
 public:
  static constexpr size_t kInstancesKept = 64;
  // Unsupported when a node has no Vulkan kernel for its dtypes (the runtime then plans per shape and places it).
  static Result<std::unique_ptr<SymbolicPlan>> create(const graph::Graph& graph, std::shared_ptr<Device> device,
                                                      std::shared_ptr<WeightCache> weights, bool f16);
  ~SymbolicPlan() override;
  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override;
  size_t workspace_bytes() const override;
  double last_plan_ms() const override { return last_plan_ms_; }
  size_t instances() const { return instances_.size(); }

 private:
  SymbolicPlan() = default;
  Result<Plan*> instance(const std::vector<Tensor>& inputs);
  // The plan's helper thread (started at the first new shape after the first) does what a new shape's call would pay
  // for otherwise: it destroys the instances dropped (made on the shared buffers a larger shape replaced, or the
  // oldest of kInstancesKept; their frees took 0.06-0.25 ms on lavapipe, 2026-12-07), and it makes the next
  // instance's Vulkan objects ahead (InstanceObjects, sized by the last instance).
  void retire(std::vector<std::unique_ptr<Plan>> plans);
  void want_spare(uint32_t sets, size_t param_bytes);
  void start_helper_locked();
  std::shared_ptr<Device> device_;
  std::shared_ptr<WeightCache> weights_;
  bool f16_ = false;
  graph::Graph graph_;  // the symbolic graph, epilogues expanded; its shapes are rewritten for each new input shape
  std::optional<graph::SymbolicShapes> shapes_;  // of graph_
  std::vector<const graph::Node*> order_;
  std::vector<Shape> input_shapes_;  // the inputs' symbolic shapes (graph_'s are rewritten)
  SharedBuffers shared_;
  std::vector<std::pair<std::vector<Shape>, std::unique_ptr<Plan>>> instances_;  // most recently used last
  double last_plan_ms_ = 0;
  std::mutex retire_mu_;
  std::condition_variable retire_cv_;
  std::vector<std::unique_ptr<Plan>> retired_;  // waiting for the helper
  std::optional<InstanceObjects> spare_;        // made ahead by the helper
  uint32_t spare_sets_ = 0;                     // what the helper is to make when spare_ is empty (0: nothing)
  size_t spare_param_bytes_ = 0;
  bool retire_stop_ = false;
  std::thread retirer_;
};

// What the backend runs, and why not (ops.cpp). With fp16 storage (f32 values are fp16 on the device) a Cast to or
// from f32 has no kernel.
bool op_supported(const graph::Node& n, bool f16_storage, std::string* why);
// Builds the dispatches of one node.
Status build_node(PlanBuilder& b, const graph::Node& n);

}  // namespace steadyocr::vk

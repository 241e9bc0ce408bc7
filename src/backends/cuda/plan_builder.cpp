#include "backends/cuda/plan_builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "backends/common/arena.h"
#include "backends/common/schedule.h"
#include "backends/cuda/check.h"
#include "backends/cuda/ops/ops_util.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::cuda {
namespace {

using graph::Node;
using graph::OpKind;
using graph::Value;

constexpr size_t kAlign = 256;
constexpr float kF16WeightLimit = 16384.f;  // weights/biases beyond this keep their conv in fp32

size_t align_up(size_t n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

bool is_float(DType t) {
  return t == DType::kF32 || t == DType::kF16;
}

float max_abs(const Tensor& t) {
  float m = 0.f;
  if (!t.defined() || t.dtype() != DType::kF32) return m;
  const float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) m = std::max(m, std::fabs(p[i]));
  return m;
}

}  // namespace

PlanBuilder::PlanBuilder(CudaDevice& device, cudnnHandle_t cudnn, const graph::Graph& graph, PlanOptions options)
    : device_(device), cudnn_(cudnn), graph_(graph), options_(std::move(options)), plan_(std::make_unique<Plan>()) {
  stored_.reserve(2 * graph_.nodes().size() + graph_.inputs().size());
  if (options_.precision != Precision::kF16) return;
  if (options_.static_f32) {
    static_f32_ = options_.static_f32.get();
  } else {
    own_static_f32_ = static_f32_nodes(graph_);
    static_f32_ = &own_static_f32_;
  }
}

size_t WeightMemo::KeyHash::operator()(const Key& k) const {
  size_t h = std::hash<const void*>()(k.raw);
  h ^= k.bytes + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h ^ (static_cast<size_t>(k.from) << 8 | static_cast<size_t>(k.to));
}

DeviceMemoryPtr WeightMemo::find(const Tensor& t, DType dt) const {
  auto it = map_.find(Key{t.raw(), t.nbytes(), t.dtype(), dt});
  return it == map_.end() ? nullptr : it->second.second;
}

void WeightMemo::keep(const Tensor& t, DType dt, DeviceMemoryPtr m) {
  if (map_.size() >= kMaxEntries) map_.clear();
  map_.emplace(Key{t.raw(), t.nbytes(), t.dtype(), dt}, std::make_pair(t, std::move(m)));
}

Result<cudnnHandle_t> PlanBuilder::cudnn() {
  if (cudnn_) return cudnn_;
  if (!options_.cudnn_source) return internal_error("this plan build has no cuDNN handle");
  ASSIGN_OR_RETURN(cudnn_, options_.cudnn_source());
  return cudnn_;
}

std::set<std::string> static_f32_nodes(const graph::Graph& graph) {
  std::set<std::string> keep;
  for (const auto& n : graph.nodes()) {
    // An unfolded BatchNorm (after a ConvTranspose in the det head) may carry a huge running variance: its producer's
    // output is only normalised afterwards, so keep that producer in fp32.
    if (n->op == OpKind::kBatchNorm && n->input(0) && n->input(0)->producer) keep.insert(n->input(0)->producer->name);
    if (n->op == OpKind::kConv || n->op == OpKind::kConvTranspose) {
      for (size_t i = 1; i < 3; ++i) {
        const Value* c = n->input(i);
        if (c && c->is_constant() && max_abs(c->constant) > kF16WeightLimit) keep.insert(n->name);
      }
    }
  }
  return keep;
}

DType PlanBuilder::compute_type(const Node& n) const {
  if (options_.precision == Precision::kF32 || options_.force_f32.count(n.name) || static_f32_->count(n.name)) {
    return DType::kF32;
  }
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      return DType::kF16;
    case OpKind::kMatMul:
    case OpKind::kSoftmax:
    case OpKind::kTop1:
    case OpKind::kLayerNorm:
    case OpKind::kReduceMean:
    case OpKind::kBatchNorm:
      return DType::kF32;
    default:
      break;
  }
  // Pointwise and layout ops follow their inputs: f16 only when every computed float input is stored in f16.
  bool any = false;
  for (const Value* v : n.inputs) {
    if (!v || v->is_constant() || !is_float(v->dtype)) continue;
    auto it = stored_.find(v);
    if (it == stored_.end() || it->second.dtype != DType::kF16) return DType::kF32;
    any = true;
  }
  return any ? DType::kF16 : DType::kF32;
}

int PlanBuilder::new_buffer(size_t bytes, bool whole_run) {
  Plan::Buffer b;
  b.bytes = align_up(std::max<size_t>(bytes, 1));
  b.whole_run = whole_run;
  plan_->buffers.push_back(std::move(b));
  return static_cast<int>(plan_->buffers.size()) - 1;
}

Result<BufRef> PlanBuilder::add_weight(DeviceMemoryPtr m) {
  Plan::Buffer b;
  b.kind = Plan::Buffer::Kind::kWeight;
  b.bytes = m->bytes;
  b.weight = std::move(m);
  plan_->buffers.push_back(std::move(b));
  return BufRef{static_cast<int>(plan_->buffers.size()) - 1, 0};
}

Result<BufRef> PlanBuilder::weight(const Tensor& t, DType dt) {
  if (!options_.weights) return weight_made(t, dt);
  if (DeviceMemoryPtr m = options_.weights->find(t, dt)) return add_weight(std::move(m));
  ASSIGN_OR_RETURN(DeviceMemoryPtr m, device_.weight(t, dt));
  options_.weights->keep(t, dt, m);
  return add_weight(std::move(m));
}

Result<BufRef> PlanBuilder::weight_made(const Tensor& t, DType dt) {
  ASSIGN_OR_RETURN(DeviceMemoryPtr m, device_.weight(t, dt));
  return add_weight(std::move(m));
}

Result<BufRef> PlanBuilder::weight_floats(const std::vector<float>& v) {
  return weight_made(Tensor::from_floats({static_cast<int64_t>(v.size())}, v), DType::kF32);
}

BufRef PlanBuilder::scratch(size_t bytes) {
  return BufRef{new_buffer(bytes, false), 0};
}

void PlanBuilder::need_workspace(size_t bytes) {
  plan_->workspace_bytes = std::max(plan_->workspace_bytes, bytes);
}

Result<DevTensor> PlanBuilder::input_any(const Value* v) {
  if (v == nullptr) return internal_error("input_any(null)");
  auto it = stored_.find(v);
  if (it != stored_.end()) return it->second;
  if (!v->is_constant()) {
    return internal_error(fmt::format("value '{}' is read before any step produced it", v->name));
  }
  const Tensor& c = v->constant;
  DType dt = is_float(c.dtype()) ? DType::kF32 : c.dtype();
  DevTensor t;
  ASSIGN_OR_RETURN(t.ref, weight(c, dt));
  t.dtype = dt;
  t.shape = c.shape();
  stored_[v] = t;
  return t;
}

Result<DevTensor> PlanBuilder::input(const Value* v, DType want) {
  ASSIGN_OR_RETURN(DevTensor t, input_any(v));
  if (t.dtype == want) return t;
  auto key = std::make_pair(v, want);
  auto it = converted_.find(key);
  if (it != converted_.end()) return it->second;
  if (!is_float(t.dtype) || !is_float(want)) {
    return unsupported(
        fmt::format("value '{}' is {} but a step needs {}", v->name, dtype_name(t.dtype), dtype_name(want)));
  }
  DevTensor out;
  out.dtype = want;
  out.shape = t.shape;
  if (v->is_constant()) {
    ASSIGN_OR_RETURN(out.ref, weight(v->constant, want));
  } else {
    out.ref = BufRef{new_buffer(out.nbytes(), false), 0};
    EwProgram p;
    p.shape = t.shape;
    p.inputs.push_back({t.ref, t.dtype, t.shape});
    p.out = out.ref;
    p.out_dtype = want;
    auto step = std::make_unique<EwStep>(std::move(p));
    step->label = fmt::format("Cast '{}' to {}", v->name, dtype_name(want));
    plan_->steps.push_back(std::move(step));
  }
  converted_[key] = out;
  return out;
}

Result<DevTensor> PlanBuilder::output(const Value* v, DType dt) {
  if (!v->has_static_shape()) {
    return invalid_argument(
        fmt::format("value '{}' has no static shape ({}); specialise the graph first", v->name, shape_str(v->shape)));
  }
  DevTensor t;
  t.dtype = dt;
  t.shape = v->shape;
  t.ref = BufRef{new_buffer(t.nbytes(), false), 0};
  stored_[v] = t;
  if (options_.keep_all) plan_->values[v->name] = t;
  return t;
}

Status PlanBuilder::alias(const Value* out, const DevTensor& in) {
  if (shape_numel(out->shape) != in.numel()) {
    return invalid_argument(
        fmt::format("'{}': {} elements cannot view {} elements", out->name, shape_numel(out->shape), in.numel()));
  }
  DevTensor t = in;
  t.shape = out->shape;
  stored_[out] = t;
  if (options_.keep_all) plan_->values[out->name] = t;
  return Status::ok();
}

void PlanBuilder::add_step(std::unique_ptr<Step> s, const Node* n) {
  if (n) s->label = n->describe();
  plan_->steps.push_back(std::move(s));
}

Status PlanBuilder::build_node(const Node& n) {
  if (common::is_folded(n)) return Status::ok();
  OpBuildFn fn = find_op_builder(n.op);
  if (!fn) return unsupported(fmt::format("{}: the CUDA backend has no kernel for op {}", n.describe(), op_name(n.op)));
  if (!options_.order) {  // a given schedule's nodes were checked when it was made
    std::string why;
    if (!op_supported(n, &why)) return unsupported(fmt::format("{}: not supported on CUDA: {}", n.describe(), why));
  }
  Stopwatch sw;
  Status s = fn(*this, n);
  const double ms = sw.elapsed_ms();
  op_ms_[static_cast<size_t>(n.op)] += ms;
  if (n.op == OpKind::kConv || n.op == OpKind::kConvTranspose) plan_->build_times.conv += ms;
  if (!s.is_ok()) return s.with_context(n.describe());
  if (!options_.keep_all) return Status::ok();  // the names below are for the calibration's plans
  bool f16 = false;
  for (const Value* o : n.outputs) {
    if (!o) continue;
    plan_->producer[o->name] = n.name;
    auto it = stored_.find(o);
    if (it != stored_.end() && it->second.dtype == DType::kF16) f16 = true;
  }
  plan_->node_is_f16[n.name] = f16;
  return Status::ok();
}

Status PlanBuilder::finish_outputs() {
  std::set<int> taken;
  for (const Value* in : graph_.inputs()) taken.insert(stored_[in].ref.buf);
  for (const Value* v : graph_.outputs()) {
    DevTensor t;
    if (v->is_constant() && !stored_.count(v)) {
      ASSIGN_OR_RETURN(t, input_any(v));
    } else {
      ASSIGN_OR_RETURN(t, input(v, is_float(v->dtype) ? DType::kF32 : v->dtype));
    }
    // Outputs need their own whole-run buffer (not a graph input's, a weight's, or another output's).
    if (taken.count(t.ref.buf) || plan_->buffers[t.ref.buf].kind == Plan::Buffer::Kind::kWeight || t.ref.offset) {
      DevTensor copy = t;
      copy.ref = BufRef{new_buffer(t.nbytes(), true), 0};
      CopyStep::View view;
      view.src = t.ref;
      view.dst = copy.ref;
      view.shape = t.shape.empty() ? Shape{1} : t.shape;
      view.src_strides = shape_strides(view.shape);
      view.dst_strides = view.src_strides;
      auto step = std::make_unique<CopyStep>(static_cast<int>(dtype_size(t.dtype)));
      step->add(std::move(view));
      step->label = fmt::format("Copy output '{}'", v->name);
      plan_->steps.push_back(std::move(step));
      t = copy;
    }
    plan_->buffers[t.ref.buf].whole_run = true;
    taken.insert(t.ref.buf);
    plan_->outputs.push_back(t);
  }
  return Status::ok();
}

Result<std::unique_ptr<Plan>> PlanBuilder::build() {
  SO_GPU_CHECK(cudaSetDevice(device_.index()));
  for (const Value* v : graph_.inputs()) {
    if (!v->has_static_shape()) {
      return invalid_argument(fmt::format("graph input '{}' has no static shape ({})", v->name, shape_str(v->shape)));
    }
    DevTensor t;
    t.dtype = v->dtype;
    t.shape = v->shape;
    t.ref = BufRef{new_buffer(t.nbytes(), true), 0};
    stored_[v] = t;
    if (options_.keep_all) plan_->values[v->name] = t;
    plan_->inputs.push_back(t);
  }
  // The cuDNN workspace: one whole-run buffer sized after every step is known.
  plan_->workspace = BufRef{new_buffer(0, true), 0};
  Stopwatch sw;
  std::vector<const Node*> own_order;
  if (!options_.order) {
    ASSIGN_OR_RETURN(own_order, common::schedule(graph_, common::ScheduleOrder::kGraph));
  }
  for (const Node* n : options_.order ? *options_.order : own_order) RETURN_IF_ERROR(build_node(*n));
  RETURN_IF_ERROR(finish_outputs());
  plan_->buffers[plan_->workspace.buf].bytes = align_up(std::max<size_t>(plan_->workspace_bytes, 1));
  const double build_ms = sw.elapsed_ms();
  sw.reset();
  if (!options_.keep_all) {
    std::set<int> pinned;
    for (const auto& t : plan_->outputs) pinned.insert(t.ref.buf);
    for (const auto& t : plan_->inputs) pinned.insert(t.ref.buf);
    plan_->fused_nodes = fuse_elementwise(plan_->steps, pinned);
  }
  const double fuse_ms = sw.elapsed_ms();
  sw.reset();
  RETURN_IF_ERROR(place_and_bind());
  plan_->build_times.walk = build_ms;
  plan_->build_times.fuse = fuse_ms;
  plan_->build_times.place = sw.elapsed_ms();
  if (const BuildTimes& t = plan_->build_times; t.cudnn > 0) {  // plan_with_cudnn's calls, counted once a build
    metrics::inc("steadyocr_cuda_cudnn_plan_ms_total", {{"phase", "descriptors"}}, t.cudnn_descriptors);
    metrics::inc("steadyocr_cuda_cudnn_plan_ms_total", {{"phase", "algorithm"}}, t.cudnn - t.cudnn_descriptors);
  }
  if (!options_.keep_all) {
    metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "build"}}, build_ms);
    metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "fuse"}}, fuse_ms);
    metrics::inc("steadyocr_cuda_prepare_ms_total", {{"phase", "place"}}, sw.elapsed_ms());
    std::vector<std::pair<std::string, double>> per_op;
    for (size_t op = 0; op < op_ms_.size(); ++op) {
      if (op_ms_[op] > 0) per_op.emplace_back(op_name(static_cast<OpKind>(op)), op_ms_[op]);
    }
    metrics::inc_each("steadyocr_cuda_build_ms_total", "op", per_op);
  }
  steps_ = plan_->steps.size();
  times_ = plan_->build_times;
  return std::move(plan_);
}

std::string PlanBuilder::top_ops() const {
  std::vector<std::pair<double, std::string>> ops;
  for (size_t op = 0; op < op_ms_.size(); ++op) {
    if (op_ms_[op] > 0) ops.emplace_back(op_ms_[op], op_name(static_cast<OpKind>(op)));
  }
  std::sort(ops.rbegin(), ops.rend());
  std::string top;
  for (size_t i = 0; i < std::min<size_t>(3, ops.size()); ++i) {
    top += fmt::format("{}{} {:.2f}", i ? ", " : "", ops[i].second, ops[i].first);
  }
  return top;
}

void PlanBuilder::log_summary() const {
  if (options_.keep_all || log::level() > log::Level::kDebug) return;
  const BuildTimes& t = times_;
  log::debug("cuda", "plan of {} for {}: build {:.2f} ms ({}), fuse {:.2f}, place {:.2f}; {} steps", graph_.name(),
             graph_.inputs().empty() ? "?" : shape_str(graph_.inputs()[0]->shape), t.walk, top_ops(), t.fuse, t.place,
             steps_);
}

Status PlanBuilder::place_and_bind() {
  Plan& p = *plan_;
  const int nb = static_cast<int>(p.buffers.size());
  // Weights live in their own device memory; every other buffer goes in the arena (for keep_all plans each its
  // own bytes, all alive after the run).
  std::vector<common::ArenaBuffer> live(nb);
  std::vector<BufRef> reads, writes;
  for (int i = 0; i < static_cast<int>(p.steps.size()); ++i) {
    reads.clear();
    writes.clear();
    p.steps[i]->collect(&reads, &writes);
    for (const auto* list : {&reads, &writes}) {
      for (const BufRef& r : *list) {
        if (r.valid()) live[r.buf].touch(i);
      }
    }
  }
  for (int b = 0; b < nb; ++b) {
    const auto& buf = p.buffers[b];
    if (buf.kind != Plan::Buffer::Kind::kArena) {
      live[b] = common::ArenaBuffer();
      continue;
    }
    live[b].bytes = buf.bytes;
    if (buf.whole_run || options_.keep_all) live[b].whole_run();
  }
  common::ArenaOptions ao;
  ao.alignment = kAlign;
  ao.reuse = !options_.keep_all;
  const common::ArenaLayout layout = common::plan_arena(live, ao);
  for (int b = 0; b < nb; ++b) p.buffers[b].arena_offset = layout.offsets[b];
  const size_t total = layout.bytes;
  p.arena_bytes = total;
  if (options_.lease_arena) return Status::ok();  // bound to the arena of each run (bind_arena)
  ASSIGN_OR_RETURN(p.arena, device_.pool()->allocate(std::max<size_t>(total, 1), "activation arena"));
  return bind_arena(p, static_cast<char*>(p.arena->ptr), 0);
}

Status bind_arena(Plan& p, char* base, uint64_t id) {
  const size_t nb = p.buffers.size();
  p.bindings.bases.assign(nb, nullptr);
  for (size_t b = 0; b < nb; ++b) {
    const auto& buf = p.buffers[b];
    p.bindings.bases[b] =
        buf.kind == Plan::Buffer::Kind::kWeight ? static_cast<char*>(buf.weight->ptr) : base + buf.arena_offset;
  }
  for (auto& s : p.steps) {
    Status st = s->bind(p.bindings);
    if (!st.is_ok()) {
      p.bound_arena = 0;
      return st.with_context(s->label);
    }
  }
  p.bound_arena = id;
  return Status::ok();
}

}  // namespace steadyocr::cuda

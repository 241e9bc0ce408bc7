#include "backends/cpu/plan.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "backends/common/arena.h"
#include "backends/common/schedule.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"
#include "core/content_hash.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"

namespace steadyocr::cpu {
namespace {

constexpr size_t kAlign = 64;

size_t align_up(size_t n, size_t a) {
  return (n + a - 1) / a * a;
}

double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

int profile_level() {
  const char* e = std::getenv("STEADYOCR_PROFILE");
  if (!e || !*e || std::strcmp(e, "0") == 0) return 0;
  return std::atoi(e) >= 2 ? 2 : 1;
}

}  // namespace

// ---- DnnlArgs ----

Status DnnlArgs::bind(const RunContext& ctx, const Md& scratch_md) {
  return dnnl_try("binding memories", [&] {
    for (const auto& a : bufs_) args_[a.arg] = dnnl::memory(a.md, cpu_engine(), nullptr);
    for (const auto& [arg, m] : fixed_) args_[arg] = m;
    has_scratch_ = scratch_md.get_size() > 0;
    if (has_scratch_) args_[DNNL_ARG_SCRATCHPAD] = dnnl::memory(scratch_md, cpu_engine(), nullptr);
    epoch_ = ~uint64_t{0};
  });
}

Status DnnlArgs::execute(RunContext& ctx, const dnnl::primitive& p, const char* what) {
  try {
    const bool moved = epoch_ != ctx.epoch();
    for (const auto& a : bufs_) {
      if (moved || ctx.is_external(a.buf)) {
        args_[a.arg].set_data_handle(static_cast<char*>(ctx.ptr(a.buf)) + a.offset);
      }
    }
    if (moved && has_scratch_) args_[DNNL_ARG_SCRATCHPAD].set_data_handle(ctx.scratchpad());
    epoch_ = ctx.epoch();
    p.execute(ctx.stream(), args_);
  } catch (const dnnl::error& e) {
    return dnnl_error(e, std::string("executing ") + what);
  }
  return Status::ok();
}

// ---- PlanBuilder ----

PlanBuilder::PlanBuilder(CpuPlan& plan, const graph::Graph& graph, WeightCache& weights)
    : plan_(plan), graph_(graph), weights_(weights) {
  for (const auto& n : graph.nodes()) {
    for (const graph::Value* in : n->inputs) {
      if (in) {
        auto& list = consumers_[in];
        if (std::find(list.begin(), list.end(), n.get()) == list.end()) list.push_back(n.get());
      }
    }
  }
  for (const graph::Value* v : graph.outputs()) outputs_.insert(v);
}

const Buffer& PlanBuilder::buffer(int id) const {
  return plan_.buffers_[id];
}

int PlanBuilder::root_of(int buf) const {
  const Buffer& b = plan_.buffers_[buf];
  return b.storage == Storage::kView ? b.root : buf;
}

Result<int> PlanBuilder::home(const graph::Value* v) {
  if (!v) return internal_error("missing input value");
  auto it = home_.find(v);
  if (it != home_.end()) return it->second;
  if (v->is_constant()) {
    const Tensor& t = keep(v->constant);
    Buffer buf;
    buf.dtype = t.dtype();
    buf.shape = t.shape();
    if (t.dtype() == DType::kF32) buf.md = plain_md(t.shape());
    buf.bytes = t.nbytes();
    buf.storage = Storage::kConstant;
    buf.constant = t.raw();
    buf.name = v->name;
    plan_.buffers_.push_back(std::move(buf));
    root_values_.emplace_back();
    int id = static_cast<int>(plan_.buffers_.size()) - 1;
    set_home(v, id);
    return id;
  }
  return internal_error(fmt::format("value '{}' is used before any step produced it", v->name));
}

void PlanBuilder::set_home(const graph::Value* v, int buf) {
  home_[v] = buf;
  root_values_[root_of(buf)].push_back(v);
}

int PlanBuilder::new_buffer(DType dtype, const Shape& shape, const Md& md, const std::string& name) {
  Buffer buf;
  buf.dtype = dtype;
  buf.shape = shape;
  buf.md = md;
  int64_t n = shape_numel(shape);
  buf.bytes = dtype == DType::kF32 ? md.get_size() : static_cast<size_t>(std::max<int64_t>(n, 0)) * dtype_size(dtype);
  buf.name = name;
  plan_.buffers_.push_back(std::move(buf));
  root_values_.emplace_back();
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

int PlanBuilder::new_constant(Tensor t, const Md& md, const std::string& name) {
  const Tensor& kept = keep(std::move(t));
  Buffer buf;
  buf.dtype = kept.dtype();
  Dims d = md.dims();
  buf.shape = Shape(d.begin(), d.end());
  buf.md = md;
  buf.bytes = kept.nbytes();
  buf.storage = Storage::kConstant;
  buf.constant = kept.raw();
  buf.name = name;
  plan_.buffers_.push_back(std::move(buf));
  root_values_.emplace_back();
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

int PlanBuilder::new_view(int of, const Shape& shape, const std::string& name) {
  const Buffer& src = plan_.buffers_[of];
  Buffer buf;
  buf.dtype = src.dtype;
  buf.shape = shape;
  if (src.dtype == DType::kF32) buf.md = plain_md(shape);
  buf.bytes = src.bytes;
  buf.storage = Storage::kView;
  buf.root = root_of(of);
  buf.name = name;
  plan_.buffers_.push_back(std::move(buf));
  root_values_.emplace_back();
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

Result<int> PlanBuilder::in_layout(const graph::Value* v, const Md& md) {
  ASSIGN_OR_RETURN(int h, home(v));
  const Buffer& hb = plan_.buffers_[h];
  if (hb.dtype != DType::kF32) {
    if (md.get_size() == hb.bytes) return h;
    return unsupported(fmt::format("value '{}' of type {} cannot change layout", v->name, dtype_name(hb.dtype)));
  }
  if (hb.md == md) return h;
  std::string key = md_str(md) + "/" + std::to_string(hash_bytes(&md.data, sizeof(md.data)));
  auto it = layout_cache_.find({v, key});
  if (it != layout_cache_.end()) return it->second;
  int out = new_buffer(DType::kF32, hb.shape, md, v->name + "@" + md_str(md));
  RETURN_IF_ERROR(add_reorder(h, out, nullptr));
  layout_cache_[{v, key}] = out;
  root_values_[out].push_back(v);
  return out;
}

Result<int> PlanBuilder::plain(const graph::Value* v) {
  ASSIGN_OR_RETURN(int h, home(v));
  const Buffer& hb = plan_.buffers_[h];
  if (hb.dtype != DType::kF32) return h;
  return in_layout(v, plain_md(hb.shape));
}

Status PlanBuilder::add_reorder(int src, int dst, const graph::Node* node) {
  const Buffer& s = plan_.buffers_[src];
  const Buffer& d = plan_.buffers_[dst];
  ASSIGN_OR_RETURN(auto op, make_reorder_op(src, s.md, dst, d.md));
  add_step(std::move(op), {src}, {dst}, node);
  return Status::ok();
}

void PlanBuilder::add_step(std::unique_ptr<CpuOp> op, std::vector<int> reads, std::vector<int> writes,
                           const graph::Node* node) {
  CpuPlan::Step s;
  s.op = std::move(op);
  s.reads = std::move(reads);
  s.writes = std::move(writes);
  s.node = node ? node->name : "";
  s.kind = node ? graph::op_name(node->op) : "Reorder";
  plan_.steps_.push_back(std::move(s));
}

bool PlanBuilder::dies_with(int buf, const std::set<const graph::Node*>& current) const {
  int r = root_of(buf);
  if (plan_.buffers_[r].storage != Storage::kArena) return false;
  if (std::getenv("STEADYOCR_CPU_INPLACE") && std::string(std::getenv("STEADYOCR_CPU_INPLACE")) == "0") return false;
  for (const graph::Value* v : root_values_[r]) {
    if (outputs_.count(v)) return false;
    for (const graph::Node* c : consumers(v)) {
      if (!built_.count(c) && !absorbed_.count(c) && !current.count(c)) return false;
    }
  }
  return true;
}

const std::vector<graph::Node*>& PlanBuilder::consumers(const graph::Value* v) const {
  static const std::vector<graph::Node*> kNone;
  auto it = consumers_.find(v);
  return it == consumers_.end() ? kNone : it->second;
}

bool PlanBuilder::is_graph_output(const graph::Value* v) const {
  return outputs_.count(v) > 0;
}

bool PlanBuilder::available(const graph::Value* v) const {
  return v && (v->is_constant() || home_.count(v));
}

const Tensor& PlanBuilder::keep(Tensor t) {
  plan_.kept_.push_back(std::move(t));
  return plan_.kept_.back();
}

// ---- CpuPlan ----

Status PlanBuilder::expand_epilogue(const graph::Node& n) {
  expand_.insert(n.name);
  return unsupported(
      fmt::format("{}: oneDNN took only part of its epilogue; planning again with it as steps", n.describe()));
}

Result<std::unique_ptr<CpuPlan>> CpuPlan::build(const graph::Graph& graph, WeightCache& weights,
                                                std::shared_ptr<ArenaPool> pool) {
  std::set<std::string> expand;
  auto plan = build_once(graph, weights, pool, &expand);
  // Each retry expands at least one more node's epilogue, so this ends.
  while (!plan.is_ok() && !expand.empty()) {
    const size_t asked = expand.size();
    graph::Graph g = graph.clone();
    std::vector<graph::Node*> nodes;
    for (const auto& n : g.nodes()) {
      if (expand.count(n->name) && !n->epilogue.empty()) nodes.push_back(n.get());
    }
    if (nodes.empty()) break;
    for (graph::Node* n : nodes) graph::expand_epilogue(g, n);
    log::debug("cpu", "'{}': {} epilogues run as steps of their own", graph.name(), nodes.size());
    plan = build_once(g, weights, pool, &expand);
    if (expand.size() == asked) break;
  }
  return plan;
}

Result<std::unique_ptr<CpuPlan>> CpuPlan::build_once(const graph::Graph& graph, WeightCache& weights,
                                                     std::shared_ptr<ArenaPool> pool, std::set<std::string>* expand) {
  std::unique_ptr<CpuPlan> plan(new CpuPlan());
  plan->pool_ = std::move(pool);
  plan->name_ = graph.name();
  plan->profile_ = profile_level();
  PlanBuilder b(*plan, graph, weights);
  for (const graph::Value* v : graph.inputs()) {
    if (!v->has_static_shape()) {
      return invalid_argument(fmt::format("graph input '{}' has no static shape {}; specialise the graph first",
                                          v->name, shape_str(v->shape)));
    }
    int id = b.new_buffer(v->dtype, v->shape, v->dtype == DType::kF32 ? plain_md(v->shape) : Md(), v->name);
    plan->buffers_[id].storage = Storage::kInput;
    plan->buffers_[id].input_index = static_cast<int>(plan->input_bufs_.size());
    plan->input_bufs_.push_back(id);
    plan->input_shapes_.push_back(v->shape);
    b.set_home(v, id);
  }
  Stopwatch build_watch;
  const double cpu_start = process_cpu_ms();
  // Depth-first: elementwise chains find their operands built and their intermediates die early.
  ASSIGN_OR_RETURN(auto order, common::schedule(graph, common::ScheduleOrder::kDepthFirst));
  for (const graph::Node* n : order) {
    if (b.absorbed_.count(n) || common::is_folded(*n)) continue;
    for (const graph::Value* o : n->outputs) {
      if (o && !o->has_static_shape()) {
        return invalid_argument(fmt::format("{}: output '{}' has no static shape {}; specialise the graph first",
                                            n->describe(), o->name, shape_str(o->shape)));
      }
    }
    const CpuOpEntry* op = cpu_ops().find(n->op);
    Status s =
        op ? op->build(b, *n)
           : unsupported(fmt::format("{}: the cpu backend has no kernel for {}", n->describe(), graph::op_name(n->op)));
    if (!s.is_ok()) {
      expand->insert(b.expand_.begin(), b.expand_.end());
      return s.with_context(fmt::format("cpu backend, {}", n->describe()));
    }
    b.built_.insert(n);
  }
  for (const graph::Value* v : graph.outputs()) {
    ASSIGN_OR_RETURN(int id, b.plain(v));
    plan->output_bufs_.push_back(id);
    plan->output_dtypes_.push_back(plan->buffers_[id].dtype);
  }
  const double build_ms = build_watch.elapsed_ms(), build_cpu = process_cpu_ms() - cpu_start;
  RETURN_IF_ERROR(plan->plan_memory());
  if (plan->profile_) {
    fmt::print(stderr,
               "[cpu profile] planned '{}': steps built in {:.1f} ms (cpu {:.1f}), memory + primitives in {:.1f} ms "
               "(cpu {:.1f})\n",
               plan->name_, build_ms, build_cpu, build_watch.elapsed_ms() - build_ms,
               process_cpu_ms() - cpu_start - build_cpu);
  }
  log::debug("cpu", "planned '{}': {} steps, {} buffers, activations {:.1f} MiB, scratchpad {:.1f} MiB", plan->name_,
             plan->steps_.size(), plan->buffers_.size(), plan->arena_bytes_ / 1048576.0,
             plan->scratch_bytes_ / 1048576.0);
  return plan;
}

Status CpuPlan::plan_memory() {
  const int n_steps = static_cast<int>(steps_.size());
  auto root = [&](int b) { return buffers_[b].storage == Storage::kView ? buffers_[b].root : b; };
  // Views take their root's bytes; only arena roots are placed.
  std::vector<common::ArenaBuffer> live(buffers_.size());
  for (int i = 0; i < n_steps; ++i) {
    for (const auto* list : {&steps_[i].reads, &steps_[i].writes}) {
      for (int b : *list) live[root(b)].touch(i);
    }
  }
  for (int b : output_bufs_) live[root(b)].touch(n_steps);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    live[i].bytes = buffers_[i].bytes;
    if (buffers_[i].storage != Storage::kArena) live[i] = common::ArenaBuffer();
  }
  common::ArenaOptions ao;
  ao.alignment = kAlign;
  const common::ArenaLayout layout = common::plan_arena(live, ao);
  for (size_t i = 0; i < buffers_.size(); ++i) buffers_[i].offset = layout.offsets[i];
  const size_t total = layout.bytes;
  arena_bytes_ = align_up(total, 4096);
  for (const Step& s : steps_) scratch_bytes_ = std::max(scratch_bytes_, s.op->scratchpad_bytes());
  total_bytes_ = arena_bytes_ + align_up(scratch_bytes_, 4096);
  ctx_.ptrs_.assign(buffers_.size(), nullptr);
  ctx_.external_.assign(buffers_.size(), false);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& b = buffers_[i];
    const Buffer& r = buffers_[root(static_cast<int>(i))];
    switch (r.storage) {
      case Storage::kArena:
        break;  // set when a run takes its block (rebase)
      case Storage::kConstant:
        ctx_.ptrs_[i] = const_cast<void*>(r.constant);
        break;
      case Storage::kInput:
        ctx_.external_[i] = true;
        break;
      case Storage::kView:
        return internal_error("a view of a view reached memory planning");
    }
    (void)b;
  }
  RETURN_IF_ERROR(dnnl_try("creating a stream", [&] { stream_ = std::make_unique<dnnl::stream>(cpu_engine()); }));
  ctx_.stream_ = stream_.get();
  // Primitive creation (JIT code generation) dominates planning a new shape: spread it over the threads.
  std::vector<Status> bound(steps_.size());
  parallel_for_each(static_cast<int64_t>(steps_.size()), [&](int64_t i) { bound[i] = steps_[i].op->bind(ctx_); });
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (!bound[i].is_ok()) return bound[i].with_context("cpu backend, binding " + steps_[i].op->describe());
  }
  return Status::ok();
}

CpuPlan::~CpuPlan() {
  if (profile_ && runs_) print_profile();
  steps_.clear();
}

void CpuPlan::rebase(void* base) {
  base_ = base;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& r = buffers_[buffers_[i].storage == Storage::kView ? buffers_[i].root : i];
    if (r.storage == Storage::kArena) ctx_.ptrs_[i] = static_cast<char*>(base) + r.offset;
  }
  ctx_.scratchpad_ = static_cast<char*>(base) + arena_bytes_;
  ++ctx_.epoch_;
}

Status CpuPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  if (inputs.size() != input_bufs_.size()) {
    return invalid_argument(fmt::format("'{}' takes {} inputs, got {}", name_, input_bufs_.size(), inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer& b = buffers_[input_bufs_[i]];
    if (inputs[i].shape() != input_shapes_[i] || inputs[i].dtype() != b.dtype) {
      return invalid_argument(fmt::format("input {} of '{}' is {}; this plan was prepared for {}[{}]", i, name_,
                                          inputs[i].describe(), dtype_name(b.dtype), shape_str(input_shapes_[i])));
    }
  }
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& r = buffers_[buffers_[i].storage == Storage::kView ? buffers_[i].root : i];
    if (r.storage == Storage::kInput) ctx_.ptrs_[i] = const_cast<void*>(inputs[r.input_index].raw());
  }
  Stopwatch total;
  const double cpu0 = profile_ ? process_cpu_ms() : 0;
  // Activation memory for this run; given back however the run ends.
  ArenaPool::Block block;
  if (total_bytes_) {
    block = pool_->acquire(total_bytes_);
    if (!block.ptr) {
      return Status(StatusCode::kOutOfMemory,
                    fmt::format("cpu backend: cannot allocate {:.1f} MiB of activations for '{}'",
                                total_bytes_ / 1048576.0, name_));
    }
    if (block.ptr != base_) rebase(block.ptr);
  }
  // Threads for this run: --threads, shared among the runs in progress on this backend (two images run
  // concurrently on two cores get one each rather than two teams of two), applied in the calling thread
  // because oneDNN sizes its parallel regions from it and a thread the runtime did not create does not
  // inherit omp_set_num_threads. Nested inside a parallel region everything runs serially anyway.
  if (!in_parallel_region()) {
    const int concurrent = std::max(1, total_bytes_ ? pool_->in_use() : 1);
    const int threads = threads_for_run(concurrent);
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  }
  struct Release {
    ArenaPool* pool;
    ArenaPool::Block block;
    ~Release() {
      if (block.ptr) pool->release(block);
    }
  } release{pool_.get(), block};
  for (Step& s : steps_) {
    if (profile_) {
      Stopwatch sw;
      const double c0 = process_cpu_ms();
      Status st = s.op->run(ctx_);
      s.ms += sw.elapsed_ms();
      s.cpu_ms += process_cpu_ms() - c0;
      if (!st.is_ok()) return st.with_context("cpu backend, " + (s.node.empty() ? s.op->describe() : s.node));
    } else {
      Status st = s.op->run(ctx_);
      if (!st.is_ok()) return st.with_context("cpu backend, " + (s.node.empty() ? s.op->describe() : s.node));
    }
  }
  RETURN_IF_ERROR(dnnl_try("waiting for the stream", [&] { stream_->wait(); }));
  outputs->clear();
  for (size_t i = 0; i < output_bufs_.size(); ++i) {
    const Buffer& b = buffers_[output_bufs_[i]];
    Tensor t = Tensor::empty(b.dtype, b.shape);
    std::memcpy(t.raw(), ctx_.ptr(output_bufs_[i]), t.nbytes());
    outputs->push_back(std::move(t));
  }
  if (profile_) {
    double ms = total.elapsed_ms(), cpu = process_cpu_ms() - cpu0;
    run_ms_ += ms;
    run_cpu_ms_ += cpu;
    ++runs_;
    if (profile_ >= 2)
      fmt::print(stderr, "[cpu profile] '{}' run {}: {:.2f} ms (cpu {:.2f} ms)\n", name_, runs_, ms, cpu);
  }
  return Status::ok();
}

std::vector<std::string> CpuPlan::step_labels() const {
  std::vector<std::string> v;
  for (const Step& s : steps_) v.push_back(s.op->describe());
  return v;
}

void CpuPlan::print_profile() const {
  std::string in;
  for (const auto& s : input_shapes_) in += shape_str(s) + " ";
  fmt::print(stderr,
             "[cpu profile] '{}' input {}: {} runs, {:.2f} ms/run (cpu {:.2f} ms), {} steps, arena {:.1f} MiB, {} "
             "threads\n",
             name_, in, runs_, run_ms_ / runs_, run_cpu_ms_ / runs_, steps_.size(), total_bytes_ / 1048576.0,
             num_threads());
  struct Kind {
    double ms = 0, cpu_ms = 0;
    int steps = 0;
  };
  std::map<std::string, Kind> by_kind;
  for (const Step& s : steps_) {
    auto& k = by_kind[s.kind];
    k.ms += s.ms;
    k.cpu_ms += s.cpu_ms;
    k.steps += 1;
  }
  std::vector<std::pair<std::string, Kind>> kinds(by_kind.begin(), by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](auto& a, auto& b) { return a.second.ms > b.second.ms; });
  for (const auto& [k, v] : kinds) {
    fmt::print(stderr, "[cpu profile]   {:<20} {:4} steps {:9.3f} ms/run (cpu {:9.3f})\n", k, v.steps, v.ms / runs_,
               v.cpu_ms / runs_);
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& s = steps_[i];
    fmt::print(stderr, "[cpu profile]   #{:<4} {:8.3f} ms (cpu {:8.3f})  {:<24} {}\n", i, s.ms / runs_,
               s.cpu_ms / runs_, s.node.substr(0, 24), s.op->describe());
  }
}

}  // namespace steadyocr::cpu

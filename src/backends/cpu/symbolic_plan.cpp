#include "backends/cpu/symbolic_plan.h"

#include <fmt/format.h>
#include <omp.h>

#include <cstdlib>
#include <cstring>

#include "backends/common/schedule.h"
#include "backends/cpu/sym_ops.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"

namespace steadyocr::cpu {
namespace {

using graph::OpKind;
using Storage = SymBuffer::Storage;

constexpr size_t kPlacementsKept = 64;  // input shapes whose buffer placement is kept (a few KiB each)

// `t` (logical NCHW) reordered to channels-last.
Tensor constant_nhwc(const Tensor& t) {
  const Shape& s = t.shape();
  Tensor out = Tensor::empty(t.dtype(), {s[0], s[2], s[3], s[1]});
  const size_t es = dtype_size(t.dtype());
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w) {
          std::memcpy(dst + (((n * s[2] + h) * s[3] + w) * s[1] + c) * es,
                      src + (((n * s[1] + c) * s[2] + h) * s[3] + w) * es, es);
        }
  return out;
}

}  // namespace

SymOpFn find_sym_op(OpKind op) {
  switch (op) {
    case OpKind::kConv:
      return build_sym_conv;
    case OpKind::kConvTranspose:
      return build_sym_conv_transpose;
    case OpKind::kGlobalAveragePool:
    case OpKind::kAveragePool:
    case OpKind::kMaxPool:
      return build_sym_pool;
    case OpKind::kResize:
      return build_sym_resize;
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kSqrt:
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kClip:
      return build_sym_eltwise;
    case OpKind::kMatMul:
      return build_sym_matmul;
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
      return build_sym_rows;
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kIdentity:
      return build_sym_view;
    case OpKind::kTranspose:
      return build_sym_transpose;
    case OpKind::kSlice:
      return build_sym_slice;
    case OpKind::kConcat:
      return build_sym_concat;
    default:
      return nullptr;
  }
}

Shape SymRun::physical(int buf) const {
  const Shape& s = shapes_[static_cast<size_t>(buf)];
  if ((*buffers_)[static_cast<size_t>(buf)].layout != Layout::kNhwc) return s;
  return {s[0], s[2], s[3], s[1]};
}

// ---- builder ---------------------------------------------------------------------------------------------------

SymBuilder::SymBuilder(SymbolicPlan& plan, const graph::Graph& graph) : plan_(plan), graph_(graph) {
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    const graph::Value* in = graph.inputs()[i];
    SymBuffer b;
    b.dtype = in->dtype;
    b.shape = in->shape;
    b.storage = Storage::kInput;
    b.input_index = static_cast<int>(i);
    b.name = in->name;
    plan_.buffers_.push_back(b);
    home_[in] = static_cast<int>(plan_.buffers_.size()) - 1;
    plan_.input_bufs_.push_back(home_[in]);
  }
}

const SymBuffer& SymBuilder::buffer(int id) const {
  return plan_.buffers_[static_cast<size_t>(id)];
}

int SymBuilder::root_of(int buf) const {
  const SymBuffer& b = plan_.buffers_[static_cast<size_t>(buf)];
  return b.storage == Storage::kView ? b.root : buf;
}

Result<int> SymBuilder::home(const graph::Value* v) {
  auto it = home_.find(v);
  if (it != home_.end()) return it->second;
  if (v->is_constant()) {
    const int b = new_constant(v->constant, Layout::kPlain, v->name);
    home_[v] = b;
    return b;
  }
  return internal_error(fmt::format("'{}' is read before it is computed", v->name));
}

Result<int> SymBuilder::in_layout(const graph::Value* v, Layout layout) {
  ASSIGN_OR_RETURN(int h, home(v));
  if (buffer(h).layout == layout) return h;
  if (v->shape.size() != 4) return internal_error(fmt::format("'{}' is not 4-D: no channels-last form", v->name));
  auto it = converted_.find({v, layout});
  if (it != converted_.end()) return it->second;
  int out;
  if (v->is_constant()) {
    out = new_constant(layout == Layout::kNhwc ? constant_nhwc(v->constant) : v->constant, layout, v->name);
    plan_.buffers_[static_cast<size_t>(out)].shape = v->shape;  // logical, whatever the storage order
  } else {
    out = new_buffer(v->dtype, v->shape, layout, v->name + (layout == Layout::kNhwc ? ".nhwc" : ".nchw"));
    add_step(make_layout_conversion(h, out, layout), {h}, {out}, nullptr);
  }
  converted_[{v, layout}] = out;
  return out;
}

int SymBuilder::new_buffer(const graph::Value* v, Layout layout) {
  return new_buffer(v->dtype, v->shape, layout, v->name);
}

int SymBuilder::new_buffer(DType dtype, const Shape& shape, Layout layout, const std::string& name) {
  SymBuffer b;
  b.dtype = dtype;
  b.shape = shape;
  b.layout = shape.size() == 4 ? layout : Layout::kPlain;
  b.name = name;
  plan_.buffers_.push_back(b);
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

int SymBuilder::new_view(int of, const Shape& shape, const std::string& name) {
  SymBuffer b;
  b.dtype = buffer(of).dtype;
  b.shape = shape;
  b.storage = Storage::kView;
  b.root = root_of(of);
  b.name = name;
  plan_.buffers_.push_back(b);
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

int SymBuilder::new_constant(Tensor t, Layout layout, const std::string& name) {
  SymBuffer b;
  b.dtype = t.dtype();
  b.shape = t.shape();
  b.layout = layout;
  b.storage = Storage::kConstant;
  b.constant = keep(std::move(t)).raw();
  b.name = name;
  plan_.buffers_.push_back(b);
  return static_cast<int>(plan_.buffers_.size()) - 1;
}

void SymBuilder::set_home(const graph::Value* v, int buf) {
  home_[v] = buf;
}

void SymBuilder::add_step(std::unique_ptr<SymStep> step, std::vector<int> reads, std::vector<int> writes,
                          const graph::Node* node) {
  SymbolicPlan::Step s;
  s.step = std::move(step);
  s.reads = std::move(reads);
  s.writes = std::move(writes);
  s.node = node ? node->name : "";
  s.kind = node ? graph::op_name(node->op) : "Layout";
  plan_.steps_.push_back(std::move(s));
}

const Tensor& SymBuilder::keep(Tensor t) {
  plan_.kept_.push_back(std::move(t));
  return plan_.kept_.back();
}

// ---- plan ------------------------------------------------------------------------------------------------------

Result<std::unique_ptr<SymbolicPlan>> SymbolicPlan::build(const graph::Graph& graph, std::shared_ptr<ArenaPool> pool) {
  if (!graph.symbols()) return unsupported("the graph was not specialised symbolically");
  std::unique_ptr<SymbolicPlan> plan(new SymbolicPlan());
  plan->graph_ = graph.clone();
  plan->pool_ = std::move(pool);
  const graph::Graph& g = plan->graph_;
  SymBuilder b(*plan, g);
  ASSIGN_OR_RETURN(std::vector<const graph::Node*> order, common::schedule(g, common::ScheduleOrder::kGraph));
  for (const graph::Node* n : order) {
    if (common::is_folded(*n)) continue;
    SymOpFn fn = find_sym_op(n->op);
    if (!fn) return unsupported(fmt::format("{}: no shape-free cpu kernel for {}", n->describe(), op_name(n->op)));
    for (const graph::Value* o : n->outputs) {
      if (o->dtype != DType::kF32)
        return unsupported(fmt::format("{}: an output of type {}", n->describe(), dtype_name(o->dtype)));
    }
    Status s = fn(b, *n);
    if (!s.is_ok()) return s.with_context(n->describe());
  }
  for (const graph::Value* out : g.outputs()) {
    ASSIGN_OR_RETURN(int ob, b.in_layout(out, Layout::kPlain));
    plan->output_bufs_.push_back(ob);
  }
  // Live ranges (shape-free): what each step touches; outputs live to the end.
  plan->live_.assign(plan->buffers_.size(), {});
  for (size_t i = 0; i < plan->steps_.size(); ++i) {
    for (const auto* list : {&plan->steps_[i].reads, &plan->steps_[i].writes}) {
      for (int buf : *list) plan->live_[static_cast<size_t>(b.root_of(buf))].touch(static_cast<int>(i));
    }
  }
  for (int ob : plan->output_bufs_) plan->live_[static_cast<size_t>(b.root_of(ob))].whole_run();
  for (size_t i = 0; i < plan->buffers_.size(); ++i) {
    if (plan->buffers_[i].storage != Storage::kArena) plan->live_[i] = {};  // not placed in the arena
  }
  // The primitives every shape uses, made now and across the team (~1 ms each, a hundred for the detector and the
  // recogniser together): the first image then makes nothing.
  {
    Stopwatch sw;
    std::vector<Status> made(plan->steps_.size());
    parallel_for_each(static_cast<int64_t>(plan->steps_.size()), [&](int64_t i) {
      made[static_cast<size_t>(i)] = plan->steps_[static_cast<size_t>(i)].step->make_kernels();
    });
    for (size_t i = 0; i < made.size(); ++i) {
      if (!made[i].is_ok()) return made[i].with_context(plan->steps_[i].node);
    }
    log::debug("cpu", "symbolic plan for '{}': kernels made in {:.1f} ms", g.name(), sw.elapsed_ms());
  }
  if (const char* p = std::getenv("STEADYOCR_PROFILE")) plan->profile_ = std::atoi(p);
  log::debug("cpu", "symbolic plan for '{}': {} steps, {} buffers, input {}", g.name(), plan->steps_.size(),
             plan->buffers_.size(), g.symbols()->describe(g.inputs()[0]->shape));
  return plan;
}

SymbolicPlan::~SymbolicPlan() {
  if (profile_ && runs_ > 0) print_profile();
}

Result<const SymbolicPlan::Placement*> SymbolicPlan::placement(const std::vector<Shape>& inputs, const SymRun& r,
                                                               bool* fresh) {
  *fresh = false;
  for (auto it = layouts_.begin(); it != layouts_.end(); ++it) {
    if (it->inputs == inputs) {
      layouts_.splice(layouts_.begin(), layouts_, it);
      return &layouts_.front();
    }
  }
  std::vector<common::ArenaBuffer> sized = live_;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    if (!sized[i].used()) continue;
    const int64_t n = shape_numel(r.shape(static_cast<int>(i)));
    if (n < 0) return internal_error(fmt::format("'{}' has no size for this input", buffers_[i].name));
    sized[i].bytes = static_cast<size_t>(n) * dtype_size(buffers_[i].dtype);
  }
  *fresh = true;
  layouts_.push_front({inputs, common::plan_arena(sized)});
  if (layouts_.size() > kPlacementsKept) layouts_.pop_back();
  return &layouts_.front();
}

Status SymbolicPlan::run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) {
  if (inputs.size() != input_bufs_.size()) {
    return invalid_argument(
        fmt::format("'{}' takes {} inputs, got {}", graph_.name(), input_bufs_.size(), inputs.size()));
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype() != buffers_[static_cast<size_t>(input_bufs_[i])].dtype) {
      return invalid_argument(fmt::format("input {} of '{}' is {}, expected {}", i, graph_.name(), inputs[i].describe(),
                                          dtype_name(buffers_[input_bufs_[i]].dtype)));
    }
    shapes.push_back(inputs[i].shape());
  }
  Stopwatch total;
  graph::SymbolValues dims;
  if (Status s = graph_.symbols()->evaluate(shapes, &dims); !s.is_ok()) {
    return invalid_argument(fmt::format("model '{}': input {} does not fit {}: {}", graph_.name(), shape_str(shapes[0]),
                                        graph_.symbols()->describe(graph_.inputs()[0]->shape), s.message()));
  }
  SymRun r;
  r.dims_ = &dims;
  r.buffers_ = &buffers_;
  r.shapes_.resize(buffers_.size());
  for (size_t i = 0; i < buffers_.size(); ++i) {
    r.shapes_[i] = dims.shape(buffers_[i].shape);
    for (int64_t d : r.shapes_[i]) {
      if (d < 0) {
        return invalid_argument(fmt::format("model '{}': input {} gives '{}' the shape {}", graph_.name(),
                                            shape_str(shapes[0]), buffers_[i].name, shape_str(r.shapes_[i])));
      }
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].shape() != r.shapes_[static_cast<size_t>(input_bufs_[i])]) {
      return invalid_argument(fmt::format("input {} of '{}' is {}; the model takes {}", i, graph_.name(),
                                          inputs[i].describe(),
                                          graph_.symbols()->describe(buffers_[input_bufs_[i]].shape)));
    }
  }
  bool fresh = false;
  ASSIGN_OR_RETURN(const Placement* place, placement(shapes, r, &fresh));
  last_plan_ms_ = total.elapsed_ms();
  if (fresh) {
    log::debug("cpu", "'{}': input {} planned in {:.3f} ms (dims evaluated, {} buffers placed in {:.1f} MiB)",
               graph_.name(), shape_str(shapes[0]), last_plan_ms_, buffers_.size(), place->layout.bytes / 1048576.0);
  }
  ArenaPool::Block block;
  if (place->layout.bytes) {
    block = pool_->acquire(place->layout.bytes);
    if (!block.ptr) {
      return Status(StatusCode::kOutOfMemory,
                    fmt::format("cpu backend: cannot allocate {:.1f} MiB of activations "
                                "for '{}' at {}",
                                place->layout.bytes / 1048576.0, graph_.name(), shape_str(shapes[0])));
    }
  }
  struct Release {
    ArenaPool* pool;
    ArenaPool::Block block;
    ~Release() {
      if (block.ptr) pool->release(block);
    }
  } release{pool_.get(), block};
  last_arena_bytes_ = place->layout.bytes;
  r.ptrs_.assign(buffers_.size(), nullptr);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const SymBuffer& b = buffers_[i];
    const size_t root = b.storage == Storage::kView ? static_cast<size_t>(b.root) : i;
    const SymBuffer& rb = buffers_[root];
    switch (rb.storage) {
      case Storage::kArena:
        r.ptrs_[i] = static_cast<char*>(block.ptr) + place->layout.offsets[root];
        break;
      case Storage::kConstant:
        r.ptrs_[i] = const_cast<void*>(rb.constant);
        break;
      case Storage::kInput:
        r.ptrs_[i] = const_cast<void*>(inputs[static_cast<size_t>(rb.input_index)].raw());
        break;
      case Storage::kView:
        return internal_error("a view of a view");
    }
  }
  // Threads for this run: --threads shared among the runs in progress on this backend (as CpuPlan::run does).
  if (!in_parallel_region()) {
    const int concurrent = std::max(1, place->layout.bytes ? pool_->in_use() : 1);
    const int threads = threads_for_run(concurrent);
    if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  }
  for (Step& s : steps_) {
    Stopwatch sw;
    Status st = s.step->run(r);
    if (profile_) s.ms += sw.elapsed_ms();
    if (!st.is_ok()) return st.with_context("cpu backend, " + (s.node.empty() ? s.step->describe() : s.node));
  }
  outputs->clear();
  for (int ob : output_bufs_) {
    Tensor t = Tensor::empty(buffers_[static_cast<size_t>(ob)].dtype, r.shape(ob));
    std::memcpy(t.raw(), r.ptr(ob), t.nbytes());
    outputs->push_back(std::move(t));
  }
  if (profile_) {
    ++runs_;
    run_ms_ += total.elapsed_ms();
  }
  return Status::ok();
}

std::vector<std::string> SymbolicPlan::step_labels() const {
  std::vector<std::string> out;
  for (const Step& s : steps_) out.push_back(s.step->describe());
  return out;
}

void SymbolicPlan::print_profile() const {
  fmt::print(stderr, "[cpu profile] symbolic '{}': {} runs, {:.2f} ms/run, {} steps, {} input shapes placed\n",
             graph_.name(), runs_, run_ms_ / static_cast<double>(runs_), steps_.size(), layouts_.size());
  std::map<std::string, std::pair<int, double>> by_kind;
  for (const Step& s : steps_) {
    auto& k = by_kind[s.kind];
    ++k.first;
    k.second += s.ms;
  }
  for (const auto& [kind, v] : by_kind) {
    fmt::print(stderr, "[cpu profile]   {:<20} {:3d} steps {:9.3f} ms/run\n", kind, v.first,
               v.second / static_cast<double>(runs_));
  }
  if (profile_ >= 2) {
    for (size_t i = 0; i < steps_.size(); ++i) {
      fmt::print(stderr, "[cpu profile]   #{:<4} {:8.3f} ms  {:<24} {}\n", i, steps_[i].ms / static_cast<double>(runs_),
                 steps_[i].node, steps_[i].step->describe());
    }
  }
}

}  // namespace steadyocr::cpu

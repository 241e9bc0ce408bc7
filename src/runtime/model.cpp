#include "runtime/model.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "backends/reference/reference_backend.h"
#include "core/compare.h"
#include "core/content_hash.h"
#include "core/disk_cache.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "graph/symbolic_shapes.h"
#include "graph/verifier.h"

namespace steadyocr::runtime {
namespace {

// A small input for checking the generic passes: the declared shape with each free axis set to a different size
// (batch 1, then 64, 96, ...), so that a pass confusing two dynamic spatial axes would show.
Shape probe_shape(const Shape& declared) {
  Shape s = declared;
  int64_t next = 64;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] > 0) continue;
    s[i] = i == 0 ? 1 : next;
    if (i != 0) next += 32;
  }
  return s;
}

// The oracle that checks graphs: the reference kernels (no set-up cost, unlike a JIT backend).
Result<Tensor> run_on_reference(const graph::Graph& g, const Tensor& x) {
  static const std::shared_ptr<Backend> ref(make_reference_backend());
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> p, ref->prepare(g));
  std::vector<Tensor> outs;
  RETURN_IF_ERROR(p->run({x}, &outs));
  if (outs.size() != 1) return internal_error("expected one output");
  return std::move(outs[0]);
}

constexpr size_t kKeptMarkers = 64;  // symbolic checks remembered (the least recent go first)

// What the symbolic check's marker holds: the generic graph's ops and their counts (empty for a graph without).
std::string histogram_line(const graph::Graph& g) {
  std::string line = fmt::format("{} nodes:", g.node_count());
  for (const auto& [op, n] : g.op_histogram()) line += fmt::format(" {} {}", op, n);
  return line + "\n";
}

// A small file's contents ("" when it is missing, unreadable or over 64 KiB).
std::string read_small_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::string s(65536, '\0');
  f.read(s.data(), static_cast<std::streamsize>(s.size()));
  if (f.gcount() >= static_cast<std::streamsize>(s.size())) return {};
  s.resize(static_cast<size_t>(f.gcount()));
  return s;
}

}  // namespace

Status append_top1(graph::Graph& g, const Backend& backend) {
  graph::Value* probs = g.outputs().at(0);
  if (probs->dtype != DType::kF32 || probs->shape.empty()) {
    return invalid_argument("the model's output is " + std::string(dtype_name(probs->dtype)) + "[" +
                            shape_str(probs->shape) + "]; a top-1 output needs f32 with a last axis");
  }
  Shape s = probs->shape;
  s.back() = 2;
  graph::Value* top = g.add_value(g.unique_name(probs->name + ".top1"), DType::kF32, s);
  graph::Node* n = g.add_node(graph::OpKind::kTop1, g.unique_name("steadyocr.Top1"), {probs}, {top});
  if (!backend.supports(*n)) {
    g.remove_node(n);
    g.remove_dead();
    return unsupported("backend " + backend.name() + " does not run Top1 (a top-1 output would cross host memory)");
  }
  g.outputs()[0] = top;
  return Status::ok();
}

Status prepend_image_lut(graph::Graph& g, const Tensor& lut, const Backend& backend, bool masked) {
  graph::Value* x = g.inputs().at(0);
  if (lut.dtype() != DType::kF32 || lut.rank() != 2 || lut.dim(1) != 256) {
    return invalid_argument("an image table is f32 [C, 256], got " + lut.describe());
  }
  if (x->dtype != DType::kF32 || x->shape.size() != 4 || (x->shape[1] >= 0 && x->shape[1] != lut.dim(0))) {
    return invalid_argument("the model's input is " + std::string(dtype_name(x->dtype)) + "[" + shape_str(x->shape) +
                            "]; bytes through a table of " + std::to_string(lut.dim(0)) + " channels need f32 [N, " +
                            std::to_string(lut.dim(0)) + ", H, W]");
  }
  const Shape s = x->shape;
  graph::Value* bytes =
      g.add_value(g.unique_name(x->name + ".u8"), DType::kU8, {s[0], s[2], s[3], lut.dim(0) + (masked ? 1 : 0)});
  graph::Value* table = g.add_constant(g.unique_name("steadyocr.image_lut"), lut);
  graph::Node* n = g.add_node(graph::OpKind::kImageLut, g.unique_name("steadyocr.ImageLut"), {bytes, table}, {x});
  if (!backend.supports(*n)) {
    g.remove_node(n);
    g.remove_dead();
    return unsupported("backend " + backend.name() +
                       " does not run ImageLut (the picture would be normalised on "
                       "the host anyway)");
  }
  g.inputs()[0] = bytes;
  return Status::ok();
}

DType model_input_dtype(const graph::Graph& g) {
  return g.inputs().at(0)->dtype;
}

graph::PassOptions reference_pass_options(graph::PassOptions options) {
  options.evaluate = run_node_reference;
  return options;
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, std::shared_ptr<Backend> backend,
                                           ModelOptions options) {
  if (!backend) return invalid_argument("Model::load: no backend given");
  ASSIGN_OR_RETURN(graph::Graph g, graph::import_onnx(path));
  if (g.inputs().size() != 1 || g.outputs().size() != 1) {
    return unsupported("model " + path + " has " + std::to_string(g.inputs().size()) + " inputs and " +
                       std::to_string(g.outputs().size()) +
                       " outputs; PP-OCR det/rec/cls models have exactly one of each");
  }
  if (options.top1_output) {
    Status top = append_top1(g, *backend);
    if (!top.is_ok()) {
      if (top.code() != StatusCode::kUnsupported) return top.with_context("loading " + path);
      log::info("runtime", "{}: {}; the full output comes back to the host", path, top.message());
      options.top1_output = false;
    }
  }
  if (options.image_lut.defined()) {
    Status lut = prepend_image_lut(g, options.image_lut, *backend, options.image_lut_masked);
    if (!lut.is_ok()) {
      if (lut.code() != StatusCode::kUnsupported) return lut.with_context("loading " + path);
      log::info("runtime", "{}: {}; pictures are normalised on the host", path, lut.message());
      options.image_lut = Tensor();
      options.image_lut_masked = false;
    }
  }
  std::unique_ptr<Model> m(new Model());
  m->path_ = path;
  m->graph_ = std::move(g);
  m->backend_ = std::move(backend);
  m->options_ = options;
  if (!m->options_.passes.evaluate) m->options_.passes = reference_pass_options(m->options_.passes);
  if (options.optimize && options.reuse_generic_passes) m->prepare_generic_graph();
  if (m->has_generic_ && options.symbolic_plans) m->prepare_symbolic_plan();
  return m;
}

void Model::prepare_symbolic_plan() {
  Stopwatch sw;
  auto prepared = backend_->prepare_symbolic(generic_);
  if (!prepared.is_ok()) {
    // The backend plans per shape, or cannot run a node without: each new shape is instantiated and prepared.
    if (prepared.status().code() == StatusCode::kUnsupported) {
      log::debug("runtime", "{}: one plan per input shape on {} ({})", graph_.name(), backend_->name(),
                 prepared.status().to_string());
    } else {
      log::info("runtime", "{}: one plan per input shape on {}: the plan for every shape failed ({})", graph_.name(),
                backend_->name(), prepared.status().to_string());
    }
    return;
  }
  auto plan = std::make_shared<Plan>();
  plan->graph = generic_.clone();
  plan->symbolic = true;
  plan->concurrent = (*prepared)->concurrent();
  plan->replicas.push_back(std::move(prepared).value());
  plan->busy.push_back(false);
  plan->limit = plan->concurrent ? 1 : std::max(1, options_.max_replicas);
  symbolic_plan_ = std::move(plan);
  const double ms = sw.elapsed_ms();
  stats_.symbolic_plan = true;
  ++stats_.plans_built;
  stats_.plan_ms_total += ms;
  metrics::inc("steadyocr_model_plans_total", {{"model", graph_.name()}});
  metrics::inc("steadyocr_model_plan_ms_total", {{"phase", "prepare"}}, ms);
  log::debug("runtime", "planned {} once for every input shape {} on {} in {:.1f} ms", graph_.name(),
             generic_.symbols()->describe(generic_.inputs()[0]->shape), backend_->name(), ms);
}

void Model::prepare_generic_graph() {
  Stopwatch sw;
  graph::Graph generic = graph_.clone();
  Status s = graph::specialize_symbolic(generic, options_.passes);
  if (s.is_ok()) s = graph::optimize(generic, options_.passes);
  if (!s.is_ok()) {
    log::info("runtime", "{}: the passes cannot run on symbolic shapes ({}); every new input shape runs them",
              graph_.name(), s.to_string());
    return;
  }
  // The same computation as the plain path (specialise, then optimise) on a probe shape, or not used at all.
  const Shape probe = probe_shape(graph_.inputs()[0]->shape);
  auto check = [&]() -> Result<bool> {
    graph::Graph plain = graph_.clone();
    RETURN_IF_ERROR(graph::specialize(plain, {probe}, options_.passes));
    RETURN_IF_ERROR(graph::optimize(plain, options_.passes));
    ASSIGN_OR_RETURN(graph::Graph fast, graph::instantiate(generic, {probe}));
    RETURN_IF_ERROR(graph::verify(fast, {.require_static_shapes = true}));
    if (fast.node_count() != plain.node_count() || fast.op_histogram() != plain.op_histogram()) return false;
    Tensor x = Tensor::empty(model_input_dtype(graph_), probe);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    for (int64_t i = 0; i < x.numel(); ++i) {
      if (x.dtype() == DType::kU8) {
        x.data<uint8_t>()[i] = static_cast<uint8_t>(rng() & 0xff);
      } else {
        x.data<float>()[i] = u(rng);
      }
    }
    ASSIGN_OR_RETURN(Tensor a, run_on_reference(plain, x));
    ASSIGN_OR_RETURN(Tensor b, run_on_reference(fast, x));
    if (a.dtype() != DType::kF32 || b.dtype() != DType::kF32) return false;
    const Comparison c = compare_tensors(b, a);
    return c.within(1e-12);
  };
  const std::string marker = symbolic_check_marker(), ops = histogram_line(generic);
  if (!marker.empty() && read_small_file(marker) == ops) {
    metrics::inc("steadyocr_model_symbolic_checks_total", {{"result", "remembered"}});
    log::debug("runtime", "{}: symbolic graph checked by an earlier process ({})", graph_.name(), marker);
    generic_ = std::move(generic);
    has_generic_ = true;
    stats_.generic_passes = true;
    return;
  }
  auto same = check();
  metrics::inc("steadyocr_model_symbolic_checks_total", {{"result", same.is_ok() && *same ? "passed" : "failed"}});
  if (same.is_ok() && *same && !marker.empty()) {
    if (write_file_atomically(marker, ops)) {
      prune_directory(options_.cache_dir + "/symbolic", kKeptMarkers);
    } else {
      log::debug("runtime", "{}: could not remember the symbolic graph's check in {}", graph_.name(), marker);
    }
  }
  if (!same.is_ok() || !*same) {
    log::info("runtime",
              "{}: the symbolically specialised graph does not reproduce the plain passes on {} ({}); every new "
              "shape runs the whole pass pipeline",
              graph_.name(), shape_str(probe), same.is_ok() ? "outputs differ" : same.status().to_string());
    return;
  }
  generic_ = std::move(generic);
  has_generic_ = true;
  stats_.generic_passes = true;
  log::debug("runtime", "{}: symbolic graph ready in {:.1f} ms: {} nodes, {} symbols, input {}", graph_.name(),
             sw.elapsed_ms(), generic_.node_count(), generic_.symbols()->size(),
             generic_.symbols()->describe(generic_.inputs()[0]->shape));
}

std::string Model::symbolic_check_marker() const {
  if (options_.cache_dir.empty() || graph_.source_digest() == 0) return {};
  const graph::PassOptions& p = options_.passes;
  uint64_t h = hash_bytes(
      fmt::format("{} top1 {} lut {} {} passes {}{}{}{}{} {} symcheck1", build_identity(), options_.top1_output,
                  options_.image_lut.defined(), options_.image_lut_masked, p.fold_batchnorm, p.fuse_activations,
                  p.fuse_layernorm, p.fuse_residual, p.fuse_epilogues, p.max_fold_bytes),
      graph_.source_digest());
  const Tensor& lut = options_.image_lut;
  if (lut.defined()) h = hash_bytes(lut.raw(), lut.nbytes(), h);
  return fmt::format("{}/symbolic/{}-{:016x}.ok", options_.cache_dir, graph_.name(), h);
}

Result<graph::Graph> Model::specialized_graph(const Shape& shape) const {
  if (has_generic_) {
    // The passes ran once, on symbols: a new shape evaluates them. The verifier checks the result's every shape
    // against static inference; a shape that breaks an assumption made on the symbols takes the plain path below,
    // which gives the error its usual wording (or succeeds where this did not).
    auto g = graph::instantiate(generic_, {shape});
    Status s = g.status();
    if (s.is_ok()) s = graph::verify(*g, {.require_static_shapes = true});
    if (s.is_ok()) return std::move(g).value();
    log::debug("runtime", "{}: the symbolic graph does not instantiate for {} ({}); running every pass", graph_.name(),
               shape_str(shape), s.to_string());
  }
  graph::Graph g = graph_.clone();
  RETURN_IF_ERROR(graph::specialize(g, {shape}, options_.passes));
  if (options_.optimize) RETURN_IF_ERROR(graph::optimize(g, options_.passes));
  return g;
}

bool Model::fits_symbolic_plan(const Shape& shape) const {
  if (!graph::fits_declared(generic_.inputs()[0]->shape, shape)) return false;
  graph::SymbolValues values;
  return generic_.symbols()->evaluate({shape}, &values).is_ok();
}

Result<std::shared_ptr<Model::Plan>> Model::plan_for(const Shape& shape) {
  // Every shape the symbols fit: nothing to plan. Another (a wrong channel count, a broadcast the symbols assumed
  // away), or one the symbolic plan declined, takes the per-shape path, which plans it or names what is wrong.
  // The symbols are evaluated outside the lock: it guards only the declined set and the per-shape plans.
  std::shared_ptr<Plan> symbolic;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (symbolic_plan_ && !symbolic_declined_.count(shape)) symbolic = symbolic_plan_;
  }
  if (symbolic && fits_symbolic_plan(shape)) return symbolic;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = plans_.begin(); it != plans_.end(); ++it) {
      if ((*it)->shape == shape) {
        auto p = *it;
        plans_.erase(it);
        plans_.push_front(p);
        return p;
      }
    }
  }
  // Plan outside the lock: other shapes keep running meanwhile. Two threads may race to build the same
  // shape; the loser's instance becomes a replica when allowed, else it is dropped.
  Stopwatch sw;
  ASSIGN_OR_RETURN(graph::Graph g, specialized_graph(shape));
  const double passes_ms = sw.elapsed_ms();
  std::vector<NodePlacement> placements;
  auto prepared = prepare(g, &placements);
  metrics::inc("steadyocr_model_plan_ms_total", {{"phase", "passes"}}, passes_ms);
  metrics::inc("steadyocr_model_plan_ms_total", {{"phase", "prepare"}}, sw.elapsed_ms() - passes_ms);
  metrics::inc("steadyocr_model_plans_total", {{"model", graph_.name()}});
  if (!prepared.is_ok()) {
    return prepared.status().with_context("preparing " + path_ + " for input " + shape_str(shape) + " on backend " +
                                          backend_->name());
  }
  auto plan = std::make_shared<Plan>();
  plan->shape = shape;
  plan->graph = std::move(g);
  plan->replicas.push_back(std::move(prepared).value());
  plan->busy.push_back(false);
  plan->limit = std::max(1, options_.max_replicas);
  double ms = sw.elapsed_ms();
  log::debug("runtime", "planned {} for {} on {} in {:.1f} ms (passes {:.2f}, prepare {:.2f})", graph_.name(),
             shape_str(shape), backend_->name(), ms, passes_ms, ms - passes_ms);

  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : plans_) {
    if (p->shape != shape) continue;
    if (static_cast<int>(p->replicas.size()) + p->building < p->limit) {
      p->replicas.push_back(std::move(plan->replicas.front()));
      p->busy.push_back(false);
      ++stats_.replicas_built;
      freed_.notify_all();
    }
    return p;
  }
  plans_.push_front(plan);
  ++stats_.plans_built;
  record_placements_locked(placements);
  stats_.plan_ms_total += ms;
  while (plans_.size() > options_.max_cached_shapes) {
    plans_.pop_back();
    ++stats_.plans_evicted;
  }
  return plan;
}

Result<std::unique_ptr<PreparedGraph>> Model::prepare_instance(const Plan& plan) {
  if (plan.symbolic) return backend_->prepare_symbolic(plan.graph);
  return prepare(plan.graph, nullptr);
}

Result<std::unique_ptr<PreparedGraph>> Model::prepare(const graph::Graph& g, std::vector<NodePlacement>* placements) {
  std::vector<std::shared_ptr<Backend>> chain{backend_};
  chain.insert(chain.end(), options_.fallbacks.begin(), options_.fallbacks.end());
  ASSIGN_OR_RETURN(PlacedGraph placed, prepare_placed(g, chain));
  if (placements) *placements = std::move(placed.placements);
  return std::move(placed.prepared);
}

void Model::record_placements_locked(const std::vector<NodePlacement>& placements) {
  std::map<std::string, std::vector<std::string>> nodes_of;  // op -> nodes placed in this plan
  for (const NodePlacement& p : placements) {
    metrics::inc("steadyocr_op_placements_total",
                 {{"model", graph_.name()}, {"op", p.op}, {"from", p.from}, {"to", p.to}});
    auto it = std::find_if(stats_.placements.begin(), stats_.placements.end(),
                           [&](const OpPlacement& o) { return o.op == p.op && o.from == p.from && o.to == p.to; });
    if (it == stats_.placements.end()) it = stats_.placements.insert(stats_.placements.end(), {p.op, p.from, p.to, 0});
    ++it->nodes;
    nodes_of[p.op].push_back(p.node);
  }
  for (const auto& [op, nodes] : nodes_of) {
    if (!placement_logged_.insert(op).second) continue;
    const NodePlacement& first =
        *std::find_if(placements.begin(), placements.end(), [&op = op](const NodePlacement& p) { return p.op == op; });
    std::string names;
    for (size_t i = 0; i < nodes.size() && i < 3; ++i) names += (i ? ", " : "") + nodes[i];
    if (nodes.size() > 3) names += fmt::format(" and {} more", nodes.size() - 3);
    log::warn("runtime",
              "{}: backend {} declines {} ({}); placed on {}, its tensors cross through host memory "
              "(steadyocr_op_placements_total)",
              graph_.name(), first.from, op, names, first.to);
  }
}

Result<std::pair<size_t, PreparedGraph*>> Model::acquire(Plan& plan) {
  // Waiting for a busy instance (one run, milliseconds) beats preparing another one on the request's time; extra
  // instances come from warm_up() or from two callers planning the same new shape at once.
  std::unique_lock<std::mutex> lock(mu_);
  if (plan.concurrent) return std::make_pair(size_t{0}, plan.replicas.front().get());
  for (;;) {
    for (size_t i = 0; i < plan.busy.size(); ++i) {
      if (!plan.busy[i]) {
        plan.busy[i] = true;
        return std::make_pair(i, plan.replicas[i].get());
      }
    }
    if (plan.replicas.empty()) return internal_error("plan for " + shape_str(plan.shape) + " has no instance");
    // A plan for every shape that takes one run at a time (the cpu's) gets another instance, up to max_replicas, when
    // its runs overlap (the cpu pipeline's image groups): once per process, where a per-shape plan's would be
    // planned again for every shape.
    if (plan.symbolic && static_cast<int>(plan.replicas.size()) + plan.building < plan.limit) {
      ++plan.building;
      lock.unlock();
      Stopwatch sw;
      auto prepared = prepare_instance(plan);
      const double ms = sw.elapsed_ms();
      lock.lock();
      --plan.building;
      if (prepared.is_ok()) {
        plan.replicas.push_back(std::move(prepared).value());
        plan.busy.push_back(true);
        ++stats_.replicas_built;
        stats_.plan_ms_total += ms;
        log::debug("runtime", "{}: instance {} of the plan for every input shape on {} in {:.1f} ms", graph_.name(),
                   plan.replicas.size(), backend_->name(), ms);
        return std::make_pair(plan.replicas.size() - 1, plan.replicas.back().get());
      }
      plan.limit = std::max<int>(1, static_cast<int>(plan.replicas.size()) + plan.building);
      log::warn("runtime", "{}: another instance of the plan for every input shape failed ({}); runs share {}",
                graph_.name(), prepared.status().to_string(), plan.replicas.size());
      continue;
    }
    freed_.wait(lock);
  }
}

CallProfile& CallProfile::operator+=(const CallProfile& o) {
  wait_ms += o.wait_ms;
  plan_ms += o.plan_ms;
  run_ms += o.run_ms;
  backend.measured = backend.measured || o.backend.measured;
  backend.acquire_ms += o.backend.acquire_ms;
  backend.staging_ms += o.backend.staging_ms;
  backend.upload_ms += o.backend.upload_ms;
  backend.compute_ms += o.backend.compute_ms;
  backend.download_ms += o.backend.download_ms;
  backend.sync_ms += o.backend.sync_ms;
  return *this;
}

Result<Tensor> Model::run_call(const Tensor& input, CallInfo* info) {
  if (input.dtype() != model_input_dtype(graph_)) {
    return invalid_argument(std::string("model input must be ") + dtype_name(model_input_dtype(graph_)) + ", got " +
                            dtype_name(input.dtype()));
  }
  CallProfile profile;
  Stopwatch sw;
  ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, plan_for(input.shape()));
  profile.plan_ms = sw.elapsed_ms();
  sw.reset();
  ASSIGN_OR_RETURN(auto taken, acquire(*plan));
  const auto [slot, prepared] = taken;
  profile.wait_ms = sw.elapsed_ms();
  sw.reset();
  std::vector<Tensor> outs;
  Status s = prepared->run({input}, &outs);
  if (plan->symbolic && s.code() == StatusCode::kUnsupported) {
    // The plan for every shape declines this one (a size past a device limit): it is planned on its own, the way
    // every shape is without that plan, where the backend's fallbacks take what it cannot run.
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!plan->concurrent) plan->busy[slot] = false;
      if (symbolic_declined_.size() >= kDeclinedKept) symbolic_declined_.clear();
      symbolic_declined_.insert(input.shape());
    }
    freed_.notify_all();
    metrics::inc("steadyocr_model_symbolic_declined_total", {{"model", graph_.name()}});
    log::info("runtime", "{}: the plan for every input shape declines {} on {} ({}); that shape is planned on its own",
              graph_.name(), shape_str(input.shape()), backend_->name(), s.message());
    const double declined_ms = sw.elapsed_ms();  // the declined attempt: planning, as the rest of this call's is
    CallInfo own;
    auto out = run_call(input, &own);
    own.profile.plan_ms += profile.plan_ms + declined_ms;
    if (info) *info = own;
    return out;
  }
  profile.run_ms = sw.elapsed_ms();
  profile.backend = prepared->last_profile();
  // A plan for every shape plans inside its run (dims, buffer placement): that part of the run is this call's
  // planning, moved from run to plan so that the parts still add up to the call.
  const double planned_inside = std::min(prepared->last_plan_ms(), profile.run_ms);
  profile.plan_ms += planned_inside;
  profile.run_ms -= planned_inside;
  if (info) *info = {input.rank() > 0 ? input.dim(0) : 1, 1, profile};
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!plan->concurrent) plan->busy[slot] = false;
    if (s.is_ok()) ++stats_.runs;
  }
  freed_.notify_all();
  RETURN_IF_ERROR(s);
  if (outs.size() != 1) return internal_error("backend returned " + std::to_string(outs.size()) + " outputs");
  return std::move(outs[0]);
}

Status Model::warm_up(const Tensor& input, int instances, int runs) {
  ASSIGN_OR_RETURN(std::shared_ptr<Plan> plan, plan_for(input.shape()));
  if (plan->concurrent) return warm_up_concurrent(*plan, input, instances, runs);
  std::unique_lock<std::mutex> lock(mu_);
  while (static_cast<int>(plan->replicas.size()) + plan->building < std::min(instances, plan->limit)) {
    ++plan->building;
    lock.unlock();
    auto prepared = prepare_instance(*plan);
    lock.lock();
    --plan->building;
    if (!prepared.is_ok()) {
      plan->limit = std::max<int>(1, static_cast<int>(plan->replicas.size()));
      log::info("runtime", "{}: warm-up prepared {} instances for {} ({})", graph_.name(), plan->replicas.size(),
                shape_str(plan->shape), prepared.status().to_string());
      break;
    }
    plan->replicas.push_back(std::move(prepared).value());
    plan->busy.push_back(false);
    ++stats_.replicas_built;
  }
  // Each instance in turn (waiting while a request uses it).
  for (size_t i = 0; i < plan->replicas.size(); ++i) {
    freed_.wait(lock, [&] { return !plan->busy[i]; });
    plan->busy[i] = true;
    PreparedGraph* prepared = plan->replicas[i].get();
    lock.unlock();
    Status s;
    for (int r = 0; r < runs && s.is_ok(); ++r) {
      std::vector<Tensor> outs;
      s = prepared->run({input}, &outs);
    }
    lock.lock();
    plan->busy[i] = false;
    freed_.notify_all();
    RETURN_IF_ERROR(s.with_context("warming up " + path_ + " for " + shape_str(input.shape())));
  }
  return Status::ok();
}

Status Model::warm_up_concurrent(Plan& plan, const Tensor& input, int instances, int runs) {
  // `instances` callers at once, as that many requests of this shape would come, each running `runs` times: the plan
  // makes the instances it would make for them (the CUDA plan: one, and another for a caller that waited long for a
  // busy one), and captures their graphs on the second run.
  PreparedGraph* prepared = plan.replicas.front().get();
  const int n = std::max(1, std::min(instances, std::max(1, options_.max_replicas)));
  std::vector<Status> results(static_cast<size_t>(n));
  std::mutex start_mu;
  std::condition_variable start_cv;
  int waiting = 0;
  auto caller = [&](size_t i) {
    {
      std::unique_lock<std::mutex> lock(start_mu);  // all start together, so that none finds another's idle instance
      if (++waiting == n) start_cv.notify_all();
      start_cv.wait(lock, [&] { return waiting == n; });
    }
    for (int r = 0; r < runs && results[i].is_ok(); ++r) {
      std::vector<Tensor> outs;
      results[i] = prepared->run({input}, &outs);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(caller, static_cast<size_t>(i));
  caller(0);
  for (auto& t : threads) t.join();
  for (const Status& s : results) {
    RETURN_IF_ERROR(s.with_context("warming up " + path_ + " for " + shape_str(input.shape())));
  }
  return Status::ok();
}

void Model::clear_plans() {
  // The symbolic plan holds no per-shape state worth dropping (its activation memory comes per run).
  std::lock_guard<std::mutex> lock(mu_);
  stats_.plans_evicted += plans_.size();
  plans_.clear();
}

ModelStats Model::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace steadyocr::runtime

// Host-side layer 3-4 checks: the CUDA backend (through the Backend interface, as the engine uses it)
// against the CPU oracle, on kernel test graphs, on every conv shape of the models, and under concurrency.
#include <dirent.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "backends/reference/reference_backend.h"
#include "core/compare.h"
#include "doctor/device_checks.h"
#include "doctor/test_graphs.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"

namespace steadyocr::doctor {

namespace {
using Clock = std::chrono::steady_clock;
constexpr double kNmseFp32 = 1e-5;  // fp32 kernels (TF32 tensor-core convs included) vs the fp32 oracle
constexpr double kNmseFp16 = 1e-3;  // fp16 storage/compute vs the fp32 oracle

nlohmann::json to_json(const Comparison& c) {
  return {
      {"nmse", c.nmse}, {"max_abs_diff", c.max_abs_diff}, {"non_finite", c.non_finite}, {"shape_match", c.shape_match}};
}

Result<std::vector<Tensor>> run_graph(Backend& backend, const TestGraph& tg) {
  ASSIGN_OR_RETURN(auto prepared, backend.prepare(tg.graph));
  std::vector<Tensor> outputs;
  RETURN_IF_ERROR(prepared->run(tg.inputs, &outputs));
  return outputs;
}

std::vector<std::string> declined_ops(const Backend& backend, const graph::Graph& g) {
  std::vector<std::string> out;
  for (const auto& n : g.nodes())
    if (!backend.supports(*n)) out.push_back(graph::op_name(n->op));
  return out;
}

ChildCheckResult result(std::string status, std::string code, std::string summary, nlohmann::json evidence) {
  return make_child_result(std::move(status), std::move(code), std::move(summary), std::move(evidence));
}

std::vector<std::string> onnx_files(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (struct dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".onnx") out.push_back(dir + "/" + n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The shape a PP-OCR model is typically run at, told apart by its output rank: det (a [N,1,H,W] map) at
// det_size², rec ([N,T,C] logits) at 48x320, cls ([N,2]) at 48x192. Fixed dimensions the model declares win.
}  // namespace

Shape typical_input_shape(const graph::Graph& g, int det_size) {
  Shape s = g.inputs().empty() ? Shape{} : g.inputs()[0]->shape;
  if (s.size() != 4) return s;
  size_t out_rank = g.outputs().empty() ? 0 : g.outputs()[0]->shape.size();
  bool text_line = out_rank == 2 || out_rank == 3;  // cls or rec; anything else is treated as det
  int64_t h = text_line ? 48 : det_size;
  int64_t w = out_rank == 2 ? 192 : out_rank == 3 ? 320 : det_size;
  if (s[0] <= 0) s[0] = 1;
  if (s[1] <= 0) s[1] = 3;
  if (s[2] <= 0) s[2] = h;
  if (s[3] <= 0) s[3] = w;
  return s;
}

namespace {

Result<graph::Graph> load_specialised(const std::string& path, int det_size, Shape* shape) {
  ASSIGN_OR_RETURN(graph::Graph g, graph::import_onnx(path));
  if (g.inputs().size() != 1) return invalid_argument("expected one input, found " + std::to_string(g.inputs().size()));
  *shape = typical_input_shape(g, det_size);
  const graph::PassOptions passes = runtime::reference_pass_options();
  RETURN_IF_ERROR(graph::specialize(g, {*shape}, passes));
  RETURN_IF_ERROR(graph::optimize(g, passes));
  return g;
}

std::string basename(const std::string& p) {
  return p.substr(p.rfind('/') + 1);
}
}  // namespace

ChildCheckResult check_backend_ops(const PluginFacts& plugin, const nlohmann::json& args, bool fp16) {
  int device = args.value("device", 0);
  const char* precision = fp16 ? "fp16" : "fp32";
  double limit = fp16 ? kNmseFp16 : kNmseFp32;
  auto backend = create_plugin_backend(plugin, device, precision, 0);
  if (!backend.is_ok()) {
    nlohmann::json ev = {{"error", backend.status().message()}, {"precision", precision}};
    if (fp16) return result("warn", "L3_FP16_UNAVAILABLE", backend.status().message(), ev);
    return result("fail", "L3_BACKEND_UNAVAILABLE", backend.status().message(), ev);
  }
  auto reference = make_reference_backend();
  nlohmann::json per_graph = nlohmann::json::object();
  std::string error_code, error_text, mismatch_text, worst_what;
  Comparison worst;
  std::set<std::string> declined;
  bool inject = !fp16 && fault_injected("numeric_mismatch");
  int ran = 0;
  for (auto& made : make_kernel_test_graphs()) {
    if (!made.is_ok()) {
      per_graph[fmt::format("build_error_{}", per_graph.size())] = made.status().message();
      continue;
    }
    TestGraph& tg = made.value();
    auto off = declined_ops(**backend, tg.graph);
    if (!off.empty()) {
      for (auto& o : off) declined.insert(o);
      per_graph[tg.name] = {{"declined_ops", off}};
      continue;
    }
    auto expected = run_graph(*reference, tg);
    if (!expected.is_ok()) {
      per_graph[tg.name] = {{"oracle_error", expected.status().message()}};
      continue;
    }
    auto got = run_graph(**backend, tg);
    if (!got.is_ok()) {
      per_graph[tg.name] = {{"error", got.status().to_string()}};
      if (error_code.empty()) {
        error_code = code_for_backend_error(got.status());
        error_text = tg.name + ": " + got.status().to_string();
      }
      if (error_code == "L3_STICKY_FAULT") break;  // the context is gone; later graphs would only repeat it
      continue;
    }
    ++ran;
    if (inject && ran == 1 && !got->empty() && got->front().numel() > 0) got->front().data<float>()[0] += 100.f;
    Comparison c = compare_tensors(got->front(), expected->front());
    per_graph[tg.name] = to_json(c);
    if (!c.within(limit) && (mismatch_text.empty() || c.nmse > worst.nmse)) {
      worst = c;
      worst_what = tg.name;
      mismatch_text = fmt::format("{}: nmse {:.3g} > {:.0e}", tg.name, c.nmse, limit);
    }
  }
  nlohmann::json ev = {{"precision", precision}, {"backend", (*backend)->name()}, {"nmse_limit", limit},
                       {"oracle", "reference"},  {"graphs", per_graph},           {"graphs_compared", ran},
                       {"injected", inject}};
  if (!error_code.empty()) {
    ev["error"] = error_text;
    if (fp16 && error_code != "L3_STICKY_FAULT") return result("warn", "L3_FP16_UNAVAILABLE", error_text, ev);
    return result("fail", error_code, error_text, ev);
  }
  if (!mismatch_text.empty()) {
    ev["what"] = worst_what;
    ev["nmse"] = worst.nmse;
    ev["max_abs_diff"] = worst.max_abs_diff;
    ev["non_finite"] = worst.non_finite;
    return result(fp16 ? "warn" : "fail", fp16 ? "L3_FP16_MISMATCH" : "L3_NUMERIC_MISMATCH", mismatch_text, ev);
  }
  if (!declined.empty()) {
    std::string ops;
    for (const auto& o : declined) ops += (ops.empty() ? "" : ", ") + o;
    ev["model"] = "doctor kernel test graphs";
    ev["count"] = declined.size();
    ev["ops"] = ops;
    return result("warn", "L3_OPS_NOT_ON_GPU",
                  fmt::format("{} graphs match the reference; {} declines: {}", ran, (*backend)->name(), ops), ev);
  }
  return result(
      "pass", "",
      fmt::format("{} kernel graphs on {} match the reference (nmse <= {:.0e})", ran, (*backend)->name(), limit), ev);
}

ChildCheckResult check_model_convs(const PluginFacts& plugin, const nlohmann::json& args) {
  ChildCheckResult r;
  std::string dir = args.value("models_dir", "");
  int device = args.value("device", 0), det_size = args.value("det_size", 640);
  auto budget = std::chrono::milliseconds(args.value("time_budget_ms", 90000));
  auto t0 = Clock::now();
  nlohmann::json results = nlohmann::json::array();
  auto files = onnx_files(dir);
  if (files.empty()) {
    r = result("fail", "L3_MODEL_LOAD_FAILED", "no .onnx files in " + dir,
               {{"model", dir}, {"error", "no .onnx files in the folder"}});
    r.evidence["check"] = "model_convs";
    return r;
  }
  auto backend = create_plugin_backend(plugin, device, "fp32", 0);
  if (!backend.is_ok())
    return result("fail", "L3_BACKEND_UNAVAILABLE", backend.status().message(),
                  {{"error", backend.status().message()}});
  std::shared_ptr<Backend> oracle;
  std::string oracle_name = "cpu";
  if (auto cpu = runtime::create_backend("cpu"); cpu.is_ok()) oracle = *cpu;
  auto reference = std::shared_ptr<Backend>(make_reference_backend());
  if (!oracle) {
    oracle = reference;
    oracle_name = "reference";
  }

  nlohmann::json per_model = nlohmann::json::object();
  std::string load_error_model, load_error, error_code, error_text, mismatch_text;
  Comparison worst;
  std::map<std::string, std::map<std::string, int>> declined;  // model -> op -> count
  int shapes = 0, compared = 0, skipped_for_time = 0;
  std::set<std::string> seen;
  for (const auto& file : files) {
    Shape shape;
    auto g = load_specialised(file, det_size, &shape);
    if (!g.is_ok()) {
      if (load_error.empty()) {
        load_error_model = basename(file);
        load_error = g.status().message();
      }
      per_model[basename(file)] = {{"load_error", g.status().message()}};
      continue;
    }
    int model_convs = 0, model_compared = 0;
    for (const auto& n : g->nodes())
      if (!(*backend)->supports(*n)) ++declined[basename(file)][graph::op_name(n->op)];
    for (const auto& n : g->nodes()) {
      if (n->op != graph::OpKind::kConv && n->op != graph::OpKind::kConvTranspose) continue;
      ++model_convs;
      std::string sig = conv_signature(*n);
      if (!seen.insert(sig).second) continue;
      ++shapes;
      if (!(*backend)->supports(*n)) continue;
      if (Clock::now() - t0 > budget) {
        ++skipped_for_time;
        continue;
      }
      auto tg = make_single_node_graph(*n, 77);
      if (!tg.is_ok()) continue;
      auto expected = run_graph(*oracle, *tg);
      if (!expected.is_ok()) expected = run_graph(*reference, *tg);
      if (!expected.is_ok()) continue;
      auto got = run_graph(**backend, *tg);
      if (!got.is_ok()) {
        if (error_code.empty()) {
          error_code = code_for_backend_error(got.status());
          error_text = fmt::format("{} ({}): {}", sig, basename(file), got.status().to_string());
        }
        if (error_code == "L3_STICKY_FAULT") break;
        continue;
      }
      ++compared;
      ++model_compared;
      Comparison c = compare_tensors(got->front(), expected->front());
      if (!c.within(kNmseFp32) && (mismatch_text.empty() || c.nmse > worst.nmse)) {
        worst = c;
        mismatch_text = fmt::format("{} ({})", sig, basename(file));
      }
    }
    per_model[basename(file)] = {
        {"input_shape", shape_str(shape)}, {"convs", model_convs}, {"compared", model_compared}};
    if (error_code == "L3_STICKY_FAULT") break;
  }
  nlohmann::json ev = {
      {"models", per_model},     {"unique_conv_shapes", shapes},
      {"compared", compared},    {"oracle", oracle_name},
      {"nmse_limit", kNmseFp32}, {"skipped_for_time", skipped_for_time},
      {"det_size", det_size},    {"elapsed_ms", std::chrono::duration<double, std::milli>(Clock::now() - t0).count()}};
  ChildCheckResult convs;
  if (!error_code.empty()) {
    ev["error"] = error_text;
    ev["shape"] = error_text;
    convs = result("fail", error_code, error_text, ev);
  } else if (!mismatch_text.empty()) {
    ev["what"] = mismatch_text;
    ev["nmse"] = worst.nmse;
    ev["max_abs_diff"] = worst.max_abs_diff;
    ev["non_finite"] = worst.non_finite;
    convs = result("fail", "L3_NUMERIC_MISMATCH",
                   fmt::format("{}: nmse {:.3g} > {:.0e}", mismatch_text, worst.nmse, kNmseFp32), ev);
  } else if (!load_error.empty()) {
    ev["model"] = load_error_model;
    ev["error"] = load_error;
    convs = result("fail", "L3_MODEL_LOAD_FAILED", load_error_model + ": " + load_error, ev);
  } else {
    convs = result("pass", "",
                   fmt::format("{} unique conv shapes of {} model(s): {} compared with {} (nmse <= {:.0e}){}", shapes,
                               files.size(), compared, oracle_name, kNmseFp32,
                               skipped_for_time ? fmt::format(", {} left for lack of time", skipped_for_time) : ""),
                   ev);
  }
  ChildCheckResult placement;
  nlohmann::json pev = nlohmann::json::object();
  std::string worst_model, ops;
  int worst_count = 0;
  for (const auto& [model, by_op] : declined) {
    int count = 0;
    std::string list;
    for (const auto& [op, k] : by_op) {
      count += k;
      list += fmt::format("{}{}x{}", list.empty() ? "" : ", ", k, op);
    }
    pev[model] = list;
    if (count > worst_count) worst_count = count, worst_model = model, ops = list;
  }
  if (worst_count > 0) {
    pev["model"] = worst_model;
    pev["count"] = worst_count;
    pev["ops"] = ops;
    placement = result("warn", "L3_OPS_NOT_ON_GPU",
                       fmt::format("{}: {} node(s) would run off the GPU ({})", worst_model, worst_count, ops), pev);
  } else {
    placement = result(
        "pass", "", fmt::format("every node of {} model(s) is supported by {}", files.size(), (*backend)->name()), pev);
  }
  convs.check = "model_convs";
  placement.check = "model_placement";
  ChildCheckResult both;
  both.parts = {convs, placement};
  return both;
}

}  // namespace steadyocr::doctor

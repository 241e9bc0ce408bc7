// Constant folding: a node whose inputs are all constant is evaluated once with the evaluator the caller handed
// in (PassOptions::evaluate) and its output becomes a constant Value. Shape of a statically shaped value folds too,
// which is what removes the exported Shape->Slice->Cast->Concat->Reshape chains once the input shape is known.
#include <fmt/format.h>

#include <algorithm>

#include "core/log.h"
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"
#include "graph/shape_data.h"
#include "graph/shape_inference.h"

namespace steadyocr::graph {
namespace {

// The output becomes a constant; the node goes.
void make_constant(Graph& g, pass_util::Sweep& sweep, Node* n, Tensor t) {
  Value* out = n->output();
  out->constant = std::move(t);
  out->shape = out->constant.shape();
  out->dtype = out->constant.dtype();
  out->producer = nullptr;
  sweep.remove(g, n);
}

}  // namespace

Result<bool> fold_constants(Graph& graph, const PassOptions& options) {
  const size_t max_output_bytes = options.max_fold_bytes;
  RETURN_IF_ERROR(graph.toposort());
  bool changed = false;
  pass_util::Sweep sweep(graph);
  std::vector<const Tensor*> args;
  std::vector<Tensor> results;
  SymbolTable* symbols = graph.symbols();
  for (Node* n : sweep.nodes()) {
    // Shapes upstream may have just become known (a folded Reshape target): refresh before deciding.
    RETURN_IF_ERROR(infer_node(*n, symbols));
    Value* out = n->output();
    // On symbolic shapes, what a shape chain computes is known as dims (graph/shape_data.h): a Reshape takes it as
    // its target, and a tensor of static elements only becomes a constant.
    if (symbols) {
      if (n->op == OpKind::kReshape && n->input(1) && n->input(1)->has_shape_data && !n->input(0)->is_constant()) {
        n->attr<ReshapeAttrs>().shape = n->input(1)->shape_data;
        n->inputs.resize(1);
        RETURN_IF_ERROR(infer_node(*n, symbols));
        changed = true;
        continue;
      }
      if (propagate_shape_data(*n, *symbols)) changed = true;
      if (out->has_shape_data && out->dtype == DType::kI64 &&
          std::all_of(out->shape_data.begin(), out->shape_data.end(), [](int64_t d) { return d >= -1; })) {
        const std::vector<int64_t> data = out->shape_data;
        out->has_shape_data = false;
        out->shape_data.clear();
        make_constant(graph, sweep, n, Tensor::from_int64s(out->shape, data));
        changed = true;
        continue;
      }
    }
    if (n->op == OpKind::kShape && n->input(0)->has_static_shape()) {
      const Shape& s = n->input(0)->shape;
      make_constant(graph, sweep, n, Tensor::from_int64s({static_cast<int64_t>(s.size())}, s));
      changed = true;
      continue;
    }
    // A run-time Reshape target that is now constant becomes the attribute (one form for backends).
    if (n->op == OpKind::kReshape && n->input(1) && n->input(1)->is_constant() && !n->input(0)->is_constant()) {
      n->attr<ReshapeAttrs>().shape = n->input(1)->constant.to_int64s();
      n->inputs.resize(1);
      RETURN_IF_ERROR(infer_node(*n, symbols));
      changed = true;
      continue;
    }
    bool all_constant = !n->inputs.empty();
    for (const Value* in : n->inputs) all_constant = all_constant && (in == nullptr || in->is_constant());
    if (!all_constant || !out->has_static_shape()) continue;
    const size_t bytes = static_cast<size_t>(shape_numel(out->shape)) * dtype_size(out->dtype);
    if (bytes > max_output_bytes) {
      log::debug("passes", "not folding {}: its output {} is {} bytes (limit {})", n->describe(), shape_str(out->shape),
                 bytes, max_output_bytes);
      continue;
    }
    if (!options.evaluate) continue;
    args.clear();
    for (const Value* in : n->inputs) args.push_back(in ? &in->constant : nullptr);
    Status s = options.evaluate(*n, args, &results);
    if (s.is_ok() && results.empty()) s = internal_error("the evaluator returned no output");
    if (!s.is_ok()) {
      // Left for run time, where the same error will surface with its context.
      log::debug("passes", "not folding {}: {}", n->describe(), s.message());
      continue;
    }
    make_constant(graph, sweep, n, std::move(results[0]));
    changed = true;
  }
  graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

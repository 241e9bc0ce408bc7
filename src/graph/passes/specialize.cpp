// Shape specialisation: fixes the input shapes, checks them against what the model declares, propagates shapes
// and folds constants until nothing changes, leaving a graph with static shapes everywhere.
#include <fmt/format.h>

#include "graph/passes/passes.h"
#include "graph/shape_inference.h"
#include "graph/symbolic_shapes.h"
#include "graph/verifier.h"

namespace steadyocr::graph {
namespace {

// "[?,3,48,?]" style for what the model declares.
std::string declared_str(const Shape& s) {
  return shape_str(s);
}

Status check_input_shape(const Graph& g, const Value* in, const Shape& given) {
  const Shape& declared = in->shape;
  auto mismatch = [&](const std::string& why) {
    return invalid_argument(fmt::format("model '{}': input '{}' was given shape {} but the model expects {} ({})",
                                        g.name(), in->name, shape_str(given), declared_str(declared), why));
  };
  if (given.size() != declared.size()) {
    return mismatch(fmt::format("rank {} instead of {}", given.size(), declared.size()));
  }
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] <= 0) return mismatch(fmt::format("dimension {} is {}, must be positive", i, given[i]));
    if (declared[i] >= 0 && declared[i] != given[i]) {
      return mismatch(fmt::format("dimension {} must be {}", i, declared[i]));
    }
  }
  return Status::ok();
}

}  // namespace

Status specialize(Graph& graph, const std::vector<Shape>& input_shapes, const PassOptions& options) {
  auto& inputs = graph.inputs();
  if (input_shapes.size() != inputs.size()) {
    return invalid_argument(fmt::format("model '{}' has {} input(s) but {} shape(s) were given", graph.name(),
                                        inputs.size(), input_shapes.size()));
  }
  std::vector<Shape> declared;
  for (size_t i = 0; i < inputs.size(); ++i) {
    RETURN_IF_ERROR(check_input_shape(graph, inputs[i], input_shapes[i]));
    declared.push_back(inputs[i]->shape);
  }
  for (size_t i = 0; i < inputs.size(); ++i) inputs[i]->shape = input_shapes[i];

  auto describe_inputs = [&]() {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i) {
      s += fmt::format("{}'{}' {} (declared {})", i ? ", " : "", inputs[i]->name, shape_str(input_shapes[i]),
                       shape_str(declared[i]));
    }
    return s;
  };
  auto shape_error = [&](const Status& s) {
    return invalid_argument(fmt::format("model '{}': input shape {} does not fit the model: {}", graph.name(),
                                        describe_inputs(), s.message()));
  };
  Status s = infer_shapes(graph);
  if (!s.is_ok()) return shape_error(s);
  // Each round folds what became constant and re-infers; the chains are short, a few rounds reach the fixpoint.
  for (int round = 0; round < 32; ++round) {
    auto changed = fold_constants(graph, options);
    if (!changed.is_ok()) return shape_error(changed.status());
    s = infer_shapes(graph);
    if (!s.is_ok()) return shape_error(s);
    if (!*changed) break;
  }
  for (const auto& n : graph.nodes()) {
    for (const Value* o : n->outputs) {
      if (!o->has_static_shape()) {
        return unsupported(
            fmt::format("model '{}': after specialising to {}, '{}' produced by {} still has the "
                        "dynamic shape {}; its shape depends on data, which steadyocr does not support",
                        graph.name(), describe_inputs(), o->name, n->describe(), shape_str(o->shape)));
      }
    }
  }
  if (!options.verify_each) return Status::ok();  // the caller verifies the result of the passes that follow
  VerifyOptions vo;
  vo.require_static_shapes = true;
  s = verify(graph, vo);
  if (!s.is_ok()) return s.with_context("after specialize");
  return Status::ok();
}

Status specialize_symbolic(Graph& graph, const PassOptions& options) {
  SymbolTable& symbols = graph.make_symbols();
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    Shape& s = graph.inputs()[i]->shape;
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] < 0) s[d] = symbols.input(static_cast<int>(i), static_cast<int>(d));
    }
  }
  RETURN_IF_ERROR(infer_shapes(graph));
  for (int round = 0; round < 32; ++round) {
    ASSIGN_OR_RETURN(bool changed, fold_constants(graph, options));
    RETURN_IF_ERROR(infer_shapes(graph));
    if (!changed) break;
  }
  for (const auto& n : graph.nodes()) {
    for (const Value* o : n->outputs) {
      if (!is_resolved(o->shape)) {
        return unsupported(
            fmt::format("model '{}': {} produced by {} has the shape {} on symbolic inputs {}: not an "
                        "expression of the input's dims",
                        graph.name(), o->name, n->describe(), symbols.describe(o->shape),
                        symbols.describe(graph.inputs()[0]->shape)));
      }
    }
  }
  if (!options.verify_each) return Status::ok();
  Status s = verify(graph, {});
  if (!s.is_ok()) return s.with_context("after symbolic specialisation");
  return Status::ok();
}

Result<Graph> instantiate(const Graph& graph, const std::vector<Shape>& input_shapes) {
  const SymbolTable* symbols = graph.symbols();
  if (!symbols) return invalid_argument(fmt::format("model '{}' was not specialised symbolically", graph.name()));
  if (input_shapes.size() != graph.inputs().size()) {
    return invalid_argument(fmt::format("model '{}' has {} input(s) but {} shape(s) were given", graph.name(),
                                        graph.inputs().size(), input_shapes.size()));
  }
  for (size_t i = 0; i < input_shapes.size(); ++i) {
    const Shape& declared = graph.inputs()[i]->shape;
    const Shape& given = input_shapes[i];
    if (!fits_declared(declared, given)) {
      return invalid_argument(fmt::format("model '{}': input shape {} does not fit {}", graph.name(), shape_str(given),
                                          symbols->describe(declared)));
    }
  }
  Graph g = graph.clone();
  // A dim that comes out non-positive (a window larger than its input, say): the plain path names it.
  Status s = SymbolicShapes(g).write(input_shapes);
  if (!s.is_ok()) return s.with_context(fmt::format("model '{}'", graph.name()));
  g.forget_symbols();
  for (const auto& v : g.values()) {
    v->has_shape_data = false;
    v->shape_data.clear();
  }
  return g;
}

}  // namespace steadyocr::graph

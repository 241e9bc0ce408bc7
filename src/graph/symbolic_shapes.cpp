#include "graph/symbolic_shapes.h"

#include <fmt/format.h>

namespace steadyocr::graph {

bool fits_declared(const Shape& declared, const Shape& given) {
  if (given.size() != declared.size()) return false;
  for (size_t d = 0; d < given.size(); ++d) {
    if (given[d] <= 0 || (!is_symbolic(declared[d]) && declared[d] != given[d])) return false;
  }
  return true;
}

SymbolicShapes::SymbolicShapes(Graph& g) : graph_(&g) {
  for (const auto& v : g.values()) {
    if (has_symbols(v->shape)) values_.emplace_back(v.get(), v->shape);
  }
  for (const auto& n : g.nodes()) {
    if (n->op == OpKind::kReshape && has_symbols(n->attr<ReshapeAttrs>().shape)) reshapes_.push_back(n.get());
  }
}

Status SymbolicShapes::write(const std::vector<Shape>& input_shapes) {
  if (!graph_->symbols()) return invalid_argument(fmt::format("'{}' was not specialised on symbols", graph_->name()));
  SymbolValues values;
  RETURN_IF_ERROR(graph_->symbols()->evaluate(input_shapes, &values));
  for (auto& [v, symbolic] : values_) {
    v->shape = values.shape(symbolic);
    for (int64_t d : v->shape) {
      if (d <= 0) {
        return invalid_argument(fmt::format("'{}' would have the shape {} for input {}", v->name, shape_str(v->shape),
                                            input_shapes.empty() ? "?" : shape_str(input_shapes[0])));
      }
    }
  }
  for (Node* n : reshapes_) n->attr<ReshapeAttrs>().shape = n->output()->shape;
  return Status::ok();
}

}  // namespace steadyocr::graph

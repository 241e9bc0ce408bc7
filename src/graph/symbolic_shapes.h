// Writing the shapes of one input shape into a graph specialised on symbols, in place: what a backend's plan for every
// input shape does for each new shape (the cuda and vulkan plans keep a copy of the graph for it), and what
// graph::instantiate does on a clone.
#pragma once

#include <utility>
#include <vector>

#include "core/status.h"
#include "graph/ir.h"
#include "graph/symbolic.h"

namespace steadyocr::graph {

// Whether `given` (an input's shape) fits `declared` (its shape in a graph specialised on symbols): the same rank,
// every dim positive, and the static dims as declared.
bool fits_declared(const Shape& declared, const Shape& given);

// The values whose shapes hold symbols, and the Reshapes whose targets do, of one graph, found once.
class SymbolicShapes {
 public:
  explicit SymbolicShapes(Graph& g);
  // Evaluates the graph's symbols for `input_shapes` (each fitting its declared shape) and writes every such shape and
  // Reshape target (explicit sizes: no 0 or -1 left); fails where an assumption on the symbols does not hold or a dim
  // comes out non-positive (a window larger than its input, say), naming the value.
  Status write(const std::vector<Shape>& input_shapes);

 private:
  Graph* graph_;
  std::vector<std::pair<Value*, Shape>> values_;  // the symbolic shape of each
  std::vector<Node*> reshapes_;
};

}  // namespace steadyocr::graph

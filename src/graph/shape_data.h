// Shape data: what symbolic specialisation knows of the small integer tensors a model computes from shapes (ONNX's
// "data propagation"). A Shape of a value with symbolic dims, and the Cast, Slice, Concat, (Un)Squeeze and integer
// arithmetic after it, give tensors whose elements are dims (Value::shape_data); a Reshape reading one takes it as its
// target. The chains then die, and no per-shape pass is left to fold them.
#pragma once

#include "graph/ir.h"

namespace steadyocr::graph {

// Sets `n`'s output shape data from its inputs (constants, or values with shape data) when the op is one of those
// above and every element is known; returns whether it did. Elements of constants below -1 stop it (they would read as
// symbols). Needs the node's graph's symbol table for the arithmetic.
bool propagate_shape_data(Node& n, SymbolTable& symbols);

}  // namespace steadyocr::graph

// Structural and typing checks run after import and after every pass.
#pragma once

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

struct VerifyOptions {
  bool require_static_shapes = false;  // true once specialised for an input shape
};

// Checks: nodes in topological order; every input is a graph input, a constant or produced earlier;
// each value has at most one producer; input counts and attributes valid per op; output shapes agree
// with shape inference; graph outputs are produced. The error names the offending node.
Status verify(const Graph& graph, const VerifyOptions& options = {});

}  // namespace steadyocr::graph

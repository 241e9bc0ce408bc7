// Static shape and dtype propagation over the IR.
#pragma once

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

// Sets output dtype and shape of one node from its inputs (unknown dims stay -1). Needs constant
// values where an op's output shape depends on them (Reshape target, Slice bounds, ...).
Status infer_node(Node& node);
// Runs infer_node over the graph in topological order.
Status infer_shapes(Graph& graph);

}  // namespace steadyocr::graph

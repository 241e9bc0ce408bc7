// Static shape and dtype propagation over the IR.
#pragma once

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

// Sets output dtype and shape of one node from its inputs (unknown dims stay -1). Needs constant
// values where an op's output shape depends on them (Reshape target, Slice bounds, ...). With `symbols` (the node's
// graph's table), symbolic input dims give symbolic output dims; without, they count as unknown.
Status infer_node(Node& node, SymbolTable* symbols = nullptr);
// Runs infer_node over the graph in topological order (with the graph's symbol table, if it has one).
Status infer_shapes(Graph& graph);

}  // namespace steadyocr::graph

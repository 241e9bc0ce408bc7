// Placement of a graph's nodes on a chain of backends (ARCHITECTURE.md, "Backend"): a backend may decline a node
// (supports()); the node then runs on the next backend of the chain that takes it. The graph is cut into segments
// of consecutive nodes on one backend, each prepared on its backend, and tensors cross between segments through
// host memory (every PreparedGraph takes and returns host tensors). Nothing is placed silently: every placement is
// returned for the caller to count, log and show.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::runtime {

// One node that the first backend of the chain declined, and where it runs instead.
struct NodePlacement {
  std::string node;  // "Resize 'p2_upsample'"
  std::string op;    // "Resize"
  std::string from;  // the backend that declined it (the chain's first)
  std::string to;    // the backend it runs on
};

struct PlacedGraph {
  std::unique_ptr<PreparedGraph> prepared;
  std::vector<NodePlacement> placements;  // empty when the whole graph runs on the chain's first backend
  int segments = 1;
};

// Prepares `graph` (static shapes) on chain[0], placing each node chain[0] declines on the first later backend that
// takes it. A graph that chain[0] takes whole is prepared on it as is. Fails when no backend of the chain takes a
// node, naming the node and every backend asked.
Result<PlacedGraph> prepare_placed(const graph::Graph& graph, const std::vector<std::shared_ptr<Backend>>& chain);

}  // namespace steadyocr::runtime

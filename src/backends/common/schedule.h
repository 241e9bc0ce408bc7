// The order a backend runs a graph in. Every backend plans from the same schedule, so step indices, profiles and
// liveness mean the same thing on each.
#pragma once

#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::common {

enum class ScheduleOrder : uint8_t {
  // The graph's own order when it already is one (passes leave graphs so; profiles read in model order), else
  // breadth-first.
  kGraph,
  // Depth-first whatever the graph's order: a chain of pointwise nodes runs to its end before a sibling branch
  // starts, so its intermediates die early and what a step reads is ready when the chain reaches it.
  kDepthFirst,
};

// The nodes, producers first, ordered by graph::topological_order. Fails on a cycle.
Result<std::vector<const graph::Node*>> schedule(const graph::Graph& g, ScheduleOrder order);

// Whether every output of `n` was folded to a constant (the node computes nothing at run time).
bool is_folded(const graph::Node& n);

}  // namespace steadyocr::common

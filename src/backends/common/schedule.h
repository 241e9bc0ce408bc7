// The order a backend runs a graph in. Every backend plans from the same schedule, so step indices, profiles and
// liveness mean the same thing on each.
#pragma once

#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::common {

// The nodes, producers first: the graph's own order when it already is one (passes leave graphs so; profiles
// then read in model order), else graph::topological_order. Fails on a cycle.
Result<std::vector<const graph::Node*>> schedule(const graph::Graph& g);

// Whether every output of `n` was folded to a constant (the node computes nothing at run time).
bool is_folded(const graph::Node& n);

}  // namespace steadyocr::common

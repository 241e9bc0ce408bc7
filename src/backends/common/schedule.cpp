#include "backends/common/schedule.h"

namespace steadyocr::common {

Result<std::vector<const graph::Node*>> schedule(const graph::Graph& g, ScheduleOrder kind) {
  std::vector<const graph::Node*> order;
  order.reserve(g.nodes().size());
  if (kind == ScheduleOrder::kGraph && graph::is_topologically_ordered(g)) {
    for (const auto& n : g.nodes()) order.push_back(n.get());
    return order;
  }
  const graph::TopoOrder topo =
      kind == ScheduleOrder::kGraph ? graph::TopoOrder::kBreadthFirst : graph::TopoOrder::kDepthFirst;
  ASSIGN_OR_RETURN(std::vector<graph::Node*> sorted, graph::topological_order(g, topo));
  order.assign(sorted.begin(), sorted.end());
  return order;
}

bool is_folded(const graph::Node& n) {
  bool all_constant = !n.outputs.empty();
  for (const graph::Value* o : n.outputs) all_constant = all_constant && o && o->is_constant();
  return all_constant;
}

}  // namespace steadyocr::common

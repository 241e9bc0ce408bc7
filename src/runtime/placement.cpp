#include "runtime/placement.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace steadyocr::runtime {
namespace {

// A run of consecutive nodes (in topological order) on one backend, prepared as a graph of its own. Its inputs and
// outputs are slots of the whole graph's run: the graph's inputs and the values that cross between segments.
struct Segment {
  size_t backend = 0;  // index in the chain
  std::vector<const graph::Node*> nodes;
  std::vector<const graph::Value*> inputs, outputs;
  std::unique_ptr<PreparedGraph> prepared;
  std::vector<int> input_slots, output_slots;
  std::vector<int> release;  // slots nothing later reads (freed after this segment)
};

// Runs the segments in order; each hands its host outputs to the segments after it.
class SegmentedGraph final : public PreparedGraph {
 public:
  SegmentedGraph(std::vector<Segment> segments, std::vector<std::string> backend_names, int slots,
                 std::vector<int> input_slots, std::vector<std::pair<int, Tensor>> output_sources)
      : segments_(std::move(segments)),
        backend_names_(std::move(backend_names)),
        slots_(slots),
        input_slots_(std::move(input_slots)),
        output_sources_(std::move(output_sources)) {}

  Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
    if (inputs.size() != input_slots_.size()) {
      return invalid_argument(fmt::format("expected {} inputs, got {}", input_slots_.size(), inputs.size()));
    }
    std::vector<Tensor> slot(static_cast<size_t>(slots_));
    for (size_t i = 0; i < inputs.size(); ++i) slot[input_slots_[i]] = inputs[i];
    std::vector<Tensor> ins, outs;
    for (size_t k = 0; k < segments_.size(); ++k) {
      const Segment& s = segments_[k];
      ins.clear();
      for (int i : s.input_slots) ins.push_back(slot[i]);
      outs.clear();
      RETURN_IF_ERROR(
          s.prepared->run(ins, &outs)
              .with_context(fmt::format("part {} of {} (on {})", k + 1, segments_.size(), backend_names_[s.backend])));
      if (outs.size() != s.output_slots.size()) {
        return internal_error(fmt::format("part {} on {} returned {} outputs, expected {}", k + 1,
                                          backend_names_[s.backend], outs.size(), s.output_slots.size()));
      }
      for (size_t o = 0; o < outs.size(); ++o) slot[s.output_slots[o]] = std::move(outs[o]);
      for (int i : s.release) slot[i] = Tensor();
    }
    outputs->clear();
    for (const auto& [i, constant] : output_sources_) outputs->push_back(i >= 0 ? slot[i] : constant);
    return Status::ok();
  }

  size_t workspace_bytes() const override {
    size_t n = 0;
    for (const Segment& s : segments_) n += s.prepared->workspace_bytes();
    return n;
  }

 private:
  std::vector<Segment> segments_;
  std::vector<std::string> backend_names_;
  int slots_ = 0;
  std::vector<int> input_slots_;
  std::vector<std::pair<int, Tensor>> output_sources_;  // slot, or -1 and the constant itself
};

// The segment's nodes as a graph of their own: boundary values become its inputs and outputs, constants are
// shared (same storage).
graph::Graph segment_graph(const graph::Graph& whole, const Segment& s, size_t index, size_t count) {
  graph::Graph sub;
  sub.set_name(fmt::format("{} (part {} of {})", whole.name(), index + 1, count));
  std::map<const graph::Value*, graph::Value*> mapped;
  auto value = [&](const graph::Value* v) -> graph::Value* {
    if (!v) return nullptr;
    auto it = mapped.find(v);
    if (it != mapped.end()) return it->second;
    graph::Value* nv =
        v->is_constant() ? sub.add_constant(v->name, v->constant) : sub.add_value(v->name, v->dtype, v->shape);
    mapped[v] = nv;
    return nv;
  };
  for (const graph::Value* v : s.inputs) sub.inputs().push_back(value(v));
  for (const graph::Node* n : s.nodes) {
    std::vector<graph::Value*> ins, outs;
    for (const graph::Value* v : n->inputs) ins.push_back(value(v));
    for (const graph::Value* v : n->outputs) outs.push_back(value(v));
    sub.add_node(n->op, n->name, std::move(ins), std::move(outs), n->attrs);
  }
  for (const graph::Value* v : s.outputs) sub.outputs().push_back(mapped.at(v));
  return sub;
}

}  // namespace

Result<PlacedGraph> prepare_placed(const graph::Graph& graph, const std::vector<std::shared_ptr<Backend>>& chain) {
  if (chain.empty() || !chain[0]) return invalid_argument("prepare_placed: no backend given");
  // Where each node runs: the first backend of the chain that takes it.
  std::vector<size_t> where;
  where.reserve(graph.nodes().size());
  bool whole = true;
  for (const auto& n : graph.nodes()) {
    size_t b = 0;
    while (b < chain.size() && !(chain[b] && chain[b]->supports(*n))) ++b;
    if (b == chain.size()) {
      std::string asked;
      for (const auto& c : chain) asked += (asked.empty() ? "" : ", ") + (c ? c->name() : std::string("?"));
      return unsupported(fmt::format("{}: no backend runs it (declined by {})", n->describe(), asked));
    }
    where.push_back(b);
    whole = whole && b == 0;
  }
  PlacedGraph placed;
  if (whole) {
    ASSIGN_OR_RETURN(placed.prepared, chain[0]->prepare(graph));
    return placed;
  }

  // Segments in topological order (a copy, so that the caller's node order is never changed).
  graph::Graph g = graph.clone();
  std::map<std::string, size_t> backend_of;  // node name -> chain index
  for (size_t i = 0; i < graph.nodes().size(); ++i) backend_of[graph.nodes()[i]->name] = where[i];
  RETURN_IF_ERROR(g.toposort());
  std::vector<Segment> segments;
  std::map<const graph::Value*, size_t> produced_in;
  for (const auto& n : g.nodes()) {
    const size_t b = backend_of.at(n->name);
    if (segments.empty() || segments.back().backend != b) {
      segments.emplace_back();
      segments.back().backend = b;
    }
    segments.back().nodes.push_back(n.get());
    for (const graph::Value* o : n->outputs) {
      if (o) produced_in[o] = segments.size() - 1;
    }
    if (b != 0) {
      placed.placements.push_back({n->describe(), graph::op_name(n->op), chain[0]->name(), chain[b]->name()});
    }
  }

  // Slots: the graph's inputs, then every value one segment hands to a later one.
  std::map<const graph::Value*, int> slot_of;
  auto slot = [&](const graph::Value* v) {
    auto [it, added] = slot_of.emplace(v, static_cast<int>(slot_of.size()));
    return it->second;
  };
  std::vector<int> input_slots;
  for (const graph::Value* v : g.inputs()) input_slots.push_back(slot(v));
  std::map<int, size_t> last_reader;  // slot -> last segment reading it
  for (size_t k = 0; k < segments.size(); ++k) {
    Segment& s = segments[k];
    std::set<const graph::Value*> seen;
    for (const graph::Node* n : s.nodes) {
      for (const graph::Value* v : n->inputs) {
        if (!v || v->is_constant() || seen.count(v)) continue;
        auto p = produced_in.find(v);
        if (p != produced_in.end() && p->second == k) continue;  // made inside the segment
        if (p == produced_in.end() && !slot_of.count(v)) {
          return invalid_argument(fmt::format(
              "{}: input '{}' is neither a graph input, a constant nor produced by a node", n->describe(), v->name));
        }
        seen.insert(v);
        s.inputs.push_back(v);
        s.input_slots.push_back(slot(v));
        last_reader[slot(v)] = k;
      }
    }
  }
  // A segment's outputs: what later segments read, and the graph's outputs it produces.
  std::set<const graph::Value*> read_later;
  for (const Segment& s : segments) read_later.insert(s.inputs.begin(), s.inputs.end());
  for (const graph::Value* v : g.outputs()) read_later.insert(v);
  for (size_t k = 0; k < segments.size(); ++k) {
    Segment& s = segments[k];
    for (const graph::Node* n : s.nodes) {
      for (const graph::Value* o : n->outputs) {
        if (!o || !read_later.count(o)) continue;
        s.outputs.push_back(o);
        s.output_slots.push_back(slot(o));
      }
    }
  }
  std::vector<std::pair<int, Tensor>> output_sources;
  std::set<int> kept;  // graph outputs stay until the end
  for (const graph::Value* v : g.outputs()) {
    if (v->is_constant()) {
      output_sources.emplace_back(-1, v->constant);
    } else if (slot_of.count(v)) {
      output_sources.emplace_back(slot_of.at(v), Tensor());
      kept.insert(slot_of.at(v));
    } else {
      return invalid_argument(fmt::format("graph '{}': output '{}' is never computed", g.name(), v->name));
    }
  }
  for (const auto& [s, k] : last_reader) {
    if (!kept.count(s)) segments[k].release.push_back(s);
  }

  std::vector<std::string> names;
  for (const auto& c : chain) names.push_back(c ? c->name() : "?");
  for (size_t k = 0; k < segments.size(); ++k) {
    Segment& s = segments[k];
    graph::Graph sub = segment_graph(g, s, k, segments.size());
    auto p = chain[s.backend]->prepare(sub);
    if (!p.is_ok()) {
      return p.status().with_context(fmt::format("part {} of {} ({} nodes from {}) on {}", k + 1, segments.size(),
                                                 s.nodes.size(), s.nodes.front()->describe(), names[s.backend]));
    }
    s.prepared = std::move(p).value();
    // The prepared part keeps what it needs; the node pointers die with `g`.
    s.nodes.clear();
    s.inputs.clear();
    s.outputs.clear();
  }
  placed.segments = static_cast<int>(segments.size());
  placed.prepared =
      std::make_unique<SegmentedGraph>(std::move(segments), std::move(names), static_cast<int>(slot_of.size()),
                                       std::move(input_slots), std::move(output_sources));
  return placed;
}

}  // namespace steadyocr::runtime

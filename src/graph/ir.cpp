#include "graph/ir.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace steadyocr::graph {
namespace {

constexpr const char* kOpNames[] = {"Conv",        "ConvTranspose", "BatchNormalization",
                                    "Add",         "Sub",           "Mul",
                                    "Div",         "Pow",           "Sqrt",
                                    "Relu",        "Sigmoid",       "HardSigmoid",
                                    "HardSwish",   "Clip",          "GlobalAveragePool",
                                    "AveragePool", "MaxPool",       "Resize",
                                    "Concat",      "Reshape",       "Transpose",
                                    "MatMul",      "Softmax",       "ReduceMean",
                                    "Squeeze",     "Unsqueeze",     "Shape",
                                    "Cast",        "Slice",         "LayerNormalization",
                                    "Top1",        "ImageLut",      "Identity"};
static_assert(sizeof(kOpNames) / sizeof(kOpNames[0]) == static_cast<size_t>(OpKind::kCount));

}  // namespace

const char* op_name(OpKind op) {
  auto i = static_cast<size_t>(op);
  return i < static_cast<size_t>(OpKind::kCount) ? kOpNames[i] : "?";
}

bool op_from_name(const std::string& name, OpKind* out) {
  for (size_t i = 0; i < static_cast<size_t>(OpKind::kCount); ++i) {
    if (name == kOpNames[i]) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

const char* act_name(ActKind a) {
  switch (a) {
    case ActKind::kNone:
      return "none";
    case ActKind::kRelu:
      return "relu";
    case ActKind::kSigmoid:
      return "sigmoid";
    case ActKind::kHardSigmoid:
      return "hardsigmoid";
    case ActKind::kHardSwish:
      return "hardswish";
    case ActKind::kClip:
      return "clip";
  }
  return "?";
}

float Activation::apply(float x) const {
  switch (kind) {
    case ActKind::kNone:
      return x;
    case ActKind::kRelu:
      return x > 0.f ? x : 0.f;
    case ActKind::kSigmoid:
      return 1.f / (1.f + std::exp(-x));
    case ActKind::kHardSigmoid:
      return std::clamp(alpha * x + beta, 0.f, 1.f);
    case ActKind::kHardSwish:
      return x * std::clamp(x / 6.f + 0.5f, 0.f, 1.f);
    case ActKind::kClip:
      return std::clamp(x, alpha, beta);
  }
  return x;
}

std::string Activation::describe() const {
  switch (kind) {
    case ActKind::kHardSigmoid:
      return fmt::format("hardsigmoid({},{})", alpha, beta);
    case ActKind::kClip:
      return fmt::format("clip({},{})", alpha, beta);
    default:
      return act_name(kind);
  }
}

bool Value::has_static_shape() const {
  return std::all_of(shape.begin(), shape.end(), [](int64_t d) { return d >= 0; });
}

std::string Node::describe() const {
  return fmt::format("{} '{}'", op_name(op), name);
}

Value* Graph::add_value(std::string name, DType dtype, Shape shape) {
  if (name.empty() || by_name_.count(name)) name = unique_name(name.empty() ? "v" : name);
  auto v = std::make_unique<Value>();
  v->name = std::move(name);
  v->dtype = dtype;
  v->shape = std::move(shape);
  Value* raw = v.get();
  by_name_[raw->name] = raw;
  values_.push_back(std::move(v));
  return raw;
}

Value* Graph::add_constant(std::string name, Tensor t) {
  Value* v = add_value(std::move(name), t.dtype(), t.shape());
  v->constant = std::move(t);
  return v;
}

Node* Graph::add_node(OpKind op, std::string name, std::vector<Value*> inputs, std::vector<Value*> outputs,
                      OpAttrs attrs) {
  auto n = std::make_unique<Node>();
  n->op = op;
  n->name = std::move(name);
  n->inputs = std::move(inputs);
  n->outputs = std::move(outputs);
  n->attrs = std::move(attrs);
  for (Value* o : n->outputs) o->producer = n.get();
  Node* raw = n.get();
  nodes_.push_back(std::move(n));
  return raw;
}

std::string Graph::unique_name(const std::string& base) {
  for (;;) {
    std::string cand = fmt::format("{}__{}", base, name_counter_++);
    if (!by_name_.count(cand)) return cand;
  }
}

void Graph::remove_node(Node* n) {
  for (Value* o : n->outputs) {
    if (o->producer == n) o->producer = nullptr;
  }
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [n](const auto& p) { return p.get() == n; });
  if (it != nodes_.end()) nodes_.erase(it);
}

void Graph::move_after(Node* n, const Node* anchor) {
  auto from = std::find_if(nodes_.begin(), nodes_.end(), [n](const auto& p) { return p.get() == n; });
  if (from == nodes_.end()) return;
  std::unique_ptr<Node> owned = std::move(*from);
  nodes_.erase(from);
  auto at = std::find_if(nodes_.begin(), nodes_.end(), [anchor](const auto& p) { return p.get() == anchor; });
  nodes_.insert(at == nodes_.end() ? at : std::next(at), std::move(owned));
}

void Graph::replace_all_uses(Value* from, Value* to) {
  for (auto& n : nodes_) {
    for (Value*& in : n->inputs) {
      if (in == from) in = to;
    }
  }
  for (Value*& o : outputs_) {
    if (o == from) o = to;
  }
}

std::vector<Node*> Graph::consumers(const Value* v) const {
  std::vector<Node*> out;
  for (auto& n : nodes_) {
    if (std::find(n->inputs.begin(), n->inputs.end(), v) != n->inputs.end()) out.push_back(n.get());
  }
  return out;
}

bool Graph::is_graph_output(const Value* v) const {
  return std::find(outputs_.begin(), outputs_.end(), v) != outputs_.end();
}

Status Graph::toposort() {
  ASSIGN_OR_RETURN(std::vector<Node*> order, topological_order(*this));
  std::unordered_map<const Node*, size_t> pos;
  for (size_t i = 0; i < order.size(); ++i) pos[order[i]] = i;
  std::sort(nodes_.begin(), nodes_.end(), [&](const auto& a, const auto& b) { return pos[a.get()] < pos[b.get()]; });
  return Status::ok();
}

Result<std::vector<Node*>> topological_order(const Graph& g, TopoOrder discipline) {
  std::unordered_map<const Node*, int> pending;
  std::unordered_map<const Value*, std::vector<Node*>> users;
  for (auto& n : g.nodes()) {
    int deps = 0;
    for (Value* in : n->inputs) {
      if (in && in->producer) {
        ++deps;
        users[in].push_back(n.get());
      }
    }
    pending[n.get()] = deps;
  }
  std::vector<Node*> ready;
  for (auto& n : g.nodes()) {
    if (pending[n.get()] == 0) ready.push_back(n.get());
  }
  std::vector<Node*> order;
  order.reserve(g.nodes().size());
  if (discipline == TopoOrder::kBreadthFirst) {
    // Pop from the front to keep the original order stable among independent nodes.
    size_t head = 0;
    while (head < ready.size()) {
      Node* n = ready[head++];
      order.push_back(n);
      for (Value* o : n->outputs) {
        auto it = users.find(o);
        if (it == users.end()) continue;
        for (Node* u : it->second) {
          // A node may read the same value twice; each read counted once per occurrence above.
          if (--pending[u] == 0) ready.push_back(u);
        }
      }
    }
  } else {
    // A stack, filled in reverse so that the first node and each node's first reader come out first.
    std::reverse(ready.begin(), ready.end());
    while (!ready.empty()) {
      Node* n = ready.back();
      ready.pop_back();
      order.push_back(n);
      for (Value* o : n->outputs) {
        auto it = users.find(o);
        if (it == users.end()) continue;
        for (auto u = it->second.rbegin(); u != it->second.rend(); ++u) {
          if (--pending[*u] == 0) ready.push_back(*u);
        }
      }
    }
  }
  if (order.size() != g.nodes().size()) {
    return internal_error(
        fmt::format("graph '{}' has a cycle ({} of {} nodes orderable)", g.name(), order.size(), g.nodes().size()));
  }
  return order;
}

bool is_topologically_ordered(const Graph& g) {
  std::unordered_set<const Value*> produced;
  for (const auto& n : g.nodes()) {
    for (const Value* in : n->inputs) {
      if (in && in->producer && !in->is_constant() && !produced.count(in)) return false;
    }
    for (const Value* o : n->outputs) produced.insert(o);
  }
  return true;
}

size_t Graph::remove_dead() {
  size_t removed = 0;
  bool changed = true;
  while (changed) {
    changed = false;
    std::unordered_set<const Value*> used(outputs_.begin(), outputs_.end());
    for (auto& n : nodes_) {
      for (Value* in : n->inputs) {
        if (in) used.insert(in);
      }
    }
    for (size_t i = nodes_.size(); i-- > 0;) {
      Node* n = nodes_[i].get();
      bool live = std::any_of(n->outputs.begin(), n->outputs.end(), [&](Value* o) { return used.count(o); });
      if (!live) {
        remove_node(n);
        ++removed;
        changed = true;
      }
    }
  }
  std::unordered_set<const Value*> keep(inputs_.begin(), inputs_.end());
  keep.insert(outputs_.begin(), outputs_.end());
  for (auto& n : nodes_) {
    for (Value* in : n->inputs) {
      if (in) keep.insert(in);
    }
    for (Value* o : n->outputs) keep.insert(o);
  }
  std::vector<std::unique_ptr<Value>> kept;
  for (auto& v : values_) {
    if (keep.count(v.get())) {
      kept.push_back(std::move(v));
    } else {
      by_name_.erase(v->name);
    }
  }
  values_ = std::move(kept);
  return removed;
}

Value* Graph::find_value(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::map<std::string, int> Graph::op_histogram() const {
  std::map<std::string, int> h;
  for (auto& n : nodes_) ++h[op_name(n->op)];
  return h;
}

size_t Graph::constant_bytes() const {
  size_t b = 0;
  for (auto& v : values_) {
    if (v->is_constant()) b += v->constant.nbytes();
  }
  return b;
}

SymbolTable& Graph::make_symbols() {
  if (!symbols_) symbols_ = std::make_shared<SymbolTable>();
  return *symbols_;
}

Graph Graph::clone() const {
  Graph g;
  g.name_ = name_;
  g.source_digest_ = source_digest_;
  g.name_counter_ = name_counter_;
  g.symbols_ = symbols_;
  std::unordered_map<const Value*, Value*> vmap;
  for (auto& v : values_) {
    auto nv = std::make_unique<Value>(*v);
    nv->producer = nullptr;
    vmap[v.get()] = nv.get();
    g.by_name_[nv->name] = nv.get();
    g.values_.push_back(std::move(nv));
  }
  for (auto& n : nodes_) {
    auto nn = std::make_unique<Node>(*n);
    for (Value*& in : nn->inputs) {
      if (in) in = vmap.at(in);
    }
    for (Value*& o : nn->outputs) {
      o = vmap.at(o);
      o->producer = nn.get();
    }
    g.nodes_.push_back(std::move(nn));
  }
  for (Value* v : inputs_) g.inputs_.push_back(vmap.at(v));
  for (Value* v : outputs_) g.outputs_.push_back(vmap.at(v));
  return g;
}

}  // namespace steadyocr::graph

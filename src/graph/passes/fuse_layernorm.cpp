// LayerNorm over the last axis as exported op by op:
//   m = ReduceMean(x, -1); d = x - m; v = ReduceMean(d^2, -1); y = d / sqrt(v + eps) [* gamma] [+ beta]
// (d^2 as Pow(d, 2) or Mul(d, d)) => LayerNorm(x, gamma, beta) with axis -1. Every intermediate must be read
// only inside the pattern (d exactly twice).
#include <cmath>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using pass_util::other_operand;
using pass_util::sole_consumer;

// ReduceMean over exactly the last axis of its input, keeping dims.
bool reduces_last_axis(const Node* n) {
  if (n->op != OpKind::kReduceMean) return false;
  const auto& a = n->attr<ReduceAttrs>();
  const int64_t rank = static_cast<int64_t>(n->input(0)->shape.size());
  return a.keepdims && rank > 0 && a.axes.size() == 1 && (a.axes[0] == -1 || a.axes[0] == rank - 1);
}

// A constant of C values that broadcasts only along the last axis ([C], [1,C], [1,1,C] ...).
bool last_axis_param(const Value* v, int64_t channels, size_t rank) {
  if (!pass_util::constant_f32(v) || v->constant.numel() != channels || v->shape.size() > rank) return false;
  for (size_t i = 0; i + 1 < v->shape.size(); ++i) {
    if (v->shape[i] != 1) return false;
  }
  return v->shape.empty() ? channels == 1 : v->shape.back() == channels;
}

struct Match {
  Value* x = nullptr;
  std::vector<Node*> swallowed;  // removed after the tail is rewritten
  Node* tail = nullptr;
  float eps = 0.f;
  Value* gamma = nullptr;
  Value* beta = nullptr;
};

bool match(const Graph& g, Node* mean, Match* m) {
  if (!reduces_last_axis(mean)) return false;
  Value* x = mean->input(0);
  if (x->dtype != DType::kF32) return false;
  const int64_t channels = x->shape.back();
  if (channels <= 0) return false;
  Node* sub = sole_consumer(g, mean->output());
  if (!sub || sub->op != OpKind::kSub || sub->input(0) != x || sub->input(1) != mean->output()) return false;
  Value* d = sub->output();
  if (g.is_graph_output(d) || d->shape != x->shape) return false;
  // d is read by the square (once, or twice as Mul(d, d)) and by the final division, and nothing else.
  Node* sq = nullptr;
  Node* div = nullptr;
  for (Node* c : g.consumers(d)) {
    if (c->op == OpKind::kDiv && c->input(0) == d) {
      div = c;
    } else if ((c->op == OpKind::kPow && c->input(0) == d && pass_util::scalar_near(c->input(1), 2.f, 0.f)) ||
               (c->op == OpKind::kMul && c->input(0) == d && c->input(1) == d)) {
      sq = c;
    }
  }
  if (!sq || !div || pass_util::use_count(g, d) != (sq->op == OpKind::kMul ? 3u : 2u)) return false;
  Node* var = sole_consumer(g, sq->output());
  if (!var || !reduces_last_axis(var)) return false;
  Node* add = sole_consumer(g, var->output());
  if (!add || add->op != OpKind::kAdd) return false;
  Value* eps_v = other_operand(add, var->output());
  if (!pass_util::constant_scalar(eps_v, &m->eps) || !(m->eps >= 0.f)) return false;
  if (add->output()->shape != var->output()->shape) return false;
  Node* sqrt = sole_consumer(g, add->output());
  if (!sqrt || sqrt->op != OpKind::kSqrt) return false;
  if (sole_consumer(g, sqrt->output()) != div || div->input(1) != sqrt->output()) return false;
  if (div->output()->shape != x->shape) return false;

  m->x = x;
  m->swallowed = {mean, sub, sq, var, add, sqrt};
  m->tail = div;
  // Optional affine: * gamma, then + beta (each on the last axis only).
  Node* next = sole_consumer(g, div->output());
  if (next && next->op == OpKind::kMul) {
    Value* gamma = other_operand(next, div->output());
    if (last_axis_param(gamma, channels, x->shape.size()) && next->output()->shape == x->shape) {
      m->gamma = gamma;
      m->swallowed.push_back(m->tail);
      m->tail = next;
      next = sole_consumer(g, next->output());
    }
  }
  if (next && next->op == OpKind::kAdd) {
    Value* beta = other_operand(next, m->tail->output());
    if (last_axis_param(beta, channels, x->shape.size()) && next->output()->shape == x->shape) {
      m->beta = beta;
      m->swallowed.push_back(m->tail);
      m->tail = next;
    }
  }
  return true;
}

// The parameter as a [C] constant (a reshaped view: the tensor itself is never modified).
Value* as_vector(Graph& g, Value* p, int64_t channels, const std::string& base) {
  if (p->shape == Shape{channels}) return p;
  return g.add_constant(g.unique_name(base), p->constant.reshaped({channels}));
}

}  // namespace

Result<bool> fuse_layernorm(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* n : sweep.nodes()) {
    if (sweep.removed(n)) continue;
    Match m;
    if (!match(graph, n, &m)) continue;
    const int64_t channels = m.x->shape.back();
    Value* gamma = m.gamma ? as_vector(graph, m.gamma, channels, m.tail->name + "_gamma")
                           : graph.add_constant(graph.unique_name(m.tail->name + "_gamma"),
                                                Tensor::from_floats({channels}, std::vector<float>(channels, 1.f)));
    Node* tail = m.tail;
    tail->op = OpKind::kLayerNorm;
    tail->inputs = {m.x, gamma};
    if (m.beta) tail->inputs.push_back(as_vector(graph, m.beta, channels, tail->name + "_beta"));
    tail->attrs = LayerNormAttrs{-1, m.eps};
    for (Node* s : m.swallowed) sweep.remove(graph, s);
    changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

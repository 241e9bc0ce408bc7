// Removes nodes that do not change their input: Identity, Reshape/Squeeze/Unsqueeze to the same static shape,
// Transpose with the identity permutation, Cast to the same type, x*1, x/1, x+0, x-0 (constant scalar, no
// broadcasting). Chains of Reshape/Squeeze/Unsqueeze on static shapes collapse into one Reshape.
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

bool is_view(OpKind op) {
  return op == OpKind::kReshape || op == OpKind::kSqueeze || op == OpKind::kUnsqueeze || op == OpKind::kIdentity;
}

// The input `n` merely forwards, or null.
Value* forwarded_input(const Node* n) {
  Value* x = n->input(0);
  const Value* y = n->output();
  if (!x) return nullptr;
  switch (n->op) {
    case OpKind::kIdentity:
      return x;
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return is_resolved(x->shape) && x->shape == y->shape && n->inputs.size() == 1 ? x : nullptr;
    case OpKind::kTranspose: {
      const auto& perm = n->attr<TransposeAttrs>().perm;
      if (perm.empty()) return x->shape.size() <= 1 ? x : nullptr;
      for (size_t i = 0; i < perm.size(); ++i) {
        if (perm[i] != static_cast<int64_t>(i)) return nullptr;
      }
      return x;
    }
    case OpKind::kCast:
      return n->attr<CastAttrs>().to == x->dtype ? x : nullptr;
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kAdd:
    case OpKind::kSub: {
      const float neutral = (n->op == OpKind::kMul || n->op == OpKind::kDiv) ? 1.f : 0.f;
      if (pass_util::scalar_near(n->input(1), neutral, 0.f) && !n->input(0)->is_constant() &&
          n->input(0)->shape == y->shape && n->input(0)->dtype == y->dtype) {
        return n->input(0);
      }
      if ((n->op == OpKind::kMul || n->op == OpKind::kAdd) && pass_util::scalar_near(n->input(0), neutral, 0.f) &&
          !n->input(1)->is_constant() && n->input(1)->shape == y->shape && n->input(1)->dtype == y->dtype) {
        return n->input(1);
      }
      return nullptr;
    }
    default:
      return nullptr;
  }
}

// Makes readers of n's output read `x` instead and removes n. A graph output keeps its name: then x's
// producer is made to write the output directly, when x is an intermediate nothing else reads.
bool bypass(Graph& g, pass_util::Sweep& sweep, Node* n, Value* x) {
  Value* y = n->output();
  if (!g.is_graph_output(y)) {
    g.replace_all_uses(y, x);
    sweep.remove(g, n);
    return true;
  }
  Node* p = x->producer;
  if (!p || g.is_graph_output(x) || pass_util::use_count(g, x) != 1) return false;
  sweep.remove(g, n);
  pass_util::redirect_output(p, x, y);
  return true;
}

// Reshape-like n reading the output of another reshape-like node that nothing else reads: one Reshape
// from the first input straight to n's output shape (static, or symbolic: a symbolic Reshape target is an expression).
bool merge_views(Graph& g, pass_util::Sweep& sweep, Node* n) {
  if (!is_view(n->op) || n->inputs.size() != 1 || !is_resolved(n->output()->shape)) return false;
  Value* mid = n->input(0);
  Node* prev = mid->producer;
  if (!prev || !is_view(prev->op) || prev->inputs.size() != 1 || pass_util::sole_consumer(g, mid) != n) return false;
  ReshapeAttrs a;
  a.shape = n->output()->shape;
  // A 0 in a static target means "size 0", not "copy".
  for (int64_t d : a.shape) a.allowzero = a.allowzero || d == 0;
  n->op = OpKind::kReshape;
  n->attrs = a;
  n->inputs = {prev->input(0)};
  sweep.remove(g, prev);
  return true;
}

}  // namespace

Result<bool> eliminate_identities(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* n : sweep.nodes()) {
    if (sweep.removed(n)) continue;
    if (Value* x = forwarded_input(n)) {
      if (bypass(graph, sweep, n, x)) {
        changed = true;
        continue;
      }
    }
    while (merge_views(graph, sweep, n)) {
      changed = true;
    }
    if (!sweep.removed(n)) {
      if (Value* x = forwarded_input(n)) changed |= bypass(graph, sweep, n, x);
    }
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

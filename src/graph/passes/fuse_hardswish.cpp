// HardSwish as exported by Paddle: x * clip(x + 3, 0, 6) / 6 (operands in any order, the /6 as Div(6) or
// Mul(1/6) on either side of the product), and x * HardSigmoid(alpha=1/6, beta=0.5)(x). Both become one
// HardSwish node; every swallowed intermediate must have this pattern as its only reader.
#include <cmath>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using pass_util::other_operand;
using pass_util::scalar_near;
using pass_util::sole_consumer;

constexpr float kTol = 1e-5f;

// `n` divides `v` by 6: Div(v, 6) or Mul(v, 1/6) in either order.
bool divides_by_six(const Node* n, const Value* v) {
  if (n->op == OpKind::kDiv) return n->input(0) == v && scalar_near(n->input(1), 6.f, kTol);
  if (n->op == OpKind::kMul) return scalar_near(other_operand(n, v), 1.f / 6.f, kTol);
  return false;
}

void to_hardswish(Node* tail, Value* x) {
  tail->op = OpKind::kHardSwish;
  tail->inputs = {x};
  tail->attrs = ActAttrs{Activation::hard_swish()};
}

// Anchored at Clip(0, 6); true when the pattern around it was fused.
bool fuse_clip_form(Graph& g, pass_util::Sweep& sweep, Node* clip) {
  const Activation& act = clip->attr<ActAttrs>().act;
  if (std::fabs(act.alpha) > kTol || std::fabs(act.beta - 6.f) > kTol) return false;
  Value* a_out = clip->input(0);
  Node* add = a_out->producer;
  if (!add || add->op != OpKind::kAdd || sole_consumer(g, a_out) != clip) return false;
  Value* x = nullptr;
  for (size_t i = 0; i < 2 && !x; ++i) {
    if (scalar_near(add->input(1 - i), 3.f, kTol) && !add->input(i)->is_constant()) x = add->input(i);
  }
  if (!x || a_out->shape != x->shape || x->dtype != DType::kF32) return false;
  Value* c_out = clip->output();
  Node* m = sole_consumer(g, c_out);
  if (!m) return false;
  Node* tail = nullptr;
  Node* mid = nullptr;
  if (m->op == OpKind::kMul && other_operand(m, c_out) == x) {
    // (x * clip) / 6
    Node* d = sole_consumer(g, m->output());
    if (!d || !divides_by_six(d, m->output())) return false;
    mid = m;
    tail = d;
  } else if (divides_by_six(m, c_out)) {
    // x * (clip / 6)
    Node* p = sole_consumer(g, m->output());
    if (!p || p->op != OpKind::kMul || other_operand(p, m->output()) != x) return false;
    mid = m;
    tail = p;
  } else {
    return false;
  }
  if (tail->output()->shape != x->shape || mid->output()->shape != x->shape) return false;
  to_hardswish(tail, x);
  sweep.remove(g, mid);
  sweep.remove(g, clip);
  sweep.remove(g, add);
  return true;
}

// Anchored at HardSigmoid(1/6, 0.5): x * hardsigmoid(x).
bool fuse_hardsigmoid_form(Graph& g, pass_util::Sweep& sweep, Node* hs) {
  const Activation& act = hs->attr<ActAttrs>().act;
  if (std::fabs(act.alpha - 1.f / 6.f) > kTol || std::fabs(act.beta - 0.5f) > kTol) return false;
  Value* x = hs->input(0);
  Node* m = sole_consumer(g, hs->output());
  if (!m || m->op != OpKind::kMul || other_operand(m, hs->output()) != x) return false;
  if (m->output()->shape != x->shape || x->dtype != DType::kF32) return false;
  to_hardswish(m, x);
  sweep.remove(g, hs);
  return true;
}

}  // namespace

Result<bool> fuse_hardswish(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* n : sweep.nodes()) {
    if (sweep.removed(n)) continue;
    // fuse_clip_form may remove `n` itself: nothing reads it afterwards (the sanitizer build of the unit tests found
    // the second test reading a freed node).
    if (n->op == OpKind::kClip) {
      changed |= fuse_clip_form(graph, sweep, n);
    } else if (n->op == OpKind::kHardSigmoid) {
      changed |= fuse_hardsigmoid_form(graph, sweep, n);
    }
  }
  return changed;
}

}  // namespace steadyocr::graph

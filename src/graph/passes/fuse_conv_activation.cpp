// Conv/ConvTranspose (no activation yet) whose only reader is Relu/HardSwish/HardSigmoid/Sigmoid/Clip:
// the activation becomes the conv's `act` attribute. With a residual input the activation applies after the
// residual add, which is exactly what the consumer computed.
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

Activation* act_slot(Node* n) {
  if (n->op == OpKind::kConv) return &n->attr<ConvAttrs>().act;
  if (n->op == OpKind::kConvTranspose) return &n->attr<ConvTransposeAttrs>().act;
  return nullptr;
}

bool is_activation(OpKind op) {
  return op == OpKind::kRelu || op == OpKind::kHardSwish || op == OpKind::kHardSigmoid || op == OpKind::kSigmoid ||
         op == OpKind::kClip;
}

}  // namespace

Result<bool> fuse_conv_activation(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* conv : sweep.nodes()) {
    if (sweep.removed(conv)) continue;
    Activation* act = act_slot(conv);
    if (!act || act->kind != ActKind::kNone) continue;
    Value* y = conv->output();
    Node* a = pass_util::sole_consumer(graph, y);
    if (!a || !is_activation(a->op) || a->input(0) != y) continue;
    *act = a->attr<ActAttrs>().act;
    Value* out = a->output();
    sweep.remove(graph, a);
    pass_util::redirect_output(conv, y, out);
    changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

// Conv (no activation, no residual) whose only reader is Add(conv, other) with `other` of exactly the conv's
// output shape: `other` becomes the conv's residual input (y = act(conv + b + residual), act none here; a
// following activation is fused afterwards by fuse_conv_activation).
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {

Result<bool> fuse_conv_residual(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* conv : sweep.nodes()) {
    if (sweep.removed(conv) || conv->op != OpKind::kConv) continue;
    if (conv->attr<ConvAttrs>().act.kind != ActKind::kNone || conv->input(3)) continue;
    Value* y = conv->output();
    Node* add = pass_util::sole_consumer(graph, y);
    if (!add || add->op != OpKind::kAdd) continue;
    Value* other = pass_util::other_operand(add, y);
    if (!other || !is_resolved(y->shape)) continue;
    // No broadcasting: the residual kernel reads `other` element for element.
    if (other->shape != y->shape || add->output()->shape != y->shape || other->dtype != y->dtype) continue;
    conv->inputs.resize(4, nullptr);
    conv->inputs[3] = other;
    Value* out = add->output();
    sweep.remove(graph, add);
    pass_util::redirect_output(conv, y, out);
    changed = true;
  }
  if (changed) {
    // `other` may be produced after the conv in the current order.
    RETURN_IF_ERROR(graph.toposort());
    graph.remove_dead();
  }
  return changed;
}

}  // namespace steadyocr::graph

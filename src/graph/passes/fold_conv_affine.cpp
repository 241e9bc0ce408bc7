// Conv -> Mul|Div by a constant (scalar or per output channel)  =>  Conv with scaled weights and bias;
// Conv -> Add|Sub of a constant  =>  Conv with a shifted bias. PP-LCNetV3 exports its "learnable affine"
// blocks this way (Mul(scale) then Add(bias) after every conv). New tensors are computed in double.
#include <cmath>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using pass_util::constant_f32;

bool plain_conv(const Node* n) {
  if (n->op == OpKind::kConv) return n->attr<ConvAttrs>().act.kind == ActKind::kNone && !n->input(3);
  if (n->op == OpKind::kConvTranspose) return n->attr<ConvTransposeAttrs>().act.kind == ActKind::kNone;
  return false;
}

// Tries to absorb the sole consumer of conv's output; true when it did.
bool absorb_one(Graph& graph, pass_util::Sweep& sweep, Node* conv) {
  Value* y = conv->output();
  Node* op = pass_util::sole_consumer(graph, y);
  if (!op || sweep.removed(op)) return false;
  const bool scale_op = op->op == OpKind::kMul || op->op == OpKind::kDiv;
  const bool shift_op = op->op == OpKind::kAdd || op->op == OpKind::kSub;
  if (!scale_op && !shift_op) return false;
  if ((op->op == OpKind::kDiv || op->op == OpKind::kSub) && op->input(0) != y) return false;
  Value* c = pass_util::other_operand(op, y);
  if (!constant_f32(c) || op->output()->shape != y->shape || op->output()->dtype != DType::kF32) return false;
  Value* w = conv->input(1);
  Value* b = conv->input(2);
  if (!constant_f32(w) || (b && !constant_f32(b))) return false;
  const int64_t channels = pass_util::output_channels(*conv, w->shape);
  std::vector<double> k;
  if (channels <= 0 || y->shape.size() != 4 || !pass_util::per_channel(c, channels, &k)) return false;

  Tensor bias = Tensor::empty(DType::kF32, {channels});
  for (int64_t m = 0; m < channels; ++m) {
    const double b0 = b ? static_cast<double>(b->constant.data<float>()[m]) : 0.0;
    double v = b0;
    switch (op->op) {
      case OpKind::kMul:
        v = b0 * k[m];
        break;
      case OpKind::kDiv:
        if (k[m] == 0.0) return false;
        k[m] = 1.0 / k[m];
        v = b0 * k[m];
        break;
      case OpKind::kAdd:
        v = b0 + k[m];
        break;
      default:
        v = b0 - k[m];
        break;
    }
    bias.data<float>()[m] = static_cast<float>(v);
  }
  if (scale_op) {
    conv->inputs[1] = graph.add_constant(graph.unique_name(w->name + "_scaled"),
                                         pass_util::scale_output_channels(*conv, w->constant, k));
  }
  conv->inputs.resize(3);
  conv->inputs[2] = graph.add_constant(graph.unique_name(conv->name + "_bias"), std::move(bias));
  Value* out = op->output();
  sweep.remove(graph, op);
  pass_util::redirect_output(conv, y, out);
  return true;
}

}  // namespace

Result<bool> fold_conv_affine(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* conv : sweep.nodes()) {
    if (sweep.removed(conv) || !plain_conv(conv)) continue;
    while (absorb_one(graph, sweep, conv)) changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

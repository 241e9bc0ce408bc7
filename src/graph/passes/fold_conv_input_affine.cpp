// x -> Mul|Div by a constant (scalar or per channel) -> Conv  =>  Conv with w'[m,c] = w[m,c] * k[c];
// x -> Add|Sub of a constant -> Conv  =>  Conv with b'[m] = b[m] + sum_{c,kh,kw} w[m,c,kh,kw] * k[c].
// Only for convs without padding: with padding, the border taps would see the shift where the original saw
// zeros. PP-LCNetV3 puts such an affine after every activation; half of them feed a pointwise conv.
#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using pass_util::constant_f32;

bool unpadded_conv(const Node* n) {
  if (n->op != OpKind::kConv) return false;
  for (int64_t p : n->attr<ConvAttrs>().pads) {
    if (p != 0) return false;
  }
  return true;
}

// Folds the producer of conv's data input into the conv when it is a per-channel affine op; true when it did.
bool absorb_input(Graph& graph, pass_util::Sweep& sweep, Node* conv) {
  Value* v = conv->input(0);
  Node* op = v->producer;
  if (!op || sweep.removed(op) || pass_util::sole_consumer(graph, v) != conv) return false;
  const bool scale_op = op->op == OpKind::kMul || op->op == OpKind::kDiv;
  const bool shift_op = op->op == OpKind::kAdd || op->op == OpKind::kSub;
  if (!scale_op && !shift_op) return false;
  Value* x = nullptr;
  Value* c = nullptr;
  if (constant_f32(op->input(1)) && !op->input(0)->is_constant()) {
    x = op->input(0);
    c = op->input(1);
  } else if ((op->op == OpKind::kMul || op->op == OpKind::kAdd) && constant_f32(op->input(0)) &&
             !op->input(1)->is_constant()) {
    x = op->input(1);
    c = op->input(0);
  }
  if (!x || x->shape != v->shape || x->dtype != DType::kF32 || x->shape.size() != 4) return false;
  Value* w = conv->input(1);
  Value* b = conv->input(2);
  if (!constant_f32(w) || (b && !constant_f32(b)) || w->shape.size() != 4) return false;
  const int64_t group = conv->attr<ConvAttrs>().group;
  const int64_t out_ch = w->shape[0], ch_per_group = w->shape[1], out_per_group = out_ch / group;
  const int64_t spatial = w->shape[2] * w->shape[3];
  std::vector<double> k;
  if (!pass_util::per_channel(c, ch_per_group * group, &k)) return false;
  for (double& kv : k) {
    if (op->op == OpKind::kDiv) {
      if (kv == 0.0) return false;
      kv = 1.0 / kv;
    } else if (op->op == OpKind::kSub) {
      kv = -kv;
    }
  }
  const float* pw = w->constant.data<float>();
  auto channel_of = [&](int64_t m, int64_t cl) { return (m / out_per_group) * ch_per_group + cl; };
  if (scale_op) {
    Tensor nw = Tensor::empty(DType::kF32, w->shape);
    float* dst = nw.data<float>();
    for (int64_t m = 0; m < out_ch; ++m) {
      for (int64_t cl = 0; cl < ch_per_group; ++cl) {
        const double s = k[static_cast<size_t>(channel_of(m, cl))];
        const int64_t base = (m * ch_per_group + cl) * spatial;
        for (int64_t i = 0; i < spatial; ++i) dst[base + i] = static_cast<float>(static_cast<double>(pw[base + i]) * s);
      }
    }
    conv->inputs[1] = graph.add_constant(graph.unique_name(w->name + "_inscaled"), std::move(nw));
  } else {
    Tensor nb = Tensor::empty(DType::kF32, {out_ch});
    for (int64_t m = 0; m < out_ch; ++m) {
      double acc = b ? static_cast<double>(b->constant.data<float>()[m]) : 0.0;
      for (int64_t cl = 0; cl < ch_per_group; ++cl) {
        const double s = k[static_cast<size_t>(channel_of(m, cl))];
        const int64_t base = (m * ch_per_group + cl) * spatial;
        for (int64_t i = 0; i < spatial; ++i) acc += static_cast<double>(pw[base + i]) * s;
      }
      nb.data<float>()[m] = static_cast<float>(acc);
    }
    if (conv->inputs.size() < 3) conv->inputs.resize(3, nullptr);
    conv->inputs[2] = graph.add_constant(graph.unique_name(conv->name + "_inbias"), std::move(nb));
  }
  conv->inputs[0] = x;
  sweep.remove(graph, op);
  return true;
}

}  // namespace

Result<bool> fold_conv_input_affine(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* conv : sweep.nodes()) {
    if (sweep.removed(conv) || !unpadded_conv(conv)) continue;
    while (absorb_input(graph, sweep, conv)) changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

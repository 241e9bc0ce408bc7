// Conv(+b) -> BatchNorm  =>  Conv with w' = w * s, b' = (b - mean) * s + beta, s = gamma / sqrt(var + eps),
// computed in double so the folded model stays within rounding of the unfolded one.
#include <cmath>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using pass_util::constant_f32;

bool plain_conv(const Node* n) {
  if (!n) return false;
  if (n->op == OpKind::kConv) return n->attr<ConvAttrs>().act.kind == ActKind::kNone && !n->input(3);
  if (n->op == OpKind::kConvTranspose) return n->attr<ConvTransposeAttrs>().act.kind == ActKind::kNone;
  return false;
}

}  // namespace

Result<bool> fold_batchnorm(Graph& graph) {
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* bn : sweep.nodes()) {
    if (sweep.removed(bn) || bn->op != OpKind::kBatchNorm) continue;
    Value* x = bn->input(0);
    Node* conv = x->producer;
    if (!plain_conv(conv) || pass_util::sole_consumer(graph, x) != bn) continue;
    Value* w = conv->input(1);
    Value* b = conv->input(2);
    if (!constant_f32(w) || (b && !constant_f32(b))) continue;
    const int64_t channels = pass_util::output_channels(*conv, w->shape);
    bool params_ok = channels > 0;
    for (size_t i = 1; i < 5 && params_ok; ++i) {
      params_ok = constant_f32(bn->input(i)) && bn->input(i)->constant.numel() == channels;
    }
    if (!params_ok) continue;

    const float* gamma = bn->input(1)->constant.data<float>();
    const float* beta = bn->input(2)->constant.data<float>();
    const float* mean = bn->input(3)->constant.data<float>();
    const float* var = bn->input(4)->constant.data<float>();
    const double eps = bn->attr<BatchNormAttrs>().epsilon;
    bool finite = true;
    for (int64_t c = 0; c < channels; ++c) finite = finite && static_cast<double>(var[c]) + eps > 0.0;
    if (!finite) continue;  // a corrupt variance: leave the BatchNorm to show it at run time
    std::vector<double> scale(static_cast<size_t>(channels));
    Tensor bias = Tensor::empty(DType::kF32, {channels});
    for (int64_t c = 0; c < channels; ++c) {
      scale[c] = static_cast<double>(gamma[c]) / std::sqrt(static_cast<double>(var[c]) + eps);
      const double b0 = b ? static_cast<double>(b->constant.data<float>()[c]) : 0.0;
      bias.data<float>()[c] = static_cast<float>((b0 - mean[c]) * scale[c] + beta[c]);
    }
    // New tensors: the old ones may be shared with a clone of this graph.
    Value* new_w = graph.add_constant(graph.unique_name(w->name + "_bn"),
                                      pass_util::scale_output_channels(*conv, w->constant, scale));
    Value* new_b = graph.add_constant(graph.unique_name(bn->name + "_bias"), std::move(bias));
    conv->inputs.resize(3);
    conv->inputs[1] = new_w;
    conv->inputs[2] = new_b;
    Value* y = bn->output();
    sweep.remove(graph, bn);
    pass_util::redirect_output(conv, x, y);
    changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

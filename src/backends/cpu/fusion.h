// Internal to the oneDNN CPU backend: epilogues fused into oneDNN convolutions, deconvolutions and matmuls
// as post-ops. The graph passes fuse one activation into a Conv; the exported PP-OCR models also put
// scalar affines (PPLCNetV3's learnable affine blocks), per-channel arithmetic, BatchNorm after a
// deconvolution, swish (x*sigmoid(x)) and residual adds after them, which oneDNN applies in registers.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backends/cpu/plan.h"
#include "graph/ir.h"

namespace steadyocr::cpu {

struct PostOp {
  enum Kind { kEltwise, kBinary, kSum } kind = kEltwise;
  dnnl::algorithm alg = dnnl::algorithm::undef;
  float alpha = 0.f, beta = 0.f;
  Tensor channel;  // kBinary: one value per channel, shape {C}
  std::string label;
};

struct Epilogue {
  std::vector<PostOp> ops;
  std::set<const graph::Node*> absorbed;   // nodes the fused step replaces
  const graph::Value* out = nullptr;       // the value the fused step produces
  const graph::Value* residual = nullptr;  // added by the kSum post-op (at most one)
  std::string describe() const;            // "+hardswish+linear(0.47,-0.01)"
};

// Appends the post-ops of an IR activation (HardSigmoid becomes linear then clip: oneDNN 2.6 has none).
void add_activation(Epilogue& e, const graph::Activation& act);
// Grows `e` with the nodes after e.out that oneDNN can apply as post-ops on an output whose channels
// are on `channel_axis`. `allow_residual`: one Add of another same-shape tensor may become a sum post-op.
void grow_epilogue(PlanBuilder& b, Epilogue& e, int channel_axis, bool allow_residual);
// The oneDNN post-ops for `e` on an output of rank `rank`; binary post-op operands are added to `args`.
Result<dnnl::post_ops> make_post_ops(PlanBuilder& b, const Epilogue& e, int rank, int channel_axis, DnnlArgs& args);

// Where a fused step writes: a new buffer in `dst_md`; with a residual (sum post-op), the residual's own
// buffer when nothing reads it afterwards (in place), else a copy of it made just before the step.
// `inputs` are the step's other input buffers (never overwritten). Adds what the step reads to `reads`.
Result<int> fused_output(PlanBuilder& b, const Epilogue& e, const graph::Node& n, const Md& dst_md,
                         const std::vector<int>& inputs, std::vector<int>* reads);

// Binds a convolution-like primitive chosen for `used`: source in the layout it wants, weights reordered once into
// its layout (cached), the optional bias and the fused destination. Returns {source, destination} buffers; adds
// what the step reads to `reads`.
struct WeightedBinding {
  int src = -1, dst = -1;
  std::vector<int> reads;
};
Result<WeightedBinding> bind_weighted(PlanBuilder& b, const Epilogue& used, const graph::Node& n, const graph::Value* x,
                                      const graph::Value* w, const Md& w_plain, const graph::Value* bias,
                                      const Md& bias_md, const Md& src_md, const Md& weights_md, const Md& dst_md,
                                      DnnlArgs& args);

// A constant's role against an output of shape `out` whose channels are on `channel_axis`.
enum class ConstRole { kScalar, kPerChannel, kOther };
ConstRole classify_constant(const Tensor& c, const Shape& out, int channel_axis);

}  // namespace steadyocr::cpu

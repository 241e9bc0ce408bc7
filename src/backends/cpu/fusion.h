// Internal to the oneDNN CPU backend: epilogues fused into oneDNN convolutions, deconvolutions and matmuls
// as post-ops. What is fused is the IR's decision: a Conv's activation and residual attributes, and the epilogue
// stages graph/passes/fuse_epilogue.cpp sets (scalar affines, per-channel arithmetic, BatchNorm after a
// deconvolution, swish, residual adds); this file only turns them into oneDNN post-ops.
#pragma once

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
  const graph::Value* out = nullptr;       // the value the fused step produces
  const graph::Value* residual = nullptr;  // added by the kSum post-op (at most one)
  std::string describe() const;            // "+hardswish+linear(0.47,-0.01)"
};

// Appends the post-ops of an IR activation (HardSigmoid becomes linear then clip: oneDNN 2.6 has none).
void add_activation(Epilogue& e, const graph::Activation& act);
// Appends the post-ops of `n`'s epilogue stages (Node::epilogue) to `e`; e.out becomes n's output and e.residual the
// residual stage's tensor.
Status add_epilogue(Epilogue& e, const graph::Node& n);
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

}  // namespace steadyocr::cpu

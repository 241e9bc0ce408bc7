#include "backends/cpu/fusion.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {
namespace {

using dnnl::algorithm;
using graph::Node;
using graph::OpKind;
using graph::Value;

PostOp eltwise(algorithm alg, float alpha, float beta, std::string label) {
  PostOp p;
  p.kind = PostOp::kEltwise;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  p.label = std::move(label);
  return p;
}

void push_binary(Epilogue& e, algorithm alg, Tensor channel, const char* name) {
  PostOp p;
  p.kind = PostOp::kBinary;
  p.alg = alg;
  p.channel = std::move(channel);
  p.label = fmt::format("{}[{}]", name, p.channel.numel());
  e.ops.push_back(std::move(p));
}

bool is_linear(const PostOp& p) {
  return p.kind == PostOp::kEltwise && p.alg == algorithm::eltwise_linear;
}

// y = alpha*x + beta, merged into a preceding linear post-op. A chain holds one eltwise_linear at most: oneDNN 2.6's
// matmul and convolution computed chains with two of them wrongly (linear, clip, linear gave errors of 1.3; a
// bench/onednn_post_ops shows it, the op case Pattern_pointwise_words_two_steps found it). A second one goes as
// binary multiply and add by one-value operands.
void push_linear(Epilogue& e, float alpha, float beta) {
  if (!e.ops.empty() && is_linear(e.ops.back())) {
    PostOp& p = e.ops.back();
    p.beta = alpha * p.beta + beta;
    p.alpha = alpha * p.alpha;
    p.label = fmt::format("linear({:.4g},{:.4g})", p.alpha, p.beta);
    return;
  }
  if (std::any_of(e.ops.begin(), e.ops.end(), is_linear)) {
    if (alpha != 1.f) push_binary(e, algorithm::binary_mul, Tensor::from_floats({1}, {alpha}), "mul");
    if (beta != 0.f) push_binary(e, algorithm::binary_add, Tensor::from_floats({1}, {beta}), "add");
    return;
  }
  e.ops.push_back(eltwise(algorithm::eltwise_linear, alpha, beta, fmt::format("linear({:.4g},{:.4g})", alpha, beta)));
}

// Values of a constant as a {C} f32 tensor (per-channel constants are 1 everywhere but the channel axis).
Tensor channel_values(const Tensor& c) {
  std::vector<float> v = c.to_floats();
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_floats({n}, v);
}

using Stage = graph::EpilogueStage;
using Role = graph::EpilogueStage::Role;

const Value* operand(const Node& n, const Stage::Operand& o) {
  return o.kind == Stage::Operand::Kind::kInput && o.index >= 0 ? n.input(static_cast<size_t>(o.index)) : nullptr;
}

// The stage's constant operand (arithmetic stages read the running value and one constant).
const Value* constant_operand(const Node& n, const Stage& st) {
  for (const Stage::Operand& o : st.operands) {
    const Value* v = operand(n, o);
    if (v && v->is_constant()) return v;
  }
  return nullptr;
}

// The activation an activation stage computes: its attributes, Clip's bounds overridden by constant min/max
// operands (opset 11+), HardSigmoid's defaults when the attributes carry none.
graph::Activation stage_activation(const Node& n, const Stage& st) {
  const graph::Activation* at =
      std::holds_alternative<graph::ActAttrs>(st.attrs) ? &std::get<graph::ActAttrs>(st.attrs).act : nullptr;
  switch (st.op) {
    case OpKind::kRelu:
      return graph::Activation::relu();
    case OpKind::kSigmoid:
      return graph::Activation::sigmoid();
    case OpKind::kHardSwish:
      return graph::Activation::hard_swish();
    case OpKind::kHardSigmoid:
      return at && at->kind == graph::ActKind::kHardSigmoid ? *at : graph::Activation::hard_sigmoid(0.2f, 0.5f);
    case OpKind::kClip: {
      float lo = -INFINITY, hi = INFINITY;
      if (at && at->kind == graph::ActKind::kClip) {
        lo = at->alpha;
        hi = at->beta;
      }
      for (size_t i = 1; i <= 2 && i < st.operands.size(); ++i) {
        const Value* b = operand(n, st.operands[i]);
        if (b) (i == 1 ? lo : hi) = b->constant.to_floats()[0];
      }
      return graph::Activation::clip(lo, hi);
    }
    default:
      return {};
  }
}

// Activations, Sqrt, BatchNorm (constant parameters, channels on axis 1).
Status add_pointwise(Epilogue& e, const Node& n, const Stage& st) {
  if (st.op == OpKind::kSqrt) {
    e.ops.push_back(eltwise(algorithm::eltwise_sqrt, 0.f, 0.f, "sqrt"));
    return Status::ok();
  }
  if (st.op != OpKind::kBatchNorm) {
    const graph::Activation a = stage_activation(n, st);
    if (a.kind == graph::ActKind::kNone) return unsupported(fmt::format("epilogue stage '{}'", st.node));
    add_activation(e, a);
    return Status::ok();
  }
  const Value* p[4];
  for (size_t i = 0; i < 4; ++i) {
    p[i] = i + 1 < st.operands.size() ? operand(n, st.operands[i + 1]) : nullptr;
    if (!p[i] || !p[i]->is_constant()) return unsupported(fmt::format("BatchNorm stage '{}'", st.node));
  }
  std::vector<float> g = p[0]->constant.to_floats(), bb = p[1]->constant.to_floats(), m = p[2]->constant.to_floats(),
                     var = p[3]->constant.to_floats();
  const int64_t ch = static_cast<int64_t>(g.size());
  const float eps = std::get<graph::BatchNormAttrs>(st.attrs).epsilon;
  std::vector<float> scale(ch), shift(ch);
  for (int64_t i = 0; i < ch; ++i) {
    scale[i] = g[i] / std::sqrt(var[i] + eps);
    shift[i] = bb[i] - m[i] * scale[i];
  }
  push_binary(e, algorithm::binary_mul, Tensor::from_floats({ch}, scale), "bn_scale");
  push_binary(e, algorithm::binary_add, Tensor::from_floats({ch}, shift), "bn_shift");
  return Status::ok();
}

// Arithmetic with a constant scalar: linear, square or pow post-ops; `vi` is the running value's side.
Status add_scalar(Epilogue& e, const Stage& st, float k, int vi) {
  switch (st.op) {
    case OpKind::kAdd:
      push_linear(e, 1.f, k);
      return Status::ok();
    case OpKind::kSub:
      vi == 0 ? push_linear(e, 1.f, -k) : push_linear(e, -1.f, k);
      return Status::ok();
    case OpKind::kMul:
      push_linear(e, k, 0.f);
      return Status::ok();
    case OpKind::kDiv:
      push_linear(e, 1.f / k, 0.f);
      return Status::ok();
    case OpKind::kPow:
      if (k == 2.f) {
        e.ops.push_back(eltwise(algorithm::eltwise_square, 0.f, 0.f, "square"));
      } else if (k != 1.f) {
        e.ops.push_back(eltwise(algorithm::eltwise_pow, 1.f, k, fmt::format("pow({:.4g})", k)));
      }
      return Status::ok();
    default:
      return unsupported(fmt::format("scalar stage '{}'", st.node));
  }
}

Status add_per_channel(Epilogue& e, const Stage& st, const Tensor& c) {
  Tensor ch = channel_values(c);
  switch (st.op) {
    case OpKind::kAdd:
      push_binary(e, algorithm::binary_add, ch, "add");
      return Status::ok();
    case OpKind::kMul:
      push_binary(e, algorithm::binary_mul, ch, "mul");
      return Status::ok();
    case OpKind::kSub:
      push_binary(e, algorithm::binary_sub, ch, "sub");
      return Status::ok();
    case OpKind::kDiv:
      push_binary(e, algorithm::binary_div, ch, "div");
      return Status::ok();
    default:
      return unsupported(fmt::format("per-channel stage '{}'", st.node));
  }
}

}  // namespace

std::string Epilogue::describe() const {
  std::string s;
  for (const auto& p : ops) s += "+" + p.label;
  return s;
}

void add_activation(Epilogue& e, const graph::Activation& act) {
  switch (act.kind) {
    case graph::ActKind::kNone:
      return;
    case graph::ActKind::kRelu:
      e.ops.push_back(eltwise(algorithm::eltwise_relu, 0.f, 0.f, "relu"));
      return;
    case graph::ActKind::kSigmoid:
      e.ops.push_back(eltwise(algorithm::eltwise_logistic, 0.f, 0.f, "sigmoid"));
      return;
    case graph::ActKind::kHardSwish:
      e.ops.push_back(eltwise(algorithm::eltwise_hardswish, 0.f, 0.f, "hardswish"));
      return;
    case graph::ActKind::kHardSigmoid:
      push_linear(e, act.alpha, act.beta);
      e.ops.push_back(eltwise(algorithm::eltwise_clip, 0.f, 1.f, "clip(0,1)"));
      return;
    case graph::ActKind::kClip:
      e.ops.push_back(eltwise(algorithm::eltwise_clip, act.alpha, act.beta,
                              fmt::format("clip({:.4g},{:.4g})", act.alpha, act.beta)));
      return;
  }
}

Status add_epilogue(Epilogue& e, const graph::Node& n) {
  float swish_k = 1.f;
  for (const Stage& st : n.epilogue.stages) {
    switch (st.role) {
      case Role::kPointwise:
        RETURN_IF_ERROR(add_pointwise(e, n, st));
        break;
      case Role::kScalar:
      case Role::kPerChannel: {
        const Value* c = constant_operand(n, st);
        if (!c) return unsupported(fmt::format("epilogue stage '{}' has no constant operand", st.node));
        const int vi = st.operands[0].kind == Stage::Operand::Kind::kInput ? 1 : 0;
        if (st.role == Role::kScalar) {
          RETURN_IF_ERROR(add_scalar(e, st, c->constant.to_floats()[0], vi));
        } else {
          RETURN_IF_ERROR(add_per_channel(e, st, c->constant));
        }
        break;
      }
      case Role::kResidual: {
        PostOp p;
        p.kind = PostOp::kSum;
        p.label = "sum";
        e.ops.push_back(p);
        for (const Stage::Operand& o : st.operands) {
          if (const Value* r = operand(n, o)) e.residual = r;
        }
        break;
      }
      case Role::kSwishScale: {
        const Value* c = constant_operand(n, st);
        if (!c) return unsupported(fmt::format("epilogue stage '{}' has no constant operand", st.node));
        swish_k = c->constant.to_floats()[0];
        break;
      }
      case Role::kSwishGate:
        break;
      case Role::kSwishProduct:
        e.ops.push_back(eltwise(algorithm::eltwise_swish, swish_k, 0.f,
                                swish_k == 1.f ? "swish" : fmt::format("swish({:.4g})", swish_k)));
        swish_k = 1.f;
        break;
    }
  }
  e.out = n.output();
  return Status::ok();
}

Result<dnnl::post_ops> make_post_ops(PlanBuilder& b, const Epilogue& e, int rank, int channel_axis, DnnlArgs& args) {
  dnnl::post_ops po;
  RETURN_IF_ERROR(dnnl_try("building post-ops " + e.describe(), [&] {
    int idx = 0;
    for (const PostOp& p : e.ops) {
      switch (p.kind) {
        case PostOp::kEltwise:
          po.append_eltwise(1.f, p.alg, p.alpha, p.beta);
          break;
        case PostOp::kSum:
          po.append_sum(1.f);
          break;
        case PostOp::kBinary: {
          Dims d(rank, 1);
          d[channel_axis] = p.channel.numel();
          Md md(d, Dt::f32, plain_tag(rank));
          po.append_binary(p.alg, md);
          const Tensor& kept = b.keep(p.channel);
          args.add_memory(DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1,
                          dnnl::memory(md, cpu_engine(), const_cast<void*>(kept.raw())));
          break;
        }
      }
      ++idx;
    }
  }));
  return po;
}

Result<int> fused_output(PlanBuilder& b, const Epilogue& e, const graph::Node& n, const Md& dst_md,
                         const std::vector<int>& inputs, std::vector<int>* reads) {
  if (!e.residual) return b.new_buffer(DType::kF32, e.out->shape, dst_md, e.out->name);
  ASSIGN_OR_RETURN(int r, b.in_layout(e.residual, dst_md));
  const std::set<const graph::Node*> current{&n};
  bool shared = false;
  for (int in : inputs) shared = shared || b.root_of(in) == b.root_of(r);
  if (!shared && b.dies_with(r, current)) {
    reads->push_back(r);
    return r;
  }
  int out = b.new_buffer(DType::kF32, e.out->shape, dst_md, e.out->name);
  RETURN_IF_ERROR(b.add_reorder(r, out, &n));
  reads->push_back(out);
  return out;
}

Result<WeightedBinding> bind_weighted(PlanBuilder& b, const Epilogue& used, const graph::Node& n, const graph::Value* x,
                                      const graph::Value* w, const Md& w_plain, const graph::Value* bias,
                                      const Md& bias_md, const Md& src_md, const Md& weights_md, const Md& dst_md,
                                      DnnlArgs& args) {
  WeightedBinding out;
  ASSIGN_OR_RETURN(out.src, b.in_layout(x, src_md));
  ASSIGN_OR_RETURN(dnnl::memory wm, b.weights().get(w->constant, w_plain, weights_md));
  args.add_memory(DNNL_ARG_WEIGHTS, wm);
  if (bias) {
    const Tensor& bt = b.keep(bias->constant);
    args.add_memory(DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), const_cast<void*>(bt.raw())));
  }
  out.reads = {out.src};
  ASSIGN_OR_RETURN(out.dst, fused_output(b, used, n, dst_md, {out.src}, &out.reads));
  args.add(DNNL_ARG_SRC, out.src, src_md);
  args.add(DNNL_ARG_DST, out.dst, dst_md);
  return out;
}

}  // namespace steadyocr::cpu

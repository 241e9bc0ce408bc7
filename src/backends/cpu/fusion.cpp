#include "backends/cpu/fusion.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

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

// y = alpha*x + beta, merged into a preceding linear post-op.
void push_linear(Epilogue& e, float alpha, float beta) {
  if (!e.ops.empty() && e.ops.back().kind == PostOp::kEltwise && e.ops.back().alg == algorithm::eltwise_linear) {
    PostOp& p = e.ops.back();
    p.beta = alpha * p.beta + beta;
    p.alpha = alpha * p.alpha;
    p.label = fmt::format("linear({:.4g},{:.4g})", p.alpha, p.beta);
    return;
  }
  e.ops.push_back(eltwise(algorithm::eltwise_linear, alpha, beta, fmt::format("linear({:.4g},{:.4g})", alpha, beta)));
}

void push_binary(Epilogue& e, algorithm alg, Tensor channel, const char* name) {
  PostOp p;
  p.kind = PostOp::kBinary;
  p.alg = alg;
  p.channel = std::move(channel);
  p.label = fmt::format("{}[{}]", name, p.channel.numel());
  e.ops.push_back(std::move(p));
}

// Values of a constant as a {C} f32 tensor (per-channel constants are 1 everywhere but the channel axis).
Tensor channel_values(const Tensor& c) {
  std::vector<float> v = c.to_floats();
  int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_floats({n}, v);
}

bool scalar_value(const Value* v, float* out) {
  if (!v || !v->is_constant() || v->constant.numel() != 1) return false;
  *out = v->constant.to_floats()[0];
  return true;
}

// Bounds of a Clip node: attributes, overridden by constant min/max inputs (opset 11+).
bool clip_bounds(const Node& n, float* lo, float* hi) {
  *lo = -INFINITY;
  *hi = INFINITY;
  if (std::holds_alternative<graph::ActAttrs>(n.attrs)) {
    const auto& a = n.attr<graph::ActAttrs>().act;
    if (a.kind == graph::ActKind::kClip) {
      *lo = a.alpha;
      *hi = a.beta;
    }
  }
  for (size_t i = 1; i <= 2; ++i) {
    const Value* in = n.input(i);
    if (!in) continue;
    float v;
    if (!scalar_value(in, &v)) return false;
    (i == 1 ? *lo : *hi) = v;
  }
  return true;
}

graph::Activation node_activation(const Node& n) {
  switch (n.op) {
    case OpKind::kRelu:
      return graph::Activation::relu();
    case OpKind::kSigmoid:
      return graph::Activation::sigmoid();
    case OpKind::kHardSwish:
      return graph::Activation::hard_swish();
    case OpKind::kHardSigmoid: {
      graph::Activation a = graph::Activation::hard_sigmoid(0.2f, 0.5f);
      if (std::holds_alternative<graph::ActAttrs>(n.attrs)) {
        const auto& at = n.attr<graph::ActAttrs>().act;
        if (at.kind == graph::ActKind::kHardSigmoid) a = at;
      }
      return a;
    }
    case OpKind::kClip: {
      float lo, hi;
      if (!clip_bounds(n, &lo, &hi)) return {};
      return graph::Activation::clip(lo, hi);
    }
    default:
      return {};
  }
}

bool same_shape_f32(const Value* a, const Value* b) {
  return a && b && a->dtype == DType::kF32 && b->dtype == DType::kF32 && a->shape == b->shape;
}

// x*sigmoid(k*x) written as Mul(x, Sigmoid(x)) or Mul(x, Sigmoid(Mul(x, k))).
bool try_swish(PlanBuilder& b, Epilogue& e, const Value* v) {
  const auto& cons = b.consumers(v);
  if (cons.size() != 2) return false;
  for (int first = 0; first < 2; ++first) {
    const Node* pre = cons[first];
    const Node* mul = cons[1 - first];
    if (mul->op != OpKind::kMul || pre->outputs.size() != 1) continue;
    float k = 1.f;
    const Node* sig = pre;
    if (pre->op == OpKind::kMul) {
      const Value* other = pre->input(0) == v ? pre->input(1) : pre->input(0);
      if (!scalar_value(other, &k) || !same_shape_f32(pre->output(), v)) continue;
      if (b.is_graph_output(pre->output()) || b.consumers(pre->output()).size() != 1) continue;
      sig = b.consumers(pre->output())[0];
    }
    if (sig->op != OpKind::kSigmoid || b.is_graph_output(sig->output())) continue;
    if (b.consumers(sig->output()).size() != 1 || b.consumers(sig->output())[0] != mul) continue;
    const Value *a = mul->input(0), *c = mul->input(1);
    if (!((a == v && c == sig->output()) || (c == v && a == sig->output()))) continue;
    if (!same_shape_f32(mul->output(), v)) continue;
    e.ops.push_back(eltwise(algorithm::eltwise_swish, k, 0.f, k == 1.f ? "swish" : fmt::format("swish({:.4g})", k)));
    if (pre != sig) e.absorbed.insert(pre);
    e.absorbed.insert(sig);
    e.absorbed.insert(mul);
    e.out = mul->output();
    return true;
  }
  return false;
}

// One node after `v`; false when it cannot be a post-op.
bool grow_one(PlanBuilder& b, Epilogue& e, const Node& c, const Value* v, int ca, bool allow_residual) {
  if (c.outputs.size() != 1 || !same_shape_f32(c.output(), v)) return false;
  switch (c.op) {
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kClip: {
      if (c.input(0) != v) return false;
      graph::Activation a = node_activation(c);
      if (a.kind == graph::ActKind::kNone) return false;
      add_activation(e, a);
      return true;
    }
    case OpKind::kSqrt:
      e.ops.push_back(eltwise(algorithm::eltwise_sqrt, 0.f, 0.f, "sqrt"));
      return true;
    case OpKind::kBatchNorm: {
      if (ca != 1 || c.input(0) != v) return false;
      for (size_t i = 1; i <= 4; ++i) {
        if (!c.input(i) || !c.input(i)->is_constant()) return false;
      }
      std::vector<float> g = c.input(1)->constant.to_floats(), bb = c.input(2)->constant.to_floats(),
                         m = c.input(3)->constant.to_floats(), var = c.input(4)->constant.to_floats();
      int64_t ch = v->shape[1];
      if (static_cast<int64_t>(g.size()) != ch || bb.size() != g.size() || m.size() != g.size() ||
          var.size() != g.size()) {
        return false;
      }
      float eps = c.attr<graph::BatchNormAttrs>().epsilon;
      std::vector<float> scale(ch), shift(ch);
      for (int64_t i = 0; i < ch; ++i) {
        scale[i] = g[i] / std::sqrt(var[i] + eps);
        shift[i] = bb[i] - m[i] * scale[i];
      }
      push_binary(e, algorithm::binary_mul, Tensor::from_floats({ch}, scale), "bn_scale");
      push_binary(e, algorithm::binary_add, Tensor::from_floats({ch}, shift), "bn_shift");
      return true;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow: {
      if (c.inputs.size() != 2) return false;
      int vi = c.input(0) == v ? 0 : 1;
      const Value* other = c.input(1 - vi);
      if (!other || c.input(vi) != v || other == v) return false;
      if (other->is_constant()) {
        if (other->dtype != DType::kF32) return false;
        ConstRole role = classify_constant(other->constant, v->shape, ca);
        if (role == ConstRole::kScalar) {
          float k = other->constant.to_floats()[0];
          switch (c.op) {
            case OpKind::kAdd:
              push_linear(e, 1.f, k);
              return true;
            case OpKind::kSub:
              vi == 0 ? push_linear(e, 1.f, -k) : push_linear(e, -1.f, k);
              return true;
            case OpKind::kMul:
              push_linear(e, k, 0.f);
              return true;
            case OpKind::kDiv:
              if (vi != 0 || k == 0.f) return false;
              push_linear(e, 1.f / k, 0.f);
              return true;
            case OpKind::kPow:
              if (vi != 0) return false;
              if (k == 1.f) return true;
              if (k == 2.f) {
                e.ops.push_back(eltwise(algorithm::eltwise_square, 0.f, 0.f, "square"));
              } else {
                e.ops.push_back(eltwise(algorithm::eltwise_pow, 1.f, k, fmt::format("pow({:.4g})", k)));
              }
              return true;
            default:
              return false;
          }
        }
        if (role != ConstRole::kPerChannel) return false;
        Tensor ch = channel_values(other->constant);
        switch (c.op) {
          case OpKind::kAdd:
            push_binary(e, algorithm::binary_add, ch, "add");
            return true;
          case OpKind::kMul:
            push_binary(e, algorithm::binary_mul, ch, "mul");
            return true;
          case OpKind::kSub:
            if (vi != 0) return false;
            push_binary(e, algorithm::binary_sub, ch, "sub");
            return true;
          case OpKind::kDiv:
            if (vi != 0) return false;
            push_binary(e, algorithm::binary_div, ch, "div");
            return true;
          default:
            return false;
        }
      }
      // A residual: another tensor of the same shape, computed before this step runs.
      if (c.op != OpKind::kAdd || !allow_residual || e.residual || !same_shape_f32(other, v)) return false;
      if (!b.available(other)) return false;
      PostOp p;
      p.kind = PostOp::kSum;
      p.label = "sum";
      e.ops.push_back(p);
      e.residual = other;
      return true;
    }
    default:
      return false;
  }
}

}  // namespace

std::string Epilogue::describe() const {
  std::string s;
  for (const auto& p : ops) s += "+" + p.label;
  return s;
}

ConstRole classify_constant(const Tensor& c, const Shape& out, int channel_axis) {
  if (c.numel() == 1) return ConstRole::kScalar;
  const Shape& cs = c.shape();
  if (cs.size() > out.size()) return ConstRole::kOther;
  size_t off = out.size() - cs.size();
  bool channel = false;
  for (size_t i = 0; i < cs.size(); ++i) {
    int axis = static_cast<int>(off + i);
    if (cs[i] == 1) continue;
    if (axis != channel_axis || cs[i] != out[axis]) return ConstRole::kOther;
    channel = true;
  }
  return channel ? ConstRole::kPerChannel : ConstRole::kOther;
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

void grow_epilogue(PlanBuilder& b, Epilogue& e, int channel_axis, bool allow_residual) {
  constexpr size_t kMaxPostOps = 12;
  static const bool disabled = [] {
    const char* v = std::getenv("STEADYOCR_CPU_FUSE");
    return v && std::string(v) == "0";
  }();
  if (disabled) return;
  while (e.ops.size() < kMaxPostOps) {
    const Value* v = e.out;
    if (b.is_graph_output(v)) return;
    const auto& cons = b.consumers(v);
    if (cons.size() == 2) {
      if (try_swish(b, e, v)) continue;
      return;
    }
    if (cons.size() != 1) return;
    const Node* c = cons[0];
    if (!grow_one(b, e, *c, v, channel_axis, allow_residual)) return;
    e.absorbed.insert(c);
    e.out = c->output();
  }
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
  std::set<const graph::Node*> current = e.absorbed;
  current.insert(&n);
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

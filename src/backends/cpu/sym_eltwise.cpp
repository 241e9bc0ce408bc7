// The symbolic plan's standalone elementwise ops (what the passes left outside convolution epilogues: the
// squeeze-excite scaling, FPN additions, activations), on our vectorised engine (eltwise_kernels.h) compiled for
// each run's dims (microseconds). A 4-D result stays channels-last when its first computed operand is; constants
// are laid out to match once, at build.
#include <fmt/format.h>

#include <cmath>

#include "backends/cpu/eltwise_kernels.h"
#include "backends/cpu/sym_ops.h"

namespace steadyocr::cpu {
namespace {

using graph::OpKind;

// An operand: a plan buffer, read with the run's shape (physical when `nhwc`), or a constant laid out at build.
struct Operand {
  int buf = -1;
  Tensor constant;  // when buf < 0, in the step's layout
};

// `t` (rank <= 4, broadcast from the right against an NCHW value) as a rank-4 NHWC-ordered constant.
Tensor to_nhwc_constant(const Tensor& t) {
  Shape s = t.shape();
  while (s.size() < 4) s.insert(s.begin(), 1);
  const Shape p = {s[0], s[2], s[3], s[1]};
  Tensor out = Tensor::empty(DType::kF32, p);
  const std::vector<float> v = t.to_floats();
  float* o = out.data<float>();
  for (int64_t n = 0; n < s[0]; ++n)
    for (int64_t c = 0; c < s[1]; ++c)
      for (int64_t h = 0; h < s[2]; ++h)
        for (int64_t w = 0; w < s[3]; ++w)
          o[((n * s[2] + h) * s[3] + w) * s[1] + c] = v[static_cast<size_t>(((n * s[1] + c) * s[2] + h) * s[3] + w)];
  return out;
}

class Elementwise : public SymStep {
 public:
  Elementwise(std::vector<Operand> ops, int out, std::vector<EwStep> steps, std::string label)
      : ops_(std::move(ops)), out_(out), steps_(std::move(steps)), label_(std::move(label)) {}

  Status run(const SymRun& r) const override {
    const Shape dims = r.physical(out_);
    std::vector<std::vector<int64_t>> strides;
    std::vector<const float*> ptrs;
    for (const Operand& o : ops_) {
      const Shape s = o.buf >= 0 ? r.physical(o.buf) : o.constant.shape();
      std::vector<int64_t> st(dims.size(), 0);
      int64_t acc = 1;
      for (int i = static_cast<int>(s.size()) - 1, d = static_cast<int>(dims.size()) - 1; i >= 0; --i, --d) {
        if (d < 0) return internal_error(label_ + ": an operand of higher rank than the result");
        if (s[i] != 1) {
          if (s[i] != dims[d]) {
            return internal_error(
                fmt::format("{}: operand {} does not broadcast to {}", label_, shape_str(s), shape_str(dims)));
          }
          st[static_cast<size_t>(d)] = acc;
        }
        acc *= s[i];
      }
      strides.push_back(std::move(st));
      ptrs.push_back(o.buf >= 0 ? r.f32(o.buf) : o.constant.data<float>());
    }
    const EwProgram p = EwProgram::compile(dims, strides, steps_);
    p.run(ptrs, r.f32(out_));
    return Status::ok();
  }
  std::string describe() const override { return label_; }

 private:
  std::vector<Operand> ops_;
  int out_;
  std::vector<EwStep> steps_;
  std::string label_;
};

Result<EwStep> step_of(const graph::Node& n) {
  EwStep st;
  switch (n.op) {
    case OpKind::kAdd:
      st.op = EwOp::kAdd;
      break;
    case OpKind::kSub:
      st.op = EwOp::kSub;
      break;
    case OpKind::kMul:
      st.op = EwOp::kMul;
      break;
    case OpKind::kDiv:
      st.op = EwOp::kDiv;
      break;
    case OpKind::kPow:
      st.op = EwOp::kPow;
      break;
    case OpKind::kSqrt:
      st.op = EwOp::kSqrt;
      break;
    case OpKind::kRelu:
      st.op = EwOp::kRelu;
      break;
    case OpKind::kSigmoid:
      st.op = EwOp::kSigmoid;
      break;
    case OpKind::kHardSwish:
      st.op = EwOp::kHardSwish;
      break;
    case OpKind::kHardSigmoid: {
      const auto& act = n.attr<graph::ActAttrs>().act;
      st.op = EwOp::kHardSigmoid;
      st.alpha = act.kind == graph::ActKind::kHardSigmoid ? act.alpha : 0.2f;
      st.beta = act.kind == graph::ActKind::kHardSigmoid ? act.beta : 0.5f;
      break;
    }
    case OpKind::kClip: {
      const auto& act = n.attr<graph::ActAttrs>().act;
      st.op = EwOp::kClip;
      st.alpha = act.kind == graph::ActKind::kClip ? act.alpha : -INFINITY;
      st.beta = act.kind == graph::ActKind::kClip ? act.beta : INFINITY;
      for (size_t i = 1; i <= 2; ++i) {
        const graph::Value* b = n.input(i);
        if (!b) continue;
        if (!b->is_constant() || b->constant.numel() != 1) return unsupported("Clip bounds computed at run time");
        (i == 1 ? st.alpha : st.beta) = b->constant.to_floats()[0];
      }
      break;
    }
    default:
      return unsupported(std::string("elementwise ") + graph::op_name(n.op));
  }
  if (ew_is_binary(st.op)) st.operand = 1;
  return st;
}

}  // namespace

Status build_sym_eltwise(SymBuilder& b, const graph::Node& n) {
  ASSIGN_OR_RETURN(EwStep st, step_of(n));
  const size_t arity = ew_is_binary(st.op) ? 2 : 1;
  const graph::Value* y = n.output();
  for (size_t i = 0; i < arity; ++i) {
    if (!n.input(i) || n.input(i)->dtype != DType::kF32) return unsupported("elementwise ops on f32 only");
  }
  if (y->dtype != DType::kF32) return unsupported("elementwise ops on f32 only");
  // Channels-last when the result is 4-D, its first computed operand lives so, and every computed operand is 4-D.
  bool nhwc = y->shape.size() == 4;
  bool seen_nhwc = false;
  for (size_t i = 0; i < arity && nhwc; ++i) {
    const graph::Value* v = n.input(i);
    if (v->is_constant()) continue;
    if (v->shape.size() != 4) {
      nhwc = false;
      break;
    }
    ASSIGN_OR_RETURN(int h, b.home(v));
    if (!seen_nhwc) nhwc = b.buffer(h).layout == Layout::kNhwc;
    seen_nhwc = true;
  }
  if (!seen_nhwc) nhwc = false;  // constants only: the passes fold those
  const Layout layout = nhwc ? Layout::kNhwc : Layout::kPlain;
  std::vector<Operand> ops;
  std::vector<int> reads;
  for (size_t i = 0; i < arity; ++i) {
    const graph::Value* v = n.input(i);
    Operand o;
    if (v->is_constant()) {
      if (v->shape.size() > y->shape.size()) return unsupported("a constant of higher rank than the result");
      o.constant = nhwc ? to_nhwc_constant(v->constant) : v->constant.clone();
      if (o.constant.dtype() != DType::kF32) return unsupported("a non-f32 constant");
    } else {
      ASSIGN_OR_RETURN(o.buf, b.in_layout(v, layout));
      reads.push_back(o.buf);
    }
    ops.push_back(std::move(o));
  }
  const int out = b.new_buffer(y, layout);
  b.add_step(std::make_unique<Elementwise>(std::move(ops), out, std::vector<EwStep>{st},
                                           fmt::format("{} {}", graph::op_name(n.op), nhwc ? "nhwc" : "plain")),
             reads, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

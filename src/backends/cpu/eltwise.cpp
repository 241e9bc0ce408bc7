// Elementwise ops (Add/Sub/Mul/Div/Pow with NumPy broadcasting, activations, Sqrt, BatchNorm) on our own
// vectorised engine. Consecutive elementwise nodes become one chain that touches memory once, and the
// chain runs in the producer's layout (oneDNN's channel-blocked or channels-last) when every operand is
// full-size, per-channel or scalar, so the SE multiply and FPN adds between convolutions need no reorders.
#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

#include "backends/cpu/eltwise_kernels.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {
namespace {

using graph::Node;
using graph::OpKind;
using graph::Value;

constexpr size_t kMaxOperands = 16;

struct Operand {
  const Value* value = nullptr;  // a graph value, or
  Tensor tensor;                 // a tensor made here (BatchNorm scale/shift)
  Shape shape;
};

struct Chain {
  std::vector<Operand> operands;  // operand 0 is loaded first
  std::vector<EwStep> steps;
  std::vector<const Node*> nodes;
  Shape shape;
};

int add_operand(Chain& c, const Value* v) {
  for (size_t i = 0; i < c.operands.size(); ++i) {
    if (c.operands[i].value == v) return static_cast<int>(i);
  }
  Operand o;
  o.value = v;
  o.shape = v->shape;
  c.operands.push_back(std::move(o));
  return static_cast<int>(c.operands.size()) - 1;
}

int add_tensor_operand(Chain& c, Tensor t) {
  Operand o;
  o.shape = t.shape();
  o.tensor = std::move(t);
  c.operands.push_back(std::move(o));
  return static_cast<int>(c.operands.size()) - 1;
}

bool scalar_const(const Value* v, float* out) {
  if (!v || !v->is_constant() || v->dtype != DType::kF32 || v->constant.numel() != 1) return false;
  *out = v->constant.to_floats()[0];
  return true;
}

// Appends node `n` (whose input `cur` is the chain's running value, or null for the first node) to the chain.
Status append_node(PlanBuilder& b, Chain& c, const Node& n, const Value* cur) {
  auto unary = [&](EwOp op, float a = 0.f, float bb = 0.f) {
    if (c.operands.empty()) add_operand(c, n.input(0));
    c.steps.push_back({op, -1, a, bb});
    return Status::ok();
  };
  switch (n.op) {
    case OpKind::kRelu:
      return unary(EwOp::kRelu);
    case OpKind::kSigmoid:
      return unary(EwOp::kSigmoid);
    case OpKind::kHardSwish:
      return unary(EwOp::kHardSwish);
    case OpKind::kSqrt:
      return unary(EwOp::kSqrt);
    case OpKind::kHardSigmoid: {
      graph::Activation a = graph::Activation::hard_sigmoid(0.2f, 0.5f);
      if (std::holds_alternative<graph::ActAttrs>(n.attrs) &&
          n.attr<graph::ActAttrs>().act.kind == graph::ActKind::kHardSigmoid) {
        a = n.attr<graph::ActAttrs>().act;
      }
      return unary(EwOp::kHardSigmoid, a.alpha, a.beta);
    }
    case OpKind::kClip: {
      float lo = -INFINITY, hi = INFINITY;
      if (std::holds_alternative<graph::ActAttrs>(n.attrs) &&
          n.attr<graph::ActAttrs>().act.kind == graph::ActKind::kClip) {
        lo = n.attr<graph::ActAttrs>().act.alpha;
        hi = n.attr<graph::ActAttrs>().act.beta;
      }
      for (size_t i = 1; i <= 2; ++i) {
        if (!n.input(i)) continue;
        float v;
        if (!scalar_const(n.input(i), &v)) return unsupported("Clip bounds must be scalar constants");
        (i == 1 ? lo : hi) = v;
      }
      return unary(EwOp::kClip, lo, hi);
    }
    case OpKind::kBatchNorm: {
      for (size_t i = 1; i <= 4; ++i) {
        if (!n.input(i) || !n.input(i)->is_constant()) return unsupported("BatchNorm parameters must be constants");
      }
      const Value* x = n.input(0);
      if (x->shape.size() < 2) return invalid_argument("BatchNorm input needs a channel axis");
      std::vector<float> g = n.input(1)->constant.to_floats(), bb = n.input(2)->constant.to_floats(),
                         m = n.input(3)->constant.to_floats(), var = n.input(4)->constant.to_floats();
      const int64_t ch = x->shape[1];
      if (static_cast<int64_t>(g.size()) != ch || bb.size() != g.size() || m.size() != g.size() ||
          var.size() != g.size()) {
        return invalid_argument("BatchNorm parameters do not match the channel count");
      }
      float eps =
          std::holds_alternative<graph::BatchNormAttrs>(n.attrs) ? n.attr<graph::BatchNormAttrs>().epsilon : 1e-5f;
      std::vector<float> scale(ch), shift(ch);
      for (int64_t i = 0; i < ch; ++i) {
        scale[i] = g[i] / std::sqrt(var[i] + eps);
        shift[i] = bb[i] - m[i] * scale[i];
      }
      Shape cs(x->shape.size() - 1, 1);
      cs[0] = ch;  // [C, 1, ...] broadcasts on the channel axis
      if (!cur) add_operand(c, x);
      int s = add_tensor_operand(c, Tensor::from_floats(cs, scale));
      int t = add_tensor_operand(c, Tensor::from_floats(cs, shift));
      c.steps.push_back({EwOp::kMul, s});
      c.steps.push_back({EwOp::kAdd, t});
      return Status::ok();
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow: {
      if (n.inputs.size() != 2 || !n.input(0) || !n.input(1)) return invalid_argument("binary op needs two inputs");
      const Value* in0 = n.input(0);
      const Value* in1 = n.input(1);
      const bool int_exponent = n.op == OpKind::kPow && in0->dtype == DType::kF32 && in1->is_constant() &&
                                (in1->dtype == DType::kI64 || in1->dtype == DType::kI32);
      if (in0->dtype != DType::kF32 || (in1->dtype != DType::kF32 && !int_exponent)) {
        return unsupported("arithmetic runs in f32 only (integer Add/Sub/Mul/Div and integer exponents aside)");
      }
      int main = 0;
      if (cur) {
        main = in0 == cur ? 0 : 1;
        if (in0 == cur && in1 == cur) {
          if (n.op == OpKind::kMul) return unary(EwOp::kSquare);
          if (n.op == OpKind::kAdd) return unary(EwOp::kLinear, 2.f, 0.f);
          return unsupported("elementwise op on the same value twice");
        }
      } else {
        // Load the input that already has the output's shape (input 0 when both or neither do).
        main = (in0->shape != n.output()->shape && in1->shape == n.output()->shape) ? 1 : 0;
        add_operand(c, main == 0 ? in0 : in1);
      }
      const Value* other = main == 0 ? in1 : in0;
      const bool swap = main == 1;
      if (other->dtype != DType::kF32) {
        // A constant integer exponent: as f32 values.
        std::vector<float> f = other->constant.to_floats();
        Tensor t = Tensor::from_floats(other->shape, f);
        if (t.numel() == 1 && !swap) {
          const float e = f[0];
          if (e == 2.f) return unary(EwOp::kSquare);
          if (e == 1.f) return Status::ok();
        }
        c.steps.push_back({swap ? EwOp::kRPow : EwOp::kPow, add_tensor_operand(c, std::move(t))});
        return Status::ok();
      }
      float k;
      if (scalar_const(other, &k)) {
        switch (n.op) {
          case OpKind::kAdd:
            return unary(EwOp::kLinear, 1.f, k);
          case OpKind::kMul:
            return unary(EwOp::kLinear, k, 0.f);
          case OpKind::kSub:
            return swap ? unary(EwOp::kLinear, -1.f, k) : unary(EwOp::kLinear, 1.f, -k);
          case OpKind::kPow:
            if (!swap && k == 2.f) return unary(EwOp::kSquare);
            if (!swap && k == 1.f) return Status::ok();
            if (!swap && k == 0.5f) return unary(EwOp::kSqrt);
            break;
          default:
            break;
        }
      }
      int idx = add_operand(c, other);
      EwOp op;
      switch (n.op) {
        case OpKind::kAdd:
          op = EwOp::kAdd;
          break;
        case OpKind::kSub:
          op = swap ? EwOp::kRSub : EwOp::kSub;
          break;
        case OpKind::kMul:
          op = EwOp::kMul;
          break;
        case OpKind::kDiv:
          op = swap ? EwOp::kRDiv : EwOp::kDiv;
          break;
        default:
          op = swap ? EwOp::kRPow : EwOp::kPow;
          break;
      }
      c.steps.push_back({op, idx});
      return Status::ok();
    }
    default:
      return unsupported(fmt::format("{} is not an elementwise op", graph::op_name(n.op)));
  }
}

// Whether a chain step can join: a single-consumer elementwise node of the same output shape whose other
// inputs already exist.
const Node* next_in_chain(PlanBuilder& b, const Chain& c, const Value* cur) {
  static const bool disabled = [] {
    const char* v = std::getenv("STEADYOCR_CPU_FUSE");
    return v && std::string(v) == "0";
  }();
  if (disabled) return nullptr;
  if (b.is_graph_output(cur)) return nullptr;
  const auto& cons = b.consumers(cur);
  if (cons.size() != 1) return nullptr;
  const Node* n = cons[0];
  if (!is_eltwise(n->op) || n->outputs.size() != 1 || n->output()->shape != c.shape ||
      n->output()->dtype != DType::kF32) {
    return nullptr;
  }
  size_t extra = 0;
  for (const Value* in : n->inputs) {
    if (!in || in == cur) continue;
    if (!b.available(in)) return nullptr;
    ++extra;
  }
  if (n->op == OpKind::kBatchNorm) extra = 2;
  if (c.operands.size() + extra > kMaxOperands) return nullptr;
  return n;
}

// Physical dims of a logical shape (rank-4 NCHW for the non-plain layouts) in a layout kind.
std::vector<int64_t> physical_dims(const Shape& s, const LayoutKind& k) {
  if (k.kind == LayoutKind::kChannelsLast) return {s[0], s[2], s[3], s[1]};
  if (k.kind == LayoutKind::kChannelBlocked) return {s[0], (s[1] + k.block - 1) / k.block, s[2], s[3], k.block};
  return std::vector<int64_t>(s.begin(), s.end());
}

// Element strides of an operand of shape `os` (right-aligned) over the output's physical dims.
std::vector<int64_t> operand_strides(const Shape& os, const Shape& out, const LayoutKind& k) {
  const size_t r = out.size();
  Shape full(r, 1);
  for (size_t i = 0; i < os.size(); ++i) full[r - os.size() + i] = os[i];
  std::vector<int64_t> pd = physical_dims(full, k), od = physical_dims(out, k);
  std::vector<int64_t> st(pd.size(), 0);
  int64_t acc = 1;
  for (int i = static_cast<int>(pd.size()) - 1; i >= 0; --i) {
    st[i] = (pd[i] == 1 && od[i] != 1) ? 0 : acc;
    acc *= pd[i];
  }
  if (shape_numel(os) == 1) std::fill(st.begin(), st.end(), 0);
  return st;
}

class EltwiseOp : public CpuOp {
 public:
  EltwiseOp(EwProgram prog, std::vector<int> bufs, int out, std::string label, int64_t pad_lanes_from,
            std::vector<int64_t> phys)
      : prog_(std::move(prog)),
        bufs_(std::move(bufs)),
        out_(out),
        label_(std::move(label)),
        pad_from_(pad_lanes_from),
        phys_(std::move(phys)) {}
  Status run(RunContext& ctx) override {
    std::vector<const float*> ptrs(bufs_.size());
    for (size_t i = 0; i < bufs_.size(); ++i) ptrs[i] = ctx.f32(bufs_[i]);
    float* out = ctx.f32(out_);
    prog_.run(ptrs, out);
    if (pad_from_ > 0) {
      // Channel-blocked output whose chain maps 0 to non-zero: oneDNN expects the padded lanes to be 0.
      const int64_t n = phys_[0], cb = phys_[1], hw = phys_[2] * phys_[3], blk = phys_[4];
      for (int64_t i = 0; i < n; ++i) {
        float* p = out + ((i * cb + cb - 1) * hw) * blk;
        for (int64_t j = 0; j < hw; ++j) {
          for (int64_t l = pad_from_; l < blk; ++l) p[j * blk + l] = 0.f;
        }
      }
    }
    return Status::ok();
  }
  std::string describe() const override { return label_; }

 private:
  EwProgram prog_;
  std::vector<int> bufs_;
  int out_;
  std::string label_;
  int64_t pad_from_;
  std::vector<int64_t> phys_;
};

// Evaluates the chain on all-zero operands (what padded lanes hold).
bool zero_preserving(const std::vector<EwStep>& steps) {
  float x = 0.f;
  for (const auto& s : steps) {
    switch (s.op) {
      case EwOp::kAdd:
      case EwOp::kSub:
      case EwOp::kRSub:
      case EwOp::kMul:
        x = 0.f + x;
        break;
      case EwOp::kRelu:
      case EwOp::kHardSwish:
      case EwOp::kSqrt:
      case EwOp::kSquare:
      case EwOp::kSwish:
        break;
      case EwOp::kLinear:
        x = s.alpha * x + s.beta;
        break;
      case EwOp::kClip:
        x = std::clamp(x, s.alpha, s.beta);
        break;
      default:
        return false;  // sigmoid, hardsigmoid, div, pow: 0 does not stay 0
    }
    if (x != 0.f) return false;
  }
  return true;
}

}  // namespace

Status build_eltwise(PlanBuilder& b, const graph::Node& n) {
  const Value* y = n.output();
  if (y && (y->dtype == DType::kI64 || y->dtype == DType::kI32)) return build_int_binary(b, n);
  if (!y || y->dtype != DType::kF32) return unsupported("elementwise ops run in f32 only");
  Chain c;
  c.shape = y->shape;
  RETURN_IF_ERROR(append_node(b, c, n, nullptr));
  c.nodes.push_back(&n);
  const Value* cur = y;
  while (const Node* next = next_in_chain(b, c, cur)) {
    Chain trial = c;
    if (!append_node(b, trial, *next, cur).is_ok()) break;
    c = std::move(trial);
    c.nodes.push_back(next);
    cur = next->output();
  }
  const Shape& s = c.shape;
  for (const Operand& o : c.operands) {
    if (o.shape.size() > s.size()) return invalid_argument("operand rank exceeds the output's");
    for (size_t i = 0; i < o.shape.size(); ++i) {
      int64_t od = s[s.size() - o.shape.size() + i];
      if (o.shape[i] != od && o.shape[i] != 1) {
        return invalid_argument(fmt::format("shape {} does not broadcast to {}", shape_str(o.shape), shape_str(s)));
      }
    }
  }

  // Layout: the main operand's when it is channel-blocked/channels-last and every operand fits it.
  LayoutKind kind;
  kind.kind = LayoutKind::kPlain;
  Md out_md = plain_md(s);
  if (s.size() == 4 && c.operands[0].value) {
    ASSIGN_OR_RETURN(int h, b.home(c.operands[0].value));
    LayoutKind k = layout_kind(b.buffer(h).md);
    bool fits = k.kind == LayoutKind::kChannelBlocked || k.kind == LayoutKind::kChannelsLast;
    for (const Operand& o : c.operands) {
      if (!fits) break;
      if (shape_numel(o.shape) == 1) continue;
      Shape full(4, 1);
      for (size_t i = 0; i < o.shape.size(); ++i) full[4 - o.shape.size() + i] = o.shape[i];
      fits = full[1] == s[1];  // blocked lanes cannot broadcast a single channel
    }
    if (fits) {
      kind = k;
      out_md = same_layout(b.buffer(h).md, to_dims(s));
    }
  }

  std::vector<int> bufs;
  std::vector<std::vector<int64_t>> strides;
  std::set<int> roots;
  for (const Operand& o : c.operands) {
    Shape full(s.size(), 1);
    for (size_t i = 0; i < o.shape.size(); ++i) full[s.size() - o.shape.size() + i] = o.shape[i];
    const bool scalar = shape_numel(o.shape) == 1;
    Md want = (kind.kind == LayoutKind::kPlain || scalar) ? plain_md(o.shape) : same_layout(out_md, to_dims(full));
    int buf;
    if (o.value && !o.value->is_constant()) {
      if (scalar) {
        ASSIGN_OR_RETURN(buf, b.plain(o.value));
      } else {
        ASSIGN_OR_RETURN(buf, b.in_layout(o.value, want));
      }
    } else {
      const Tensor& t = o.value ? o.value->constant : o.tensor;
      if (t.dtype() != DType::kF32) return unsupported("arithmetic runs in f32 only");
      if (kind.kind == LayoutKind::kPlain || scalar) {
        buf = b.new_constant(t, plain_md(t.shape()), "const");
      } else {
        // Per-channel constants in the blocked layout: reordered once here.
        ASSIGN_OR_RETURN(dnnl::memory m, b.weights().get(t, plain_md(full), want));
        auto owner = std::make_shared<dnnl::memory>(m);
        Tensor wrapped = Tensor::wrap(DType::kF32, {static_cast<int64_t>(want.get_size() / 4)}, m.get_data_handle(),
                                      std::shared_ptr<void>(owner, owner.get()));
        buf = b.new_constant(wrapped, want, "const");
      }
    }
    bufs.push_back(buf);
    roots.insert(b.root_of(buf));
    strides.push_back(operand_strides(o.shape, s, kind));
  }
  std::vector<int64_t> phys = physical_dims(s, kind);
  EwProgram prog = EwProgram::compile(phys, strides, c.steps);

  // In place over operand 0 when it is full-size in the output layout and nothing reads it later.
  std::set<const Node*> current(c.nodes.begin(), c.nodes.end());
  int out = -1;
  const Operand& o0 = c.operands[0];
  // (Not when a later step reads operand 0 again, e.g. x + x*s: the tile overwrites it.)
  bool reread = false;
  for (const EwStep& st : c.steps) reread = reread || st.operand == 0;
  if (o0.value && !o0.value->is_constant() && o0.shape == s && b.buffer(bufs[0]).md == out_md && !reread &&
      std::count(bufs.begin(), bufs.end(), bufs[0]) == 1 && b.dies_with(bufs[0], current)) {
    bool shared = false;
    for (size_t i = 1; i < bufs.size(); ++i) shared = shared || b.root_of(bufs[i]) == b.root_of(bufs[0]);
    if (!shared) out = bufs[0];
  }
  if (out < 0) out = b.new_buffer(DType::kF32, s, out_md, cur->name);

  int64_t pad_from = 0;
  if (kind.kind == LayoutKind::kChannelBlocked && s[1] % kind.block && !zero_preserving(c.steps)) {
    pad_from = s[1] % kind.block;
  }
  std::string names;
  for (const Node* m : c.nodes) names += std::string(names.empty() ? "" : ",") + graph::op_name(m->op);
  std::string label =
      fmt::format("eltwise[{}] {} {}{}", names, prog.describe(), md_str(out_md), out == bufs[0] ? " in-place" : "");
  b.add_step(std::make_unique<EltwiseOp>(std::move(prog), bufs, out, label, pad_from, phys), bufs, {out}, &n);
  for (size_t i = 1; i < c.nodes.size(); ++i) b.absorb(c.nodes[i]);
  b.set_home(cur, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

// Fused epilogues: the pointwise nodes after a Conv, ConvTranspose or MatMul that a backend can apply to the
// result before it reaches memory (oneDNN post-ops, a CUDA epilogue program) become stages of that node's
// epilogue: activations, Sqrt, BatchNorm with constant parameters (channels on axis 1), arithmetic with a constant
// scalar or per-channel constant, one residual Add of a same-shape tensor computed earlier, and swish
// x*sigmoid(k*x). The chain grows while each value has a single reader (swish: the two readers of x), has the
// node's output shape in f32 and is no graph output. This is the one place these patterns are matched: backends
// read the stages (and expand_epilogues gives them back as nodes to a backend that runs them one by one).
// PassOptions::fuse_activations, fold_batchnorm and fuse_residual govern their kinds of stage here too.
#include <unordered_map>

#include "graph/passes/pass_util.h"
#include "graph/passes/passes.h"

namespace steadyocr::graph {
namespace {

using Operand = EpilogueStage::Operand;
using Role = EpilogueStage::Role;

// Pointwise operations after the node's own result, its residual and activation counted.
constexpr size_t kMaxStages = 12;

bool same_shape_f32(const Value* a, const Value* b) {
  return a && b && a->dtype == DType::kF32 && b->dtype == DType::kF32 && a->shape == b->shape;
}

bool scalar_constant(const Value* v, float* out) {
  if (!v || !v->is_constant() || v->constant.numel() != 1) return false;
  *out = v->constant.to_floats()[0];
  return true;
}

// A constant scalar, a constant varying only along `channel_axis` of `out` (broadcast from the right), or neither.
enum class ConstKind { kScalar, kPerChannel, kOther };
ConstKind classify_constant(const Tensor& c, const Shape& out, int channel_axis) {
  if (c.numel() == 1) return ConstKind::kScalar;
  const Shape& cs = c.shape();
  if (cs.size() > out.size()) return ConstKind::kOther;
  const size_t off = out.size() - cs.size();
  bool channel = false;
  for (size_t i = 0; i < cs.size(); ++i) {
    const int axis = static_cast<int>(off + i);
    if (cs[i] == 1) continue;
    if (axis != channel_axis || cs[i] != out[axis]) return ConstKind::kOther;
    channel = true;
  }
  return channel ? ConstKind::kPerChannel : ConstKind::kOther;
}

// Clip's bounds must be attributes or constant scalars.
bool clip_bounds_constant(const Node& n) {
  for (size_t i = 1; i <= 2; ++i) {
    float v;
    if (n.input(i) && !scalar_constant(n.input(i), &v)) return false;
  }
  return true;
}

class Growth {
 public:
  Growth(Graph& g, Node* host, const std::unordered_map<const Node*, size_t>& position, const PassOptions& options)
      : g_(g), host_(host), position_(position), options_(options), cur_(host->output()) {
    switch (host->op) {
      case OpKind::kConv:
        own_inputs_ = 4;
        allow_residual_ = host->input(3) == nullptr;
        break;
      case OpKind::kConvTranspose:
        own_inputs_ = 3;
        break;
      default:  // MatMul: channels on the last axis
        own_inputs_ = 2;
        axis_ = static_cast<int>(cur_->shape.size()) - 1;
        break;
    }
    if (host->op == OpKind::kConv) {
      base_ops_ += host->input(3) ? 1 : 0;
      base_ops_ += host->attr<ConvAttrs>().act.kind != ActKind::kNone ? 1 : 0;
    } else if (host->op == OpKind::kConvTranspose) {
      base_ops_ += host->attr<ConvTransposeAttrs>().act.kind != ActKind::kNone ? 1 : 0;
    }
  }

  // Absorbs what follows the host; true when anything was.
  bool grow() {
    while (base_ops_ + e_.stages.size() < kMaxStages) {
      const Value* v = cur_;
      if (g_.is_graph_output(v)) break;
      const std::vector<Node*> cons = g_.consumers(v);
      if (cons.size() == 2) {
        if (try_swish(cons)) continue;
        break;
      }
      if (cons.size() != 1 || !grow_one(cons[0])) break;
    }
    return !e_.stages.empty();
  }

  // Rewires the graph: the host computes the last absorbed value, the stages' operands become its inputs.
  void commit(pass_util::Sweep& sweep) {
    Value* y = host_->output();
    e_.original_inputs = host_->inputs.size();
    e_.own_inputs = own_inputs_;
    e_.channel_axis = axis_;
    e_.head = y->name;
    host_->inputs.resize(own_inputs_, nullptr);
    host_->inputs.insert(host_->inputs.end(), extra_.begin(), extra_.end());
    for (Node* n : absorbed_) sweep.remove(g_, n);
    pass_util::redirect_output(host_, y, cur_);
    host_->epilogue = std::move(e_);
  }

 private:
  Operand operand(Value* v) {
    if (v == cur_) return cur_ref_;
    auto it = stage_of_.find(v);
    if (it != stage_of_.end()) return {Operand::Kind::kStage, it->second};
    if (!v) return {Operand::Kind::kInput, -1};
    extra_.push_back(v);
    return {Operand::Kind::kInput, static_cast<int>(own_inputs_ + extra_.size() - 1)};
  }

  void absorb(Node* c, Role role, bool advance) {
    EpilogueStage st;
    st.role = role;
    st.op = c->op;
    st.attrs = c->attrs;
    for (Value* in : c->inputs) st.operands.push_back(operand(in));
    st.node = c->name;
    st.value = c->output()->name;
    const int index = static_cast<int>(e_.stages.size());
    e_.stages.push_back(std::move(st));
    stage_of_[c->output()] = index;
    absorbed_.push_back(c);
    if (advance) {
      cur_ = c->output();
      cur_ref_ = {Operand::Kind::kStage, index};
    }
  }

  // A computed tensor available before the host runs: a graph input, or produced before it in depth-first order
  // (the order the cpu backend runs nodes in, and a valid one for every backend), so fusing moves nothing earlier.
  bool available(const Value* v) const {
    if (!v->producer) return true;
    auto p = position_.find(v->producer), h = position_.find(host_);
    return p != position_.end() && h != position_.end() && p->second < h->second;
  }

  bool grow_one(Node* c) {
    Value* v = cur_;
    if (c->outputs.size() != 1 || !same_shape_f32(c->output(), v)) return false;
    switch (c->op) {
      case OpKind::kRelu:
      case OpKind::kSigmoid:
      case OpKind::kHardSigmoid:
      case OpKind::kHardSwish:
      case OpKind::kClip:
        if (!options_.fuse_activations || c->input(0) != v) return false;
        if (c->op == OpKind::kClip && !clip_bounds_constant(*c)) return false;
        absorb(c, Role::kPointwise, true);
        return true;
      case OpKind::kSqrt:
        absorb(c, Role::kPointwise, true);
        return true;
      case OpKind::kBatchNorm: {
        if (!options_.fold_batchnorm || axis_ != 1 || c->input(0) != v) return false;
        const int64_t channels = v->shape[1];
        for (size_t i = 1; i <= 4; ++i) {
          if (!c->input(i) || !c->input(i)->is_constant() || c->input(i)->constant.numel() != channels) return false;
        }
        absorb(c, Role::kPointwise, true);
        return true;
      }
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
      case OpKind::kDiv:
      case OpKind::kPow:
        return grow_binary(c);
      default:
        return false;
    }
  }

  bool grow_binary(Node* c) {
    Value* v = cur_;
    if (c->inputs.size() != 2) return false;
    const int vi = c->input(0) == v ? 0 : 1;
    Value* other = c->input(1 - vi);
    if (!other || c->input(vi) != v || other == v) return false;
    if (other->is_constant()) {
      if (other->dtype != DType::kF32) return false;
      const ConstKind kind = classify_constant(other->constant, v->shape, axis_);
      if (kind == ConstKind::kScalar) {
        const float k = other->constant.to_floats()[0];
        if ((c->op == OpKind::kDiv && (vi != 0 || k == 0.f)) || (c->op == OpKind::kPow && vi != 0)) return false;
        absorb(c, Role::kScalar, true);
        return true;
      }
      if (kind != ConstKind::kPerChannel || c->op == OpKind::kPow) return false;
      if ((c->op == OpKind::kSub || c->op == OpKind::kDiv) && vi != 0) return false;
      absorb(c, Role::kPerChannel, true);
      return true;
    }
    if (!options_.fuse_residual || c->op != OpKind::kAdd || !allow_residual_ || has_residual_) return false;
    if (!same_shape_f32(other, v)) return false;
    if (!available(other)) return false;
    has_residual_ = true;
    absorb(c, Role::kResidual, true);
    return true;
  }

  // x*sigmoid(k*x) written as Mul(x, Sigmoid(x)) or Mul(x, Sigmoid(Mul(x, k))): `cons` are x's two readers.
  bool try_swish(const std::vector<Node*>& cons) {
    if (!options_.fuse_activations) return false;
    Value* v = cur_;
    for (int first = 0; first < 2; ++first) {
      Node* pre = cons[first];
      Node* mul = cons[1 - first];
      if (mul->op != OpKind::kMul || pre->outputs.size() != 1) continue;
      Node* sig = pre;
      if (pre->op == OpKind::kMul) {
        const Value* other = pre->input(0) == v ? pre->input(1) : pre->input(0);
        float k;
        if (!scalar_constant(other, &k) || !same_shape_f32(pre->output(), v)) continue;
        if (g_.is_graph_output(pre->output())) continue;
        const std::vector<Node*> readers = g_.consumers(pre->output());
        if (readers.size() != 1) continue;
        sig = readers[0];
      }
      if (sig->op != OpKind::kSigmoid || g_.is_graph_output(sig->output())) continue;
      const std::vector<Node*> gate_readers = g_.consumers(sig->output());
      if (gate_readers.size() != 1 || gate_readers[0] != mul) continue;
      const Value *a = mul->input(0), *b = mul->input(1);
      if (!((a == v && b == sig->output()) || (b == v && a == sig->output()))) continue;
      if (!same_shape_f32(mul->output(), v)) continue;
      if (pre != sig) absorb(pre, Role::kSwishScale, false);
      absorb(sig, Role::kSwishGate, false);
      absorb(mul, Role::kSwishProduct, true);
      return true;
    }
    return false;
  }

  Graph& g_;
  Node* host_;
  const std::unordered_map<const Node*, size_t>& position_;
  const PassOptions& options_;
  Epilogue e_;
  Value* cur_;
  Operand cur_ref_;  // kHead until a stage advances the running value
  std::unordered_map<const Value*, int> stage_of_;
  std::vector<Value*> extra_;
  std::vector<Node*> absorbed_;
  size_t own_inputs_ = 0;
  size_t base_ops_ = 0;
  int axis_ = 1;
  bool allow_residual_ = true;
  bool has_residual_ = false;
};

}  // namespace

Result<bool> fuse_epilogues(Graph& graph, const PassOptions& options) {
  ASSIGN_OR_RETURN(std::vector<Node*> order, topological_order(graph, TopoOrder::kDepthFirst));
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  bool changed = false;
  pass_util::Sweep sweep(graph);
  for (Node* n : sweep.nodes()) {
    if (sweep.removed(n) || !n->epilogue.empty()) continue;
    if (n->op != OpKind::kConv && n->op != OpKind::kConvTranspose && n->op != OpKind::kMatMul) continue;
    if (n->outputs.size() != 1 || !n->output() || n->output()->dtype != DType::kF32) continue;
    // Per-channel and residual checks need the shape: static, or symbolic (equal symbols are equal expressions).
    if (!is_resolved(n->output()->shape)) continue;
    Growth growth(graph, n, position, options);
    if (!growth.grow()) continue;
    growth.commit(sweep);
    changed = true;
  }
  if (changed) graph.remove_dead();
  return changed;
}

}  // namespace steadyocr::graph

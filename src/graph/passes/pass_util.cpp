#include "graph/passes/pass_util.h"

#include <cmath>

namespace steadyocr::graph::pass_util {

size_t use_count(const Graph& g, const Value* v) {
  size_t n = g.is_graph_output(v) ? 1 : 0;
  for (const auto& node : g.nodes()) {
    for (const Value* in : node->inputs) n += in == v ? 1 : 0;
  }
  return n;
}

Node* sole_consumer(const Graph& g, const Value* v) {
  if (g.is_graph_output(v)) return nullptr;
  Node* found = nullptr;
  for (const auto& node : g.nodes()) {
    for (const Value* in : node->inputs) {
      if (in != v) continue;
      if (found) return nullptr;
      found = node.get();
    }
  }
  return found;
}

Value* other_operand(const Node* n, const Value* x) {
  if (n->inputs.size() != 2) return nullptr;
  if (n->inputs[0] == x && n->inputs[1] != x) return n->inputs[1];
  if (n->inputs[1] == x && n->inputs[0] != x) return n->inputs[0];
  return nullptr;
}

bool constant_f32(const Value* v) {
  return v && v->is_constant() && v->constant.dtype() == DType::kF32;
}

bool constant_scalar(const Value* v, float* out) {
  if (!constant_f32(v) || v->constant.numel() != 1) return false;
  *out = v->constant.data<float>()[0];
  return true;
}

bool scalar_near(const Value* v, float target, float tol) {
  float x;
  return constant_scalar(v, &x) && std::fabs(x - target) <= tol;
}

bool per_channel(const Value* c, int64_t channels, std::vector<double>* out) {
  if (!constant_f32(c)) return false;
  const Tensor& t = c->constant;
  const float* p = t.data<float>();
  if (t.numel() == 1) {
    if (t.rank() > 4) return false;
    out->assign(static_cast<size_t>(channels), p[0]);
    return true;
  }
  if (t.numel() != channels || t.rank() < 3 || t.rank() > 4) return false;
  for (int i = 0; i < t.rank(); ++i) {  // C sits at axis rank-3
    if (i != t.rank() - 3 && t.dim(i) != 1) return false;
  }
  out->assign(p, p + channels);
  return true;
}

Sweep::Sweep(const Graph& g) {
  for (const auto& n : g.nodes()) nodes_.push_back(n.get());
}

void Sweep::remove(Graph& g, Node* n) {
  removed_.insert(n);
  g.remove_node(n);
}

void redirect_output(Node* producer, Value* from, Value* to) {
  for (Value*& o : producer->outputs) {
    if (o == from) o = to;
  }
  to->producer = producer;
  if (from->producer == producer) from->producer = nullptr;
}

int64_t output_channels(const Node& conv, const Shape& w) {
  if (w.size() != 4) return -1;
  if (conv.op == OpKind::kConvTranspose) return w[1] * conv.attr<ConvTransposeAttrs>().group;
  return w[0];
}

Tensor scale_output_channels(const Node& conv, const Tensor& weight, const std::vector<double>& scale) {
  Tensor out = Tensor::empty(DType::kF32, weight.shape());
  const float* src = weight.data<float>();
  float* dst = out.data<float>();
  const int64_t spatial = weight.dim(2) * weight.dim(3);
  if (conv.op == OpKind::kConv) {
    // [M, C/g, kh, kw]: output channel = first index.
    const int64_t per_oc = weight.numel() / weight.dim(0);
    for (int64_t m = 0; m < weight.dim(0); ++m) {
      for (int64_t i = 0; i < per_oc; ++i) {
        dst[m * per_oc + i] = static_cast<float>(static_cast<double>(src[m * per_oc + i]) * scale[m]);
      }
    }
    return out;
  }
  // ConvTranspose [C_in, M/g, kh, kw]: input channel ci belongs to group ci / (C_in/g); output channel
  // = group * (M/g) + j.
  const int64_t group = conv.attr<ConvTransposeAttrs>().group;
  const int64_t cin = weight.dim(0), mg = weight.dim(1), cin_per_group = cin / group;
  for (int64_t ci = 0; ci < cin; ++ci) {
    for (int64_t j = 0; j < mg; ++j) {
      const double s = scale[(ci / cin_per_group) * mg + j];
      const int64_t base = (ci * mg + j) * spatial;
      for (int64_t i = 0; i < spatial; ++i) dst[base + i] = static_cast<float>(static_cast<double>(src[base + i]) * s);
    }
  }
  return out;
}

}  // namespace steadyocr::graph::pass_util

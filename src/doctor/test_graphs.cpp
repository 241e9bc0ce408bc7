#include "doctor/test_graphs.h"

#include <fmt/format.h>

#include <random>

#include "graph/shape_inference.h"

namespace steadyocr::doctor {

using graph::Activation;
using graph::Graph;
using graph::OpKind;
using graph::Value;

Tensor random_values(const Shape& shape, uint32_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

namespace {
// Builds a graph step by step; finish() infers shapes and adds random inputs.
class Builder {
 public:
  explicit Builder(const std::string& name) {
    tg_.name = name;
    tg_.graph.set_name(name);
  }

  Value* input(const Shape& shape) {
    Value* v = tg_.graph.add_value(tg_.graph.unique_name("x"), DType::kF32, shape);
    tg_.graph.inputs().push_back(v);
    tg_.inputs.push_back(random_values(shape, seed_++, -2.f, 2.f));
    return v;
  }
  Value* constant(const Shape& shape, float lo = -0.5f, float hi = 0.5f) {
    return tg_.graph.add_constant(tg_.graph.unique_name("c"), random_values(shape, seed_++, lo, hi));
  }
  Value* op(OpKind op, std::vector<Value*> inputs, graph::OpAttrs attrs = {}) {
    Value* out = tg_.graph.add_value(tg_.graph.unique_name(graph::op_name(op)), DType::kF32, {});
    tg_.graph.add_node(op, tg_.graph.unique_name(std::string(graph::op_name(op)) + "_node"), std::move(inputs), {out},
                       std::move(attrs));
    return out;
  }
  Result<TestGraph> finish(Value* output) {
    tg_.graph.outputs().push_back(output);
    Status s = graph::infer_shapes(tg_.graph);
    if (!s.is_ok()) return s.with_context("doctor test graph " + tg_.name);
    return std::move(tg_);
  }

 private:
  TestGraph tg_;
  uint32_t seed_ = 1234;
};

graph::ConvAttrs conv_attrs(int64_t k, int64_t stride, int64_t group, Activation act) {
  graph::ConvAttrs a;
  a.kernel = {k, k};
  a.strides = {stride, stride};
  int64_t p = k / 2;
  a.pads = {p, p, p, p};
  a.group = group;
  a.act = act;
  return a;
}

graph::ActAttrs act(Activation a) {
  return graph::ActAttrs{a};
}
}  // namespace

std::vector<Result<TestGraph>> make_kernel_test_graphs() {
  std::vector<Result<TestGraph>> out;
  {
    Builder b("elementwise_broadcast");
    Value* x = b.input({1, 8, 16, 16});
    Value* y = b.op(OpKind::kMul, {x, b.constant({1, 8, 1, 1}, 0.5f, 1.5f)});
    y = b.op(OpKind::kAdd, {y, b.constant({1, 8, 1, 1})});
    y = b.op(OpKind::kSub, {y, x});
    y = b.op(OpKind::kDiv, {y, b.constant({1, 8, 1, 1}, 1.f, 2.f)});
    out.push_back(b.finish(y));
  }
  {
    Builder b("activations");
    Value* x = b.input({1, 8, 16, 16});
    Value* y = b.op(OpKind::kHardSwish, {x}, act(Activation::hard_swish()));
    y = b.op(OpKind::kSigmoid, {b.op(OpKind::kRelu, {y}, act(Activation::relu()))}, act(Activation::sigmoid()));
    Value* z = b.op(OpKind::kHardSigmoid, {x}, act(Activation::hard_sigmoid(0.2f, 0.5f)));
    out.push_back(b.finish(b.op(OpKind::kAdd, {y, z})));
  }
  for (auto mode : {graph::ResizeMode::kNearest, graph::ResizeMode::kLinear}) {
    Builder b(mode == graph::ResizeMode::kNearest ? "resize_nearest_x2" : "resize_linear_x2");
    Value* x = b.input({1, 4, 12, 20});
    graph::ResizeAttrs r;
    r.mode = mode;
    r.coord = mode == graph::ResizeMode::kNearest ? graph::ResizeCoord::kAsymmetric : graph::ResizeCoord::kHalfPixel;
    r.nearest = graph::ResizeNearest::kFloor;
    r.scales = {1.f, 1.f, 2.f, 2.f};
    out.push_back(b.finish(b.op(OpKind::kResize, {x}, r)));
  }
  {
    Builder b("softmax");
    Value* x = b.input({2, 25, 97});
    graph::SoftmaxAttrs s;
    s.axis = -1;
    s.flatten_trailing = false;
    out.push_back(b.finish(b.op(OpKind::kSoftmax, {x}, s)));
  }
  {
    Builder b("layernorm");
    Value* x = b.input({1, 40, 120});
    graph::LayerNormAttrs l;
    l.axis = -1;
    l.epsilon = 1e-5f;
    out.push_back(b.finish(b.op(OpKind::kLayerNorm, {x, b.constant({120}, 0.5f, 1.5f), b.constant({120})}, l)));
  }
  {
    Builder b("conv3x3_relu");
    Value* x = b.input({1, 8, 24, 24});
    out.push_back(b.finish(b.op(OpKind::kConv, {x, b.constant({16, 8, 3, 3}), b.constant({16})},
                                conv_attrs(3, 1, 1, Activation::relu()))));
  }
  {
    Builder b("conv_depthwise_stride2_hardswish");
    Value* x = b.input({1, 16, 24, 24});
    out.push_back(b.finish(b.op(OpKind::kConv, {x, b.constant({16, 1, 5, 5}), b.constant({16})},
                                conv_attrs(5, 2, 16, Activation::hard_swish()))));
  }
  {
    Builder b("conv1x1");
    Value* x = b.input({1, 32, 16, 16});
    out.push_back(b.finish(
        b.op(OpKind::kConv, {x, b.constant({24, 32, 1, 1}), b.constant({24})}, conv_attrs(1, 1, 1, Activation{}))));
  }
  {
    Builder b("conv_transpose2x2");
    Value* x = b.input({1, 16, 12, 12});
    graph::ConvTransposeAttrs t;
    t.kernel = {2, 2};
    t.strides = {2, 2};
    out.push_back(b.finish(b.op(OpKind::kConvTranspose, {x, b.constant({16, 8, 2, 2}), b.constant({8})}, t)));
  }
  {
    Builder b("matmul");
    Value* x = b.input({1, 40, 64});
    out.push_back(b.finish(b.op(OpKind::kMatMul, {x, b.constant({64, 96})})));
  }
  {
    Builder b("pooling");
    Value* x = b.input({1, 8, 20, 20});
    graph::PoolAttrs mp;
    mp.kernel = {3, 3};
    mp.strides = {2, 2};
    mp.pads = {1, 1, 1, 1};
    Value* y = b.op(OpKind::kMaxPool, {x}, mp);
    graph::PoolAttrs ap;
    ap.kernel = {2, 2};
    ap.strides = {2, 2};
    y = b.op(OpKind::kAveragePool, {y}, ap);
    out.push_back(b.finish(b.op(OpKind::kGlobalAveragePool, {y}, graph::PoolAttrs{})));
  }
  {
    Builder b("transpose_concat");
    Value* x = b.input({1, 6, 10, 12});
    graph::TransposeAttrs t;
    t.perm = {0, 2, 3, 1};
    Value* y = b.op(OpKind::kTranspose, {x}, t);
    out.push_back(b.finish(b.op(OpKind::kConcat, {y, y}, graph::AxisAttrs{3})));
  }
  return out;
}

std::string conv_signature(const graph::Node& n) {
  auto dims = [](const Value* v) { return v ? shape_str(v->shape) : std::string("-"); };
  std::string s = fmt::format("{} x{} w{} b{} r{}", graph::op_name(n.op), dims(n.input(0)), dims(n.input(1)),
                              n.input(2) ? 1 : 0, n.input(3) ? 1 : 0);
  if (n.op == OpKind::kConv) {
    const auto& a = n.attr<graph::ConvAttrs>();
    s += fmt::format(" k{}x{} s{}x{} d{}x{} p{},{},{},{} g{} {}", a.kernel[0], a.kernel[1], a.strides[0], a.strides[1],
                     a.dilations[0], a.dilations[1], a.pads[0], a.pads[1], a.pads[2], a.pads[3], a.group,
                     a.act.describe());
  } else if (n.op == OpKind::kConvTranspose) {
    const auto& a = n.attr<graph::ConvTransposeAttrs>();
    s += fmt::format(" k{}x{} s{}x{} p{},{},{},{} op{},{} g{} {}", a.kernel[0], a.kernel[1], a.strides[0], a.strides[1],
                     a.pads[0], a.pads[1], a.pads[2], a.pads[3], a.output_padding[0], a.output_padding[1], a.group,
                     a.act.describe());
  }
  return s;
}

Result<TestGraph> make_single_node_graph(const graph::Node& node, uint32_t seed) {
  TestGraph tg;
  tg.name = conv_signature(node);
  tg.graph.set_name(node.name);
  std::vector<Value*> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    if (!v) {
      inputs.push_back(nullptr);
      continue;
    }
    if (v->is_constant()) {
      inputs.push_back(tg.graph.add_constant(tg.graph.unique_name(v->name), v->constant));
      continue;
    }
    if (!v->has_static_shape())
      return invalid_argument(fmt::format("{}: input '{}' has no static shape", node.describe(), v->name));
    Value* in = tg.graph.add_value(tg.graph.unique_name(v->name), v->dtype, v->shape);
    tg.graph.inputs().push_back(in);
    tg.inputs.push_back(random_values(v->shape, seed + static_cast<uint32_t>(i)));
    inputs.push_back(in);
  }
  const Value* o = node.output(0);
  if (!o || !o->has_static_shape()) return invalid_argument(node.describe() + ": output has no static shape");
  Value* out = tg.graph.add_value(tg.graph.unique_name(o->name), o->dtype, o->shape);
  tg.graph.add_node(node.op, node.name, inputs, {out}, node.attrs);
  tg.graph.outputs().push_back(out);
  return tg;
}

Result<TestGraph> make_worker_graph() {
  Builder b("worker_graph");
  Value* x = b.input({1, 16, 64, 64});
  Value* y = b.op(OpKind::kConv, {x, b.constant({32, 16, 3, 3}, -0.2f, 0.2f), b.constant({32})},
                  conv_attrs(3, 1, 1, Activation::relu()));
  y = b.op(OpKind::kConv, {y, b.constant({32, 1, 3, 3}, -0.3f, 0.3f), b.constant({32})},
           conv_attrs(3, 2, 32, Activation::hard_swish()));
  y = b.op(OpKind::kConv, {y, b.constant({16, 32, 1, 1}, -0.2f, 0.2f), b.constant({16})},
           conv_attrs(1, 1, 1, Activation{}));
  graph::ResizeAttrs r;
  r.mode = graph::ResizeMode::kNearest;
  r.coord = graph::ResizeCoord::kAsymmetric;
  r.nearest = graph::ResizeNearest::kFloor;
  r.scales = {1.f, 1.f, 2.f, 2.f};
  y = b.op(OpKind::kResize, {y}, r);
  y = b.op(OpKind::kAdd, {y, x});
  graph::SoftmaxAttrs s;
  s.axis = 1;
  s.flatten_trailing = false;
  return b.finish(b.op(OpKind::kSoftmax, {y}, s));
}

}  // namespace steadyocr::doctor

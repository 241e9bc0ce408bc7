// Symbolic dims: the table's canonical forms and evaluation, symbolic shape inference, and the three real models
// specialised once on symbols and instantiated per shape against the passes run on each shape.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <random>

#include "backends/reference/reference_backend.h"
#include "core/timer.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"
#include "graph_test_util.h"
#include "test_util.h"

namespace steadyocr::graph {
namespace {

using testing::models_dir;

int64_t eval(const SymbolTable& t, int64_t d, const std::vector<Shape>& inputs) {
  SymbolValues v;
  Status s = t.evaluate(inputs, &v);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return v.dim(d);
}

TEST(Symbols, CanonicalFormsMakeEqualComputationsOneSymbol) {
  SymbolTable t;
  const int64_t h = t.input(0, 2), w = t.input(0, 3);
  EXPECT_TRUE(is_symbolic(h));
  EXPECT_NE(h, w);
  EXPECT_EQ(t.input(0, 2), h);  // hash-consed
  // A 3x3 convolution of stride 1 and padding 1 keeps H: (H + 2 - 3) / 1 + 1.
  EXPECT_EQ(t.add_const(t.floor_div_const(t.add_const(h, 2 - 3), 1), 1), h);
  // Stride 2 by two paths (k3 p1, k5 p2) is one symbol.
  const int64_t a = t.add_const(t.floor_div_const(t.add_const(h, 2 - 3), 2), 1);
  const int64_t b = t.add_const(t.floor_div_const(t.add_const(h, 4 - 5), 2), 1);
  EXPECT_EQ(a, b);
  // Commutative, constants folded, floor divisions merged.
  EXPECT_EQ(t.add(h, w), t.add(w, h));
  EXPECT_EQ(t.mul(h, w), t.mul(w, h));
  EXPECT_EQ(t.mul_const(t.mul_const(h, 4), 8), t.mul_const(h, 32));
  EXPECT_EQ(t.floor_div_const(t.mul_const(h, 32), 8), t.mul_const(h, 4));
  EXPECT_EQ(t.floor_div_const(t.floor_div_const(h, 2), 4), t.floor_div_const(h, 8));
  EXPECT_EQ(t.sub(t.add_const(h, 5), h), 5);
  EXPECT_EQ(t.sub(h, h), 0);
  EXPECT_EQ(t.floor_div(t.mul(h, w), w), h);
  // Static operands fold; unknown stays unknown; a negative static result is no dim.
  EXPECT_EQ(t.add(3, 4), 7);
  EXPECT_EQ(t.add(h, kUnknownDim), kUnknownDim);
  EXPECT_EQ(t.sub(3, 5), kUnknownDim);
  EXPECT_EQ(t.mul(int64_t{1} << 62, 4), kUnknownDim);  // overflow
  EXPECT_EQ(t.describe(a), "((H-1)/2+1)");
}

TEST(Symbols, EvaluationMatchesIntegerArithmetic) {
  SymbolTable t;
  const int64_t h = t.input(0, 2), w = t.input(0, 3);
  const int64_t conv_s2 = t.add_const(t.floor_div_const(t.add_const(h, -1), 2), 1);
  const int64_t pool_ceil =
      t.min(t.add_const(t.floor_div_const(t.add_const(w, 2 - 1), 2), 1), t.add_const(t.floor_div_const(w, 2), 1));
  const int64_t scaled = t.floor_scale(w, 1.5f);
  const int64_t quot = t.floor_div(t.mul(h, w), t.add_const(h, 1));
  for (int64_t H : {1, 2, 7, 32, 33, 960}) {
    for (int64_t W : {1, 3, 48, 321}) {
      const std::vector<Shape> in = {{1, 3, H, W}};
      EXPECT_EQ(eval(t, conv_s2, in), (H - 1) / 2 + 1) << H;
      EXPECT_EQ(eval(t, pool_ceil, in), std::min((W + 1) / 2 + 1, W / 2 + 1)) << W;
      EXPECT_EQ(eval(t, scaled, in), static_cast<int64_t>(std::floor(W * 1.5))) << W;
      EXPECT_EQ(eval(t, quot, in), H * W / (H + 1));
      EXPECT_EQ(eval(t, 17, in), 17);
    }
  }
}

TEST(Symbols, AssumptionsAreCheckedAtEvaluation) {
  SymbolTable t;
  const int64_t h = t.input(0, 2), w = t.input(0, 3);
  t.assume_equal(t.floor_div_const(h, 2), w);
  t.assume_divisible(t.mul(h, w), 4);
  SymbolValues v;
  EXPECT_TRUE(t.evaluate({{1, 3, 8, 4}}, &v).is_ok());
  Status s = t.evaluate({{1, 3, 8, 5}}, &v);
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("differs from"), std::string::npos) << s.message();
  s = t.evaluate({{1, 3, 2, 1}}, &v);  // 2/2 == 1 holds, 2*1 % 4 does not
  EXPECT_NE(s.message().find("not divisible"), std::string::npos) << s.message();
  EXPECT_FALSE(t.evaluate({{1, 3}}, &v).is_ok());  // the input has no axis 2
}

// A small graph whose shapes need every rule that computes dims: a strided conv, a ceil-mode pool, a resize, a
// concat, a shape chain into a Reshape with -1, a broadcast, a MatMul and a slice of a symbolic axis.
struct SymbolicGraph {
  Graph g;
  Value* out = nullptr;
};

SymbolicGraph build_symbolic_graph() {
  SymbolicGraph s;
  Graph& g = s.g;
  Value* x = g.add_value("x", DType::kF32, {-1, 4, -1, -1});
  g.inputs().push_back(x);
  ConvAttrs ca;
  ca.kernel = {3, 3};
  ca.strides = {2, 2};
  ca.pads = {1, 1, 1, 1};
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<float> wv(8 * 4 * 9);
  for (float& f : wv) f = u(rng);
  Value* w = g.add_constant("w", Tensor::from_floats({8, 4, 3, 3}, wv));
  Value* c = g.add_value("c");
  g.add_node(OpKind::kConv, "conv", {x, w}, {c}, ca);
  PoolAttrs pa;
  pa.kernel = {2, 2};
  pa.strides = {2, 2};
  pa.ceil_mode = true;
  Value* p = g.add_value("p");
  g.add_node(OpKind::kMaxPool, "pool", {c}, {p}, pa);
  ResizeAttrs ra;
  ra.scales = {1.f, 1.f, 2.f, 2.f};
  Value* r = g.add_value("r");
  g.add_node(OpKind::kResize, "up", {p}, {r}, ra);
  // Shape(r) -> slice [0:2] -> concat with [-1] -> Reshape(r): [N, 8, H'*W'].
  Value* sh = g.add_value("sh");
  g.add_node(OpKind::kShape, "shape", {r}, {sh});
  SliceAttrs sa;
  sa.starts = {0};
  sa.ends = {2};
  sa.axes = {0};
  Value* head = g.add_value("head");
  g.add_node(OpKind::kSlice, "head", {sh}, {head}, sa);
  Value* minus1 = g.add_constant("minus1", Tensor::from_int64s({1}, {-1}));
  Value* target = g.add_value("target");
  g.add_node(OpKind::kConcat, "target", {head, minus1}, {target}, AxisAttrs{0});
  Value* flat = g.add_value("flat");
  g.add_node(OpKind::kReshape, "flatten", {r, target}, {flat}, ReshapeAttrs{});
  // Transpose to [N, L, 8], MatMul by [8, 5], a bias broadcast, then the first L-1 rows.
  Value* tr = g.add_value("tr");
  g.add_node(OpKind::kTranspose, "tr", {flat}, {tr}, TransposeAttrs{{0, 2, 1}});
  std::vector<float> mv(8 * 5);
  for (float& f : mv) f = u(rng);
  Value* m = g.add_constant("m", Tensor::from_floats({8, 5}, mv));
  Value* mm = g.add_value("mm");
  g.add_node(OpKind::kMatMul, "mm", {tr, m}, {mm});
  Value* bias = g.add_constant("bias", Tensor::from_floats({5}, {0.1f, 0.2f, 0.3f, 0.4f, 0.5f}));
  Value* biased = g.add_value("biased");
  g.add_node(OpKind::kAdd, "bias", {mm, bias}, {biased});
  SliceAttrs rows;
  rows.starts = {0};
  rows.ends = {-1};
  rows.axes = {1};
  s.out = g.add_value("y");
  g.add_node(OpKind::kSlice, "rows", {biased}, {s.out}, rows);
  g.outputs().push_back(s.out);
  return s;
}

TEST(Symbols, InferenceGivesEveryShapeAsAnExpression) {
  SymbolicGraph s = build_symbolic_graph();
  ASSERT_TRUE(infer_shapes(s.g).is_ok());
  Graph sym = s.g.clone();
  Status st = specialize_symbolic(sym, testing::ref_passes());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const Value* y = sym.find_value("y");
  ASSERT_NE(y, nullptr);
  EXPECT_TRUE(is_resolved(y->shape)) << sym.symbols()->describe(y->shape);
  EXPECT_TRUE(has_symbols(y->shape));
  EXPECT_EQ(y->shape[2], 5);
  // The shape chain is gone: the Reshape's target is its attribute.
  for (const auto& n : sym.nodes()) EXPECT_NE(n->op, OpKind::kShape) << n->describe();
  EXPECT_EQ(sym.find_value("flat")->producer->inputs.size(), 1u);
  // Per shape: the same static graph as the plain path, value by value, and the same output on the reference.
  for (const Shape& in : std::vector<Shape>{{1, 4, 9, 14}, {2, 4, 16, 16}, {3, 4, 31, 5}, {1, 4, 3, 3}}) {
    auto fast = instantiate(sym, {in});
    ASSERT_TRUE(fast.is_ok()) << fast.status().to_string();
    Status verified = verify(*fast, {.require_static_shapes = true});
    ASSERT_TRUE(verified.is_ok()) << shape_str(in) << ": " << verified.to_string();
    Graph plain = s.g.clone();
    ASSERT_TRUE(specialize(plain, {in}, testing::ref_passes()).is_ok());
    for (const auto& v : plain.values()) {
      const Value* f = fast->find_value(v->name);
      if (!f || v->is_constant()) continue;
      EXPECT_EQ(shape_str(f->shape), shape_str(v->shape)) << v->name << " for " << shape_str(in);
    }
    Tensor x = testing::random_tensor(in, 11);
    auto backend = make_reference_backend();
    auto a = backend->prepare(plain);
    auto b = backend->prepare(*fast);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    std::vector<Tensor> oa, ob;
    ASSERT_TRUE((*a)->run({x}, &oa).is_ok());
    ASSERT_TRUE((*b)->run({x}, &ob).is_ok());
    EXPECT_EQ(oa[0].shape(), ob[0].shape());
    EXPECT_EQ(0, std::memcmp(oa[0].raw(), ob[0].raw(), oa[0].nbytes())) << shape_str(in);
  }
  // Shapes that do not fit: a channel count, a pooling window larger than its input (the strided conv leaves 1x1 of
  // a 1x1 input). instantiate refuses each, as specialize does.
  for (const Shape& bad : std::vector<Shape>{{1, 3, 9, 14}, {1, 4, 1, 1}, {1, 4, 2, 3}}) {
    EXPECT_FALSE(instantiate(sym, {bad}).is_ok()) << shape_str(bad);
    Graph plain = s.g.clone();
    EXPECT_FALSE(specialize(plain, {bad}, testing::ref_passes()).is_ok()) << shape_str(bad);
  }
}

// A LayerNorm whose scale spans normalised axes that are symbols: the scale must broadcast to them, so the symbols
// are assumed equal to its sizes, and an input shape that breaks that does not fit (the plain path names it) rather
// than reaching a backend with a scale it cannot apply.
TEST(Symbols, LayerNormScaleFixesTheAxesItSpans) {
  Graph g;
  Value* x = g.add_value("x", DType::kF32, {-1, 3, -1, -1});
  g.inputs().push_back(x);
  Value* scale = g.add_constant("scale", testing::random_tensor({4, 5}, 3));
  Value* y = g.add_value("y");
  g.add_node(OpKind::kLayerNorm, "norm", {x, scale}, {y}, LayerNormAttrs{1, 1e-5f});
  g.outputs().push_back(y);
  Graph sym = g.clone();
  Status st = specialize_symbolic(sym, testing::ref_passes());
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_TRUE(instantiate(sym, {{2, 3, 4, 5}}).is_ok());
  for (const Shape& bad : std::vector<Shape>{{2, 3, 7, 5}, {2, 3, 4, 10}}) {
    EXPECT_FALSE(instantiate(sym, {bad}).is_ok()) << shape_str(bad);
    Graph plain = g.clone();
    EXPECT_FALSE(specialize(plain, {bad}, testing::ref_passes()).is_ok()) << shape_str(bad);
  }
}

// The real models: specialised once on symbols and optimised, then instantiated for shapes the pipeline makes, each
// against the whole pass pipeline run on that shape: the same ops in the same order with the same output shapes.
struct ModelCase {
  const char* file;
  std::vector<Shape> shapes;
};

class SymbolicModels : public ::testing::TestWithParam<ModelCase> {};

TEST_P(SymbolicModels, InstantiateEqualsThePassesOnEveryShape) {
  const ModelCase& mc = GetParam();
  auto imported = import_onnx(models_dir() + "/" + mc.file);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  Graph sym = imported->clone();
  Stopwatch sw;
  Status s = specialize_symbolic(sym, testing::ref_passes());
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  ASSERT_TRUE(optimize(sym, testing::ref_passes()).is_ok());
  const double load_ms = sw.elapsed_ms();
  double inst_ms = 0, passes_ms = 0;
  for (const Shape& in : mc.shapes) {
    sw.reset();
    auto fast = instantiate(sym, {in});
    inst_ms += sw.elapsed_ms();
    ASSERT_TRUE(fast.is_ok()) << shape_str(in) << ": " << fast.status().to_string();
    ASSERT_TRUE(verify(*fast, {.require_static_shapes = true}).is_ok()) << shape_str(in);
    sw.reset();
    Graph plain = imported->clone();
    ASSERT_TRUE(specialize(plain, {in}, testing::ref_passes()).is_ok());
    ASSERT_TRUE(optimize(plain, testing::ref_passes()).is_ok());
    passes_ms += sw.elapsed_ms();
    ASSERT_EQ(fast->node_count(), plain.node_count()) << shape_str(in);
    for (size_t i = 0; i < plain.node_count(); ++i) {
      const Node& p = *plain.nodes()[i];
      const Node& f = *fast->nodes()[i];
      ASSERT_EQ(p.op, f.op) << i << " for " << shape_str(in);
      ASSERT_EQ(p.epilogue.stages.size(), f.epilogue.stages.size()) << p.describe();
      ASSERT_EQ(p.inputs.size(), f.inputs.size()) << p.describe();
      for (size_t k = 0; k < p.inputs.size(); ++k) {
        if (!p.inputs[k]) continue;
        EXPECT_EQ(shape_str(p.inputs[k]->shape), shape_str(f.inputs[k]->shape)) << p.describe() << " input " << k;
      }
      EXPECT_EQ(shape_str(p.output()->shape), shape_str(f.output()->shape)) << p.describe();
      if (p.op == OpKind::kReshape) {
        EXPECT_EQ(p.output()->shape, f.attr<ReshapeAttrs>().shape) << f.describe();
      }
    }
  }
  std::cout << fmt::format(
      "{}: symbolic specialisation + passes {:.1f} ms once; per shape instantiate {:.3f} ms "
      "against the passes' {:.3f} ms ({} shapes, {} symbols)\n",
      mc.file, load_ms, inst_ms / mc.shapes.size(), passes_ms / mc.shapes.size(), mc.shapes.size(),
      sym.symbols()->size());
}

std::vector<Shape> det_shapes() {
  std::vector<Shape> s;
  for (int64_t h : {32, 96, 608, 736, 960}) {
    for (int64_t w : {32, 320, 672, 960}) s.push_back({1, 3, h, w});
  }
  s.push_back({2, 3, 960, 736});
  return s;
}

std::vector<Shape> rec_shapes() {
  std::vector<Shape> s;
  for (int64_t n : {1, 2, 6}) {
    for (int64_t w : {8, 9, 10, 31, 96, 320, 321, 367, 1063, 2000}) s.push_back({n, 3, 48, w});
  }
  return s;
}

std::vector<Shape> cls_shapes() {
  std::vector<Shape> s;
  for (int64_t n : {1, 6}) s.push_back({n, 3, 48, 192});
  return s;
}

INSTANTIATE_TEST_SUITE_P(Models, SymbolicModels,
                         ::testing::Values(ModelCase{"ch_PP-OCRv4_det_infer.onnx", det_shapes()},
                                           ModelCase{"ch_PP-OCRv4_rec_infer.onnx", rec_shapes()},
                                           ModelCase{"ch_ppocr_mobile_v2.0_cls_infer.onnx", cls_shapes()}),
                         [](const auto& info) {
                           std::string f = info.param.file;
                           return f.find("det") != std::string::npos   ? std::string("det")
                                  : f.find("rec") != std::string::npos ? std::string("rec")
                                                                       : std::string("cls");
                         });

}  // namespace
}  // namespace steadyocr::graph

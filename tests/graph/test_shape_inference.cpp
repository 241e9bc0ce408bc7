// Shape and dtype inference per op, with unknown (-1) dims propagated and errors naming node and shapes.
#include <gtest/gtest.h>

#include "graph/shape_inference.h"

namespace steadyocr::graph {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Builds a one-node graph over fresh inputs (constants where given) and infers its output.
struct OneNode {
  Graph g;
  Node* n = nullptr;

  OneNode(OpKind op, std::vector<Shape> in_shapes, OpAttrs attrs = {}, std::vector<Tensor> constants = {},
          DType dtype = DType::kF32) {
    std::vector<Value*> ins;
    for (size_t i = 0; i < in_shapes.size(); ++i) {
      if (i < constants.size() && constants[i].defined()) {
        ins.push_back(g.add_constant("c" + std::to_string(i), constants[i]));
      } else {
        ins.push_back(g.add_value("in" + std::to_string(i), dtype, in_shapes[i]));
      }
    }
    n = g.add_node(op, "n", ins, {g.add_value("out")}, std::move(attrs));
  }
  Status infer() { return infer_node(*n); }
  const Shape& shape() const { return n->output()->shape; }
  DType dtype() const { return n->output()->dtype; }
};

TEST(ShapeInference, ConvAndUnknownDims) {
  ConvAttrs a;
  a.kernel = {3, 3};
  a.strides = {2, 1};
  a.pads = {1, 1, 1, 1};
  OneNode t(OpKind::kConv, {{-1, 8, 48, -1}, {16, 8, 3, 3}, {16}}, a);
  ASSERT_TRUE(t.infer().is_ok());
  EXPECT_EQ(t.shape(), (Shape{-1, 16, 24, -1}));

  a.group = 8;  // depthwise-ish: weight [16, 1, 3, 3]
  OneNode dw(OpKind::kConv, {{1, 8, 10, 10}, {16, 1, 3, 3}}, a);
  ASSERT_TRUE(dw.infer().is_ok());
  EXPECT_EQ(dw.shape(), (Shape{1, 16, 5, 10}));

  a.group = 1;
  a.dilations = {2, 2};
  a.strides = {1, 1};
  a.pads = {0, 0, 0, 0};
  OneNode dil(OpKind::kConv, {{1, 8, 10, 10}, {4, 8, 3, 3}}, a);
  ASSERT_TRUE(dil.infer().is_ok());
  EXPECT_EQ(dil.shape(), (Shape{1, 4, 6, 6}));
}

TEST(ShapeInference, ConvErrorsNameNodeAndShapes) {
  ConvAttrs a;
  a.kernel = {3, 3};
  OneNode t(OpKind::kConv, {{1, 4, 8, 8}, {16, 3, 3, 3}}, a);
  Status s = t.infer();
  ASSERT_FALSE(s.is_ok());
  EXPECT_TRUE(contains(s.message(), "Conv 'n'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "[1,4,8,8]")) << s.message();
  EXPECT_TRUE(contains(s.message(), "[16,3,3,3]")) << s.message();

  OneNode small(OpKind::kConv, {{1, 3, 2, 2}, {16, 3, 3, 3}}, a);
  s = small.infer();
  EXPECT_TRUE(contains(s.message(), "too small")) << s.message();

  OneNode bias(OpKind::kConv, {{1, 3, 8, 8}, {16, 3, 3, 3}, {8}}, a);
  EXPECT_TRUE(contains(bias.infer().message(), "bias")) << bias.infer().message();

  OneNode res(OpKind::kConv, {{1, 3, 8, 8}, {16, 3, 3, 3}, {16}, {1, 16, 5, 6}}, a);
  EXPECT_TRUE(contains(res.infer().message(), "residual")) << res.infer().message();
}

TEST(ShapeInference, ConvTransposeAndPools) {
  ConvTransposeAttrs ct;
  ct.kernel = {2, 2};
  ct.strides = {2, 2};
  OneNode t(OpKind::kConvTranspose, {{1, 24, 5, -1}, {24, 6, 2, 2}}, ct);
  ASSERT_TRUE(t.infer().is_ok());
  EXPECT_EQ(t.shape(), (Shape{1, 6, 10, -1}));
  ct.group = 2;
  OneNode g2(OpKind::kConvTranspose, {{1, 24, 5, 5}, {24, 6, 2, 2}}, ct);
  ASSERT_TRUE(g2.infer().is_ok());
  EXPECT_EQ(g2.shape(), (Shape{1, 12, 10, 10}));

  PoolAttrs p;
  p.kernel = {3, 2};
  p.strides = {3, 2};
  OneNode avg(OpKind::kAveragePool, {{2, 480, 3, 40}}, p);
  ASSERT_TRUE(avg.infer().is_ok());
  EXPECT_EQ(avg.shape(), (Shape{2, 480, 1, 20}));

  // ceil mode: a last window starting in the padding is dropped.
  p.kernel = {2, 2};
  p.strides = {2, 2};
  p.ceil_mode = true;
  OneNode ceil(OpKind::kMaxPool, {{1, 1, 5, 4}}, p);
  ASSERT_TRUE(ceil.infer().is_ok());
  EXPECT_EQ(ceil.shape(), (Shape{1, 1, 3, 2}));

  OneNode gap(OpKind::kGlobalAveragePool, {{-1, 7, 9, 9}});
  ASSERT_TRUE(gap.infer().is_ok());
  EXPECT_EQ(gap.shape(), (Shape{-1, 7, 1, 1}));
}

TEST(ShapeInference, BroadcastAndDtypes) {
  OneNode add(OpKind::kAdd, {{-1, 3, 1, 5}, {4, 1}});
  ASSERT_TRUE(add.infer().is_ok());
  EXPECT_EQ(add.shape(), (Shape{-1, 3, 4, 5}));

  OneNode unknown(OpKind::kMul, {{-1, 3}, {-1, 1}});
  ASSERT_TRUE(unknown.infer().is_ok());
  EXPECT_EQ(unknown.shape(), (Shape{-1, 3}));

  OneNode bad(OpKind::kSub, {{2, 3}, {4, 3}});
  Status s = bad.infer();
  EXPECT_TRUE(contains(s.message(), "cannot broadcast [2,3] with [4,3]")) << s.message();

  Graph g;
  Value* a = g.add_value("a", DType::kF32, {2});
  Value* b = g.add_value("b", DType::kI64, {2});
  Node* n = g.add_node(OpKind::kAdd, "mixed", {a, b}, {g.add_value("o")});
  s = infer_node(*n);
  EXPECT_TRUE(contains(s.message(), "operand types differ")) << s.message();

  OneNode shape(OpKind::kShape, {{-1, 3, 48, -1}});
  ASSERT_TRUE(shape.infer().is_ok());
  EXPECT_EQ(shape.shape(), (Shape{4}));
  EXPECT_EQ(shape.dtype(), DType::kI64);

  OneNode cast(OpKind::kCast, {{2, 3}}, CastAttrs{DType::kI32});
  ASSERT_TRUE(cast.infer().is_ok());
  EXPECT_EQ(cast.dtype(), DType::kI32);
  EXPECT_EQ(cast.shape(), (Shape{2, 3}));
}

TEST(ShapeInference, ReshapeForms) {
  ReshapeAttrs r;
  r.shape = {0, -1, 40};
  OneNode a(OpKind::kReshape, {{-1, 120, 1, 40}}, r);
  ASSERT_TRUE(a.infer().is_ok());
  EXPECT_EQ(a.shape(), (Shape{-1, 120, 40}));  // -1 inferred although dim 0 is unknown (it is copied)

  r.shape = {2, -1};
  OneNode b(OpKind::kReshape, {{-1, 6}}, r);
  ASSERT_TRUE(b.infer().is_ok());
  EXPECT_EQ(b.shape(), (Shape{2, -1}));

  r.shape = {4, 5};
  OneNode bad(OpKind::kReshape, {{3, 6}}, r);
  EXPECT_TRUE(contains(bad.infer().message(), "cannot reshape [3,6]")) << bad.infer().message();

  // Target from a constant input.
  OneNode c(OpKind::kReshape, {{2, 3, 4}, {2}}, ReshapeAttrs{}, {Tensor(), Tensor::from_int64s({2}, {-1, 4})});
  ASSERT_TRUE(c.infer().is_ok());
  EXPECT_EQ(c.shape(), (Shape{6, 4}));

  // Target computed at run time: only the rank is known.
  OneNode d(OpKind::kReshape, {{2, 3, 4}, {3}}, ReshapeAttrs{});
  d.n->input(1)->dtype = DType::kI64;
  ASSERT_TRUE(d.infer().is_ok());
  EXPECT_EQ(d.shape(), (Shape{-1, -1, -1}));
}

TEST(ShapeInference, TransposeMatMulSoftmaxReduce) {
  OneNode t(OpKind::kTranspose, {{2, 20, 3, 8, 15}}, TransposeAttrs{{2, 0, 3, 1, 4}});
  ASSERT_TRUE(t.infer().is_ok());
  EXPECT_EQ(t.shape(), (Shape{3, 2, 8, 20, 15}));
  OneNode bad(OpKind::kTranspose, {{2, 3}}, TransposeAttrs{{0, 0}});
  EXPECT_TRUE(contains(bad.infer().message(), "not a permutation")) << bad.infer().message();

  OneNode mm(OpKind::kMatMul, {{2, 8, 20, 15}, {2, 8, 15, 20}});
  ASSERT_TRUE(mm.infer().is_ok());
  EXPECT_EQ(mm.shape(), (Shape{2, 8, 20, 20}));
  OneNode w(OpKind::kMatMul, {{-1, 20, 120}, {120, 6625}});
  ASSERT_TRUE(w.infer().is_ok());
  EXPECT_EQ(w.shape(), (Shape{-1, 20, 6625}));
  OneNode vec(OpKind::kMatMul, {{5}, {3, 5, 2}});
  ASSERT_TRUE(vec.infer().is_ok());
  EXPECT_EQ(vec.shape(), (Shape{3, 2}));
  OneNode inner(OpKind::kMatMul, {{2, 3}, {4, 5}});
  EXPECT_TRUE(contains(inner.infer().message(), "inner dimensions differ")) << inner.infer().message();

  OneNode sm(OpKind::kSoftmax, {{2, 3}}, SoftmaxAttrs{3, true});
  EXPECT_TRUE(contains(sm.infer().message(), "axis 3")) << sm.infer().message();

  OneNode rm(OpKind::kReduceMean, {{2, 20, 120}}, ReduceAttrs{{-1}, true});
  ASSERT_TRUE(rm.infer().is_ok());
  EXPECT_EQ(rm.shape(), (Shape{2, 20, 1}));
  OneNode rm2(OpKind::kReduceMean, {{2, 20, 120}}, ReduceAttrs{{0, 2}, false});
  ASSERT_TRUE(rm2.infer().is_ok());
  EXPECT_EQ(rm2.shape(), (Shape{20}));
}

TEST(ShapeInference, SqueezeUnsqueezeSliceConcat) {
  OneNode sq(OpKind::kSqueeze, {{2, 120, 1, 40}}, AxesAttrs{{2}});
  ASSERT_TRUE(sq.infer().is_ok());
  EXPECT_EQ(sq.shape(), (Shape{2, 120, 40}));
  OneNode bad(OpKind::kSqueeze, {{2, 3}}, AxesAttrs{{1}});
  EXPECT_TRUE(contains(bad.infer().message(), "cannot squeeze")) << bad.infer().message();
  OneNode all(OpKind::kSqueeze, {{1, 3, 1}}, AxesAttrs{});
  ASSERT_TRUE(all.infer().is_ok());
  EXPECT_EQ(all.shape(), (Shape{3}));

  OneNode un(OpKind::kUnsqueeze, {{3, 4}}, AxesAttrs{{0, -1}});
  ASSERT_TRUE(un.infer().is_ok());
  EXPECT_EQ(un.shape(), (Shape{1, 3, 4, 1}));

  SliceAttrs s;
  s.starts = {-1, 0};
  s.ends = {INT64_MAX, 10};
  s.axes = {0, 2};
  s.steps = {1, 3};
  OneNode sl(OpKind::kSlice, {{4, 5, 10}}, s);
  ASSERT_TRUE(sl.infer().is_ok());
  EXPECT_EQ(sl.shape(), (Shape{1, 5, 4}));
  s.starts = {3};
  s.ends = {INT64_MIN};
  s.axes = {0};
  s.steps = {-1};
  OneNode rev(OpKind::kSlice, {{4}}, s);
  ASSERT_TRUE(rev.infer().is_ok());
  EXPECT_EQ(rev.shape(), (Shape{4}));
  s.starts = {0};
  s.ends = {1};
  s.steps = {1};
  OneNode unk(OpKind::kSlice, {{-1, 2}}, s);
  ASSERT_TRUE(unk.infer().is_ok());
  EXPECT_EQ(unk.shape(), (Shape{-1, 2}));

  OneNode cat(OpKind::kConcat, {{1, 96, -1, 40}, {1, 96, 24, -1}, {1, 96, 24, 40}}, AxisAttrs{1});
  ASSERT_TRUE(cat.infer().is_ok());
  EXPECT_EQ(cat.shape(), (Shape{1, 288, 24, 40}));
  OneNode catbad(OpKind::kConcat, {{1, 2, 3}, {1, 2, 4}}, AxisAttrs{1});
  EXPECT_TRUE(contains(catbad.infer().message(), "differ outside axis 1")) << catbad.infer().message();
}

TEST(ShapeInference, ResizeAndLayerNorm) {
  ResizeAttrs r;
  r.scales = {1.f, 1.f, 2.f, 2.f};
  OneNode rs(OpKind::kResize, {{1, 96, 3, -1}}, r);
  ASSERT_TRUE(rs.infer().is_ok());
  EXPECT_EQ(rs.shape(), (Shape{1, 96, 6, -1}));
  r.scales = {1.f, 1.f, 2.f};
  OneNode bad(OpKind::kResize, {{1, 96, 3, 5}}, r);
  EXPECT_FALSE(bad.infer().is_ok());

  OneNode ln(OpKind::kLayerNorm, {{2, 20, 120}, {120}, {120}}, LayerNormAttrs{-1, 1e-5f});
  ASSERT_TRUE(ln.infer().is_ok());
  EXPECT_EQ(ln.shape(), (Shape{2, 20, 120}));
  OneNode lnbad(OpKind::kLayerNorm, {{2, 20, 120}, {60}}, LayerNormAttrs{-1, 1e-5f});
  EXPECT_TRUE(contains(lnbad.infer().message(), "[60]")) << lnbad.infer().message();
}

TEST(ShapeInference, WrongAttributeKindIsAnErrorNotACrash) {
  OneNode t(OpKind::kConv, {{1, 3, 8, 8}, {4, 3, 3, 3}}, PoolAttrs{});
  Status s = t.infer();
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(contains(s.message(), "wrong kind")) << s.message();
}

TEST(ShapeInference, InferShapesPropagatesThroughGraph) {
  Graph g;
  Value* x = g.add_value("x", DType::kF32, {1, 3, 8, 8});
  Value* w = g.add_constant("w", Tensor::zeros(DType::kF32, {4, 3, 1, 1}));
  Value* c = g.add_value("c");
  Value* r = g.add_value("r");
  ConvAttrs a;
  a.kernel = {1, 1};
  // Added out of order: infer_shapes toposorts first.
  g.add_node(OpKind::kRelu, "relu", {c}, {r}, ActAttrs{Activation::relu()});
  g.add_node(OpKind::kConv, "conv", {x, w}, {c}, a);
  g.inputs().push_back(x);
  g.outputs().push_back(r);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  EXPECT_EQ(r->shape, (Shape{1, 4, 8, 8}));
  EXPECT_EQ(g.nodes()[0]->name, "conv");
}

}  // namespace
}  // namespace steadyocr::graph

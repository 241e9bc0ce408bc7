// Each rewrite rule on small hand-built graphs: what it changes, what it must leave alone, and that the
// rewritten graph computes the same as the original on the reference backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "graph/passes/passes.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"
#include "graph_test_util.h"

namespace steadyocr::graph {
namespace {

using testing::expect_same_outputs;
using testing::random_tensor;

class Builder {
 public:
  Value* input(const std::string& name, const Shape& shape) {
    Value* v = g.add_value(name, DType::kF32, shape);
    g.inputs().push_back(v);
    return v;
  }
  Value* constant(const std::string& name, Tensor t) { return g.add_constant(name, std::move(t)); }
  Value* scalar(const std::string& name, float v) { return g.add_constant(name, Tensor::scalar_f32(v)); }
  Value* op(OpKind kind, const std::string& name, std::vector<Value*> ins, OpAttrs attrs = {}) {
    Value* out = g.add_value(name);
    Node* n = g.add_node(kind, name, std::move(ins), {out}, std::move(attrs));
    Status s = infer_node(*n);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return out;
  }
  Value* conv(const std::string& name, Value* x, int64_t out_channels, int64_t k = 3, bool bias = true,
              int64_t group = 1) {
    const int64_t c = x->shape[1];
    ConvAttrs a;
    a.kernel = {k, k};
    a.pads = {k / 2, k / 2, k / 2, k / 2};
    a.group = group;
    std::vector<Value*> ins = {x, constant(name + "_w", random_tensor({out_channels, c / group, k, k}, seed_++))};
    if (bias) ins.push_back(constant(name + "_b", random_tensor({out_channels}, seed_++)));
    return op(OpKind::kConv, name, ins, a);
  }
  void output(Value* v) { g.outputs().push_back(v); }
  std::map<std::string, int> ops() const { return g.op_histogram(); }

  Graph g;

 private:
  uint32_t seed_ = 100;
};

// Runs `pass`, checks it reports `expect_change`, verifies the graph and compares numerics with the original.
template <typename Pass>
void apply_and_check(Graph& g, Pass pass, bool expect_change, const std::vector<Tensor>& inputs,
                     double max_nmse = 1e-10) {
  Graph before = g.clone();
  auto changed = pass(g);
  ASSERT_TRUE(changed.is_ok()) << changed.status().to_string();
  EXPECT_EQ(*changed, expect_change);
  Status v = verify(g, {true});
  ASSERT_TRUE(v.is_ok()) << v.to_string();
  expect_same_outputs(before, g, inputs, max_nmse);
}

Tensor bn_param(int64_t c, uint32_t seed, float lo, float hi) {
  return random_tensor({c}, seed, lo, hi);
}

void add_batchnorm(Builder& b, Value*& x, const std::string& name, int64_t c) {
  x = b.op(OpKind::kBatchNorm, name,
           {x, b.constant(name + "_s", bn_param(c, 1, 0.5f, 2.f)), b.constant(name + "_b", bn_param(c, 2, -1, 1)),
            b.constant(name + "_m", bn_param(c, 3, -1, 1)), b.constant(name + "_v", bn_param(c, 4, 0.1f, 3.f))},
           BatchNormAttrs{1e-5f});
}

// ---- fold_constants / specialize ----

TEST(FoldConstants, ShapeChainFoldsAfterSpecialize) {
  Builder b;
  Value* x = b.input("x", {-1, 6});
  Value* s = b.op(OpKind::kShape, "shape", {x});
  SliceAttrs sl;
  sl.starts = {0};
  sl.ends = {1};
  sl.axes = {0};
  sl.steps = {1};
  Value* n = b.op(OpKind::kSlice, "slice", {s}, sl);
  Value* n32 = b.op(OpKind::kCast, "to_i32", {n}, CastAttrs{DType::kI32});
  Value* n64 = b.op(OpKind::kCast, "to_i64", {n32}, CastAttrs{DType::kI64});
  Value* target =
      b.op(OpKind::kConcat, "target", {n64, b.constant("tail", Tensor::from_int64s({2}, {2, 3}))}, AxisAttrs{0});
  Value* y = b.op(OpKind::kReshape, "reshape", {x, target}, ReshapeAttrs{});
  b.output(b.op(OpKind::kRelu, "relu", {y}, ActAttrs{Activation::relu()}));
  EXPECT_EQ(b.g.node_count(), 7u);
  ASSERT_TRUE(specialize(b.g, {{4, 6}}, testing::ref_passes()).is_ok());
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}}));
  const Node* r = b.g.nodes()[0].get();
  ASSERT_EQ(r->op, OpKind::kReshape);
  EXPECT_EQ(r->inputs.size(), 1u);  // the folded target moved into the attribute
  EXPECT_EQ(r->attr<ReshapeAttrs>().shape, (std::vector<int64_t>{4, 2, 3}));
  EXPECT_EQ(b.g.outputs()[0]->shape, (Shape{4, 2, 3}));
  Tensor in = random_tensor({4, 6}, 5);
  auto out = testing::run_graph(b.g, {in});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out[0].data<float>()[i], std::max(in.data<float>()[i], 0.f));
}

TEST(FoldConstants, RespectsTheSizeCap) {
  Builder b;
  Value* x = b.input("x", {1000});
  Value* k = b.op(OpKind::kMul, "k", {b.constant("a", random_tensor({1000}, 1)), b.scalar("two", 2.f)});
  b.output(b.op(OpKind::kAdd, "y", {x, k}));
  PassOptions capped = testing::ref_passes();
  capped.max_fold_bytes = 1000;
  auto r = fold_constants(b.g, capped);  // the folded tensor would be 4000 bytes
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(b.g.node_count(), 2u);
  apply_and_check(b.g, [](Graph& g) { return fold_constants(g, testing::ref_passes()); }, true,
                  {random_tensor({1000}, 2)});
  EXPECT_EQ(b.g.node_count(), 1u);
  const Value* folded = b.g.nodes()[0]->input(1);
  ASSERT_TRUE(folded->is_constant());
  EXPECT_EQ(folded->constant.shape(), (Shape{1000}));
}

TEST(Specialize, RejectsShapesTheModelCannotTake) {
  Builder b;
  Value* x = b.input("x", {-1, 3, 48, -1});
  b.output(b.conv("conv", x, 4));
  Graph g2 = b.g.clone();
  Status s = specialize(b.g, {{1, 4, 48, 100}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input 'x' was given shape [1,4,48,100] but the model expects [?,3,48,?]"),
            std::string::npos)
      << s.message();
  s = specialize(g2, {{1, 3, 48, 100}, {1}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1 input(s) but 2 shape(s)"), std::string::npos) << s.message();
  ASSERT_TRUE(specialize(g2, {{2, 3, 48, 100}}, testing::ref_passes()).is_ok());
  EXPECT_EQ(g2.outputs()[0]->shape, (Shape{2, 4, 48, 100}));
}

// ---- fold_batchnorm / fold_conv_affine ----

TEST(FoldBatchNorm, ConvWithAndWithoutBias) {
  for (bool bias : {true, false}) {
    Builder b;
    Value* x = b.input("x", {2, 4, 6, 5});
    Value* y = b.conv("conv", x, 8, 3, bias);
    add_batchnorm(b, y, "bn", 8);
    b.output(b.op(OpKind::kRelu, "relu", {y}, ActAttrs{Activation::relu()}));
    const Value* w = b.g.find_value("conv_w");
    Tensor w_copy = w->constant.clone();
    Graph shared = b.g.clone();  // shares constant storage with b.g
    apply_and_check(b.g, fold_batchnorm, true, {random_tensor({2, 4, 6, 5}, 9)});
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
    // The original weight tensor (shared with the clone) is untouched.
    EXPECT_EQ(std::memcmp(shared.find_value("conv_w")->constant.raw(), w_copy.raw(), w_copy.nbytes()), 0);
    EXPECT_EQ(b.g.nodes()[0]->inputs.size(), 3u);
  }
}

TEST(FoldBatchNorm, ConvTransposeGrouped) {
  Builder b;
  Value* x = b.input("x", {1, 4, 3, 3});
  ConvTransposeAttrs a;
  a.kernel = {2, 2};
  a.strides = {2, 2};
  a.group = 2;
  Value* y = b.op(OpKind::kConvTranspose, "deconv", {x, b.constant("w", random_tensor({4, 3, 2, 2}, 11))}, a);
  add_batchnorm(b, y, "bn", 6);
  b.output(y);
  apply_and_check(b.g, fold_batchnorm, true, {random_tensor({1, 4, 3, 3}, 12)});
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"ConvTranspose", 1}}));
}

TEST(FoldBatchNorm, LeavesSharedOrFusedConvsAlone) {
  {  // conv output read by a second node
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* c = b.conv("conv", x, 2);
    Value* y = c;
    add_batchnorm(b, y, "bn", 2);
    b.output(b.op(OpKind::kAdd, "sum", {y, c}));
    apply_and_check(b.g, fold_batchnorm, false, {random_tensor({1, 2, 4, 4}, 1)});
    EXPECT_EQ(b.ops()["BatchNormalization"], 1);
  }
  {  // conv output is a graph output
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* c = b.conv("conv", x, 2);
    Value* y = c;
    add_batchnorm(b, y, "bn", 2);
    b.output(y);
    b.output(c);
    apply_and_check(b.g, fold_batchnorm, false, {random_tensor({1, 2, 4, 4}, 1)});
  }
  {  // conv already carries an activation
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* y = b.conv("conv", x, 2);
    b.g.nodes()[0]->attr<ConvAttrs>().act = Activation::relu();
    add_batchnorm(b, y, "bn", 2);
    b.output(y);
    apply_and_check(b.g, fold_batchnorm, false, {random_tensor({1, 2, 4, 4}, 1)});
  }
}

TEST(FoldConvAffine, ScaleAndShiftChains) {
  Builder b;
  Value* x = b.input("x", {1, 3, 5, 5});
  Value* y = b.conv("conv", x, 4, 3, false);
  y = b.op(OpKind::kMul, "scale", {b.constant("s", Tensor::from_floats({1}, {1.7f})), y});
  y = b.op(OpKind::kAdd, "shift", {y, b.constant("t", random_tensor({1, 4, 1, 1}, 3))});
  y = b.op(OpKind::kDiv, "div", {y, b.constant("d", random_tensor({4, 1, 1}, 4, 0.5f, 2.f))});
  y = b.op(OpKind::kSub, "sub", {y, b.scalar("u", 0.25f)});
  b.output(b.op(OpKind::kHardSwish, "act", {y}, ActAttrs{Activation::hard_swish()}));
  apply_and_check(b.g, fold_conv_affine, true, {random_tensor({1, 3, 5, 5}, 5)});
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Conv", 1}, {"HardSwish", 1}}));
}

TEST(FoldConvAffine, LeavesNonChannelBroadcastsAlone) {
  Builder b;
  Value* x = b.input("x", {1, 3, 5, 5});
  Value* y = b.conv("conv", x, 5, 3, false);
  // [5] broadcasts along W, not along channels.
  y = b.op(OpKind::kMul, "scale_w", {y, b.constant("s", random_tensor({5}, 3))});
  Value* z = b.conv("conv2", x, 5, 3, false);
  z = b.op(OpKind::kSub, "rsub", {b.scalar("one", 1.f), z});  // c - conv negates: not handled
  b.output(b.op(OpKind::kAdd, "y", {y, z}));
  apply_and_check(b.g, fold_conv_affine, false, {random_tensor({1, 3, 5, 5}, 5)});
}

TEST(FoldConvInputAffine, UnpaddedConvsAbsorbTheAffine) {
  for (int64_t group : {1, 2}) {
    Builder b;
    Value* x = b.input("x", {1, 4, 5, 5});
    Value* y = b.op(OpKind::kMul, "scale", {x, b.constant("s", random_tensor({1, 4, 1, 1}, 3, 0.5f, 2.f))});
    y = b.op(OpKind::kAdd, "shift", {b.scalar("t", 0.3f), y});
    y = b.op(OpKind::kSub, "sub", {y, b.constant("u", random_tensor({4, 1, 1}, 4))});
    ConvAttrs a;
    a.kernel = {3, 3};
    a.group = group;
    a.strides = {2, 1};
    Value* w = b.constant("w", random_tensor({6, 4 / group, 3, 3}, 5));
    b.output(b.op(OpKind::kConv, "conv", {y, w}, a));
    apply_and_check(b.g, fold_conv_input_affine, true, {random_tensor({1, 4, 5, 5}, 6)});
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Conv", 1}})) << "group " << group;
  }
}

TEST(FoldConvInputAffine, PaddedOrSharedInputsAreLeftAlone) {
  Builder b;
  Value* x = b.input("x", {1, 4, 5, 5});
  Value* y = b.op(OpKind::kAdd, "shift", {x, b.scalar("t", 0.3f)});
  b.output(b.conv("padded", y, 4));  // 3x3 with padding 1: the border would see the shift
  Value* z = b.op(OpKind::kMul, "scale", {x, b.scalar("s", 2.f)});
  b.output(b.conv("pw", z, 4, 1));
  b.output(z);  // z is also a graph output
  apply_and_check(b.g, fold_conv_input_affine, false, {random_tensor({1, 4, 5, 5}, 6)});
}

// ---- fuse_hardswish ----

enum class HsForm { kDivAfter, kMulSixthAfter, kDivInside, kMulSixthInsideSwapped };

void build_hardswish(Builder& b, Value* x, HsForm form) {
  Value* a = b.op(OpKind::kAdd, "plus3", {b.scalar("three", 3.f), x});
  Value* c = b.op(OpKind::kClip, "clip", {a}, ActAttrs{Activation::clip(0.f, 6.f)});
  Value* y = nullptr;
  switch (form) {
    case HsForm::kDivAfter:
      y = b.op(OpKind::kDiv, "div", {b.op(OpKind::kMul, "mul", {x, c}), b.scalar("six", 6.f)});
      break;
    case HsForm::kMulSixthAfter:
      y = b.op(OpKind::kMul, "sixth", {b.scalar("k", 1.f / 6.f), b.op(OpKind::kMul, "mul", {c, x})});
      break;
    case HsForm::kDivInside:
      y = b.op(OpKind::kMul, "mul", {x, b.op(OpKind::kDiv, "div", {c, b.scalar("six", 6.f)})});
      break;
    case HsForm::kMulSixthInsideSwapped:
      y = b.op(OpKind::kMul, "mul", {b.op(OpKind::kMul, "sixth", {c, b.scalar("k", 1.f / 6.f)}), x});
      break;
  }
  b.output(y);
}

TEST(FuseHardSwish, AllOperandOrders) {
  for (HsForm form : {HsForm::kDivAfter, HsForm::kMulSixthAfter, HsForm::kDivInside, HsForm::kMulSixthInsideSwapped}) {
    Builder b;
    Value* x = b.input("x", {2, 3, 4, 5});
    build_hardswish(b, x, form);
    apply_and_check(b.g, fuse_hardswish, true, {random_tensor({2, 3, 4, 5}, 8, -5.f, 5.f)}, 1e-12);
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"HardSwish", 1}})) << static_cast<int>(form);
    EXPECT_EQ(b.g.outputs()[0]->name, b.g.nodes()[0]->output()->name);
  }
}

TEST(FuseHardSwish, HardSigmoidForm) {
  Builder b;
  Value* x = b.input("x", {2, 8});
  Value* h = b.op(OpKind::kHardSigmoid, "hs", {x}, ActAttrs{Activation::hard_sigmoid(0.1666667f, 0.5f)});
  b.output(b.op(OpKind::kMul, "mul", {h, x}));
  apply_and_check(b.g, fuse_hardswish, true, {random_tensor({2, 8}, 8, -5.f, 5.f)}, 1e-12);
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"HardSwish", 1}}));
}

TEST(FuseHardSwish, NearMissesAreLeftAlone) {
  {  // clip to 5, not 6
    Builder b;
    Value* x = b.input("x", {4});
    Value* a = b.op(OpKind::kAdd, "plus3", {x, b.scalar("three", 3.f)});
    Value* c = b.op(OpKind::kClip, "clip", {a}, ActAttrs{Activation::clip(0.f, 5.f)});
    b.output(b.op(OpKind::kDiv, "div", {b.op(OpKind::kMul, "mul", {x, c}), b.scalar("six", 6.f)}));
    apply_and_check(b.g, fuse_hardswish, false, {random_tensor({4}, 1, -5.f, 5.f)});
  }
  {  // the clip output is read elsewhere too
    Builder b;
    Value* x = b.input("x", {4});
    Value* a = b.op(OpKind::kAdd, "plus3", {x, b.scalar("three", 3.f)});
    Value* c = b.op(OpKind::kClip, "clip", {a}, ActAttrs{Activation::clip(0.f, 6.f)});
    b.output(b.op(OpKind::kDiv, "div", {b.op(OpKind::kMul, "mul", {x, c}), b.scalar("six", 6.f)}));
    b.output(c);
    apply_and_check(b.g, fuse_hardswish, false, {random_tensor({4}, 1, -5.f, 5.f)});
  }
  {  // multiplies a different tensor (squeeze-excite style), and HardSigmoid with alpha 0.2
    Builder b;
    Value* x = b.input("x", {4});
    Value* z = b.input("z", {4});
    Value* h = b.op(OpKind::kHardSigmoid, "hs", {x}, ActAttrs{Activation::hard_sigmoid(1.f / 6.f, 0.5f)});
    Value* h2 = b.op(OpKind::kHardSigmoid, "hs2", {x}, ActAttrs{Activation::hard_sigmoid(0.2f, 0.5f)});
    b.output(b.op(OpKind::kMul, "se", {z, h}));
    b.output(b.op(OpKind::kMul, "m2", {x, h2}));
    apply_and_check(b.g, fuse_hardswish, false, {random_tensor({4}, 1), random_tensor({4}, 2)});
  }
  {  // the +3 constant broadcasts x to a larger shape
    Builder b;
    Value* x = b.input("x", {4});
    Value* a = b.op(OpKind::kAdd, "plus3", {x, b.constant("three", Tensor::from_floats({2, 1}, {3.f, 3.f}))});
    Value* c = b.op(OpKind::kClip, "clip", {a}, ActAttrs{Activation::clip(0.f, 6.f)});
    b.output(b.op(OpKind::kDiv, "div", {b.op(OpKind::kMul, "mul", {x, c}), b.scalar("six", 6.f)}));
    apply_and_check(b.g, fuse_hardswish, false, {random_tensor({4}, 1, -5.f, 5.f)});
  }
}

// ---- fuse_conv_activation / fuse_conv_residual ----

TEST(FuseConvActivation, EachActivationKind) {
  const std::vector<std::pair<OpKind, Activation>> acts = {{OpKind::kRelu, Activation::relu()},
                                                           {OpKind::kSigmoid, Activation::sigmoid()},
                                                           {OpKind::kHardSigmoid, Activation::hard_sigmoid(0.2f, 0.5f)},
                                                           {OpKind::kHardSwish, Activation::hard_swish()},
                                                           {OpKind::kClip, Activation::clip(0.f, 6.f)}};
  for (const auto& [op, act] : acts) {
    Builder b;
    Value* x = b.input("x", {1, 3, 6, 6});
    b.output(b.op(op, "act", {b.conv("conv", x, 4)}, ActAttrs{act}));
    apply_and_check(b.g, fuse_conv_activation, true, {random_tensor({1, 3, 6, 6}, 4, -3.f, 3.f)}, 1e-12);
    ASSERT_EQ(b.g.node_count(), 1u);
    EXPECT_EQ(b.g.nodes()[0]->attr<ConvAttrs>().act, act);
    EXPECT_EQ(b.g.outputs()[0]->name, "act");
  }
  // ConvTranspose too.
  Builder b;
  Value* x = b.input("x", {1, 2, 3, 3});
  ConvTransposeAttrs a;
  a.kernel = {2, 2};
  a.strides = {2, 2};
  Value* y = b.op(OpKind::kConvTranspose, "deconv", {x, b.constant("w", random_tensor({2, 2, 2, 2}, 3))}, a);
  b.output(b.op(OpKind::kSigmoid, "sig", {y}, ActAttrs{Activation::sigmoid()}));
  apply_and_check(b.g, fuse_conv_activation, true, {random_tensor({1, 2, 3, 3}, 4)}, 1e-12);
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"ConvTranspose", 1}}));
}

TEST(FuseConvActivation, SharedOutputIsLeftAlone) {
  Builder b;
  Value* x = b.input("x", {1, 3, 6, 6});
  Value* c = b.conv("conv", x, 4);
  Value* r = b.op(OpKind::kRelu, "relu", {c}, ActAttrs{Activation::relu()});
  b.output(b.op(OpKind::kAdd, "y", {r, c}));
  apply_and_check(b.g, fuse_conv_activation, false, {random_tensor({1, 3, 6, 6}, 4)});
}

TEST(FuseConvResidual, AddBecomesResidualThenActivationFuses) {
  Builder b;
  Value* x = b.input("x", {1, 4, 5, 5});
  Value* skip = b.op(OpKind::kSigmoid, "skip", {x}, ActAttrs{Activation::sigmoid()});
  Value* c = b.conv("conv", x, 4);
  Value* s = b.op(OpKind::kAdd, "add", {skip, c});
  b.output(b.op(OpKind::kRelu, "relu", {s}, ActAttrs{Activation::relu()}));
  const std::vector<Tensor> in = {random_tensor({1, 4, 5, 5}, 6)};
  apply_and_check(b.g, fuse_conv_residual, true, in, 1e-12);
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}, {"Sigmoid", 1}}));
  apply_and_check(b.g, fuse_conv_activation, true, in, 1e-12);
  ASSERT_EQ(b.g.node_count(), 2u);
  const Node* conv = b.g.nodes()[1].get();
  ASSERT_EQ(conv->op, OpKind::kConv);
  EXPECT_EQ(conv->input(3)->name, "skip");
  EXPECT_EQ(conv->attr<ConvAttrs>().act, Activation::relu());
}

TEST(FuseConvResidual, ResidualWithoutBiasAndProducedLater) {
  Builder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Value* c = b.conv("conv", x, 2, 1, false);
  Value* later = b.op(OpKind::kRelu, "later", {x}, ActAttrs{Activation::relu()});  // after the conv in order
  b.output(b.op(OpKind::kAdd, "add", {c, later}));
  apply_and_check(b.g, fuse_conv_residual, true, {random_tensor({1, 2, 4, 4}, 6)}, 1e-12);
  const Node* conv = b.g.nodes().back().get();
  ASSERT_EQ(conv->op, OpKind::kConv);
  EXPECT_EQ(conv->inputs.size(), 4u);
  EXPECT_EQ(conv->input(2), nullptr);
}

TEST(FuseConvResidual, BroadcastAddIsLeftAlone) {
  Builder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  Value* z = b.input("z", {1, 2, 1, 1});
  b.output(b.op(OpKind::kAdd, "add", {b.conv("conv", x, 2), z}));
  apply_and_check(b.g, fuse_conv_residual, false, {random_tensor({1, 2, 4, 4}, 6), random_tensor({1, 2, 1, 1}, 7)});
}

// ---- fuse_epilogues / expand_epilogues ----

Result<bool> fuse_epilogues_default(Graph& g) {
  return fuse_epilogues(g, PassOptions{});
}

// Expanding a fused graph gives back the graph it came from: same ops, names and results, bit for bit.
void expect_expands_to(const Graph& original, const Graph& fused, const std::vector<Tensor>& inputs) {
  Graph expanded = fused.clone();
  EXPECT_GT(expand_epilogues(expanded), 0u);
  ASSERT_TRUE(verify(expanded, {true}).is_ok());
  EXPECT_EQ(expanded.op_histogram(), original.op_histogram());
  for (const auto& n : original.nodes()) {
    bool found = false;
    for (const auto& m : expanded.nodes()) {
      if (m->name != n->name) continue;
      found = true;
      EXPECT_EQ(m->op, n->op) << n->name;
      ASSERT_EQ(m->inputs.size(), n->inputs.size()) << n->name;
      for (size_t i = 0; i < n->inputs.size(); ++i) {
        EXPECT_EQ(m->inputs[i] ? m->inputs[i]->name : "", n->inputs[i] ? n->inputs[i]->name : "") << n->name;
      }
      EXPECT_EQ(m->output()->name, n->output()->name);
    }
    EXPECT_TRUE(found) << n->name;
  }
  auto a = testing::run_graph(original, inputs);
  auto b = testing::run_graph(fused, inputs);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].nbytes(), b[i].nbytes());
    EXPECT_EQ(std::memcmp(a[i].raw(), b[i].raw(), a[i].nbytes()), 0) << "output " << i;
  }
}

// PPLCNetV3's block as exported: scalar affine, HardSwish, per-channel add, residual, Relu after a depthwise conv.
TEST(FuseEpilogues, ConvChainBecomesStages) {
  Builder b;
  Value* x = b.input("x", {1, 4, 5, 5});
  Value* c = b.conv("conv", x, 4, 3, true, 4);
  Value* m = b.op(OpKind::kMul, "scale", {b.scalar("k", 0.8f), c});
  Value* a = b.op(OpKind::kAdd, "shift", {m, b.scalar("c", 0.3f)});
  Value* h = b.op(OpKind::kHardSwish, "hs", {a}, ActAttrs{Activation::hard_swish()});
  Value* pc = b.op(OpKind::kAdd, "bias", {h, b.constant("per_c", random_tensor({4, 1, 1}, 9))});
  Value* r = b.op(OpKind::kAdd, "skip", {pc, x});
  b.output(b.op(OpKind::kRelu, "relu", {r}, ActAttrs{Activation::relu()}));
  Graph original = b.g.clone();
  const std::vector<Tensor> in = {random_tensor({1, 4, 5, 5}, 3, -2.f, 2.f)};
  apply_and_check(b.g, fuse_epilogues_default, true, in, 0.0);
  ASSERT_EQ(b.g.node_count(), 1u);
  const Node& n = *b.g.nodes()[0];
  EXPECT_EQ(n.output()->name, "relu");
  using Role = EpilogueStage::Role;
  std::vector<Role> roles;
  for (const EpilogueStage& st : n.epilogue.stages) roles.push_back(st.role);
  EXPECT_EQ(roles, (std::vector<Role>{Role::kScalar, Role::kScalar, Role::kPointwise, Role::kPerChannel,
                                      Role::kResidual, Role::kPointwise}));
  EXPECT_EQ(n.epilogue.head, "conv");
  EXPECT_EQ(n.epilogue.stages[0].operands[0].kind, EpilogueStage::Operand::Kind::kInput);  // the scalar on the left
  EXPECT_EQ(n.input(n.epilogue.stages[4].operands[1].index), x);
  expect_expands_to(original, b.g, in);
}

// x*sigmoid(x) after a conv (the exporter's Mul by 1 in front) and after a MatMul's bias.
TEST(FuseEpilogues, Swish) {
  Builder b;
  Value* x = b.input("x", {1, 3, 4, 4});
  Value* c = b.conv("conv", x, 6, 1);
  Value* one = b.op(OpKind::kMul, "one", {c, b.scalar("k1", 1.f)});
  Value* s = b.op(OpKind::kSigmoid, "gate", {one}, ActAttrs{Activation::sigmoid()});
  Value* sw = b.op(OpKind::kMul, "swish", {c, s});
  b.output(sw);
  Graph original = b.g.clone();
  const std::vector<Tensor> in = {random_tensor({1, 3, 4, 4}, 5, -3.f, 3.f)};
  apply_and_check(b.g, fuse_epilogues_default, true, in, 0.0);
  ASSERT_EQ(b.g.node_count(), 1u);
  using Role = EpilogueStage::Role;
  std::vector<Role> roles;
  for (const EpilogueStage& st : b.g.nodes()[0]->epilogue.stages) roles.push_back(st.role);
  EXPECT_EQ(roles, (std::vector<Role>{Role::kSwishScale, Role::kSwishGate, Role::kSwishProduct}));
  expect_expands_to(original, b.g, in);

  Builder mb;
  Value* t = mb.input("t", {2, 5, 8});
  Value* mm = mb.op(OpKind::kMatMul, "mm", {t, mb.constant("w", random_tensor({8, 6}, 2))});
  Value* bias = mb.op(OpKind::kAdd, "bias", {mm, mb.constant("b", random_tensor({6}, 3))});
  Value* g2 = mb.op(OpKind::kSigmoid, "gate", {bias}, ActAttrs{Activation::sigmoid()});
  mb.output(mb.op(OpKind::kMul, "swish", {g2, bias}));
  Graph morig = mb.g.clone();
  const std::vector<Tensor> tin = {random_tensor({2, 5, 8}, 4)};
  apply_and_check(mb.g, fuse_epilogues_default, true, tin, 0.0);
  ASSERT_EQ(mb.g.node_count(), 1u);
  EXPECT_EQ(mb.g.nodes()[0]->epilogue.channel_axis, 2);
  EXPECT_EQ(mb.g.nodes()[0]->epilogue.stages.size(), 3u);  // per-channel bias, gate, product
  expect_expands_to(morig, mb.g, tin);
}

TEST(FuseEpilogues, WhatMustStayANode) {
  // A graph output in the middle of the chain ends it.
  {
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* c = b.conv("conv", x, 2);
    Value* m = b.op(OpKind::kMul, "m", {c, b.scalar("k", 2.f)});
    b.output(m);
    b.output(b.op(OpKind::kRelu, "relu", {m}, ActAttrs{Activation::relu()}));
    apply_and_check(b.g, fuse_epilogues_default, true, {random_tensor({1, 2, 4, 4}, 1)}, 0.0);
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Conv", 1}, {"Relu", 1}}));
  }
  // Two readers that are no swish; a constant broadcast along another axis than the channels.
  {
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* c = b.conv("conv", x, 2);
    b.output(b.op(OpKind::kAdd, "y", {b.op(OpKind::kRelu, "r", {c}, ActAttrs{Activation::relu()}), c}));
    apply_and_check(b.g, fuse_epilogues_default, false, {random_tensor({1, 2, 4, 4}, 1)});
    Builder d;
    Value* dx = d.input("x", {1, 2, 4, 4});
    d.output(d.op(OpKind::kMul, "rows", {d.conv("conv", dx, 2), d.constant("r", random_tensor({4, 1}, 2))}));
    apply_and_check(d.g, fuse_epilogues_default, false, {random_tensor({1, 2, 4, 4}, 1)});
  }
  // A residual produced after the conv in the node order is not available when the conv runs.
  {
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    Value* c = b.conv("conv", x, 2, 1, false);
    Value* later = b.op(OpKind::kSigmoid, "later", {x}, ActAttrs{Activation::sigmoid()});
    b.output(b.op(OpKind::kAdd, "add", {c, later}));
    apply_and_check(b.g, fuse_epilogues_default, false, {random_tensor({1, 2, 4, 4}, 6)});
  }
  // Options off keep their kinds of stage out.
  {
    Builder b;
    Value* x = b.input("x", {1, 2, 4, 4});
    b.output(b.op(OpKind::kRelu, "relu", {b.conv("conv", x, 2)}, ActAttrs{Activation::relu()}));
    PassOptions off;
    off.fuse_activations = false;
    auto r = fuse_epilogues(b.g, off);
    ASSERT_TRUE(r.is_ok());
    EXPECT_FALSE(*r);
  }
}

TEST(FuseEpilogues, VerifierChecksStages) {
  Builder b;
  Value* x = b.input("x", {1, 2, 4, 4});
  b.output(
      b.op(OpKind::kSqrt, "root", {b.op(OpKind::kRelu, "relu", {b.conv("conv", x, 2)}, ActAttrs{Activation::relu()})}));
  ASSERT_TRUE(fuse_epilogues(b.g, {}).is_ok());
  ASSERT_EQ(b.g.node_count(), 1u);
  EXPECT_TRUE(verify(b.g, {true}).is_ok());
  Node& n = *b.g.nodes()[0];
  n.epilogue.stages[1].operands[0] = {EpilogueStage::Operand::Kind::kStage, 1};  // reads itself
  Status s = verify(b.g, {true});
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("epilogue stage 1 ('root')"), std::string::npos) << s.message();
}

// ---- fuse_layernorm ----

Value* build_layernorm(Builder& b, Value* x, bool square_as_mul, Value* gamma, Value* beta) {
  Value* m = b.op(OpKind::kReduceMean, "mean", {x}, ReduceAttrs{{-1}, true});
  Value* d = b.op(OpKind::kSub, "sub", {x, m});
  Value* p = square_as_mul ? b.op(OpKind::kMul, "sq", {d, d}) : b.op(OpKind::kPow, "sq", {d, b.scalar("two", 2.f)});
  Value* v = b.op(OpKind::kReduceMean, "var", {p}, ReduceAttrs{{-1}, true});
  Value* e = b.op(OpKind::kAdd, "eps", {v, b.scalar("epsilon", 1e-6f)});
  Value* y = b.op(OpKind::kDiv, "norm", {d, b.op(OpKind::kSqrt, "sqrt", {e})});
  if (gamma) y = b.op(OpKind::kMul, "scale", {gamma, y});
  if (beta) y = b.op(OpKind::kAdd, "shift", {y, beta});
  return y;
}

TEST(FuseLayerNorm, FullPatternBothSquareForms) {
  for (bool square_as_mul : {false, true}) {
    Builder b;
    Value* x = b.input("x", {2, 5, 12});
    Value* gamma = b.constant("gamma", random_tensor({12}, 1));
    Value* beta = b.constant("beta", random_tensor({1, 1, 12}, 2));
    b.output(
        b.op(OpKind::kRelu, "out", {build_layernorm(b, x, square_as_mul, gamma, beta)}, ActAttrs{Activation::relu()}));
    apply_and_check(b.g, fuse_layernorm, true, {random_tensor({2, 5, 12}, 3, -4.f, 4.f)}, 1e-11);
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"LayerNormalization", 1}, {"Relu", 1}}));
    const Node* ln = b.g.nodes()[0].get();
    EXPECT_EQ(ln->attr<LayerNormAttrs>().axis, -1);
    EXPECT_FLOAT_EQ(ln->attr<LayerNormAttrs>().epsilon, 1e-6f);
    ASSERT_EQ(ln->inputs.size(), 3u);
    EXPECT_EQ(ln->input(2)->shape, (Shape{12}));
  }
}

TEST(FuseLayerNorm, WithoutAffine) {
  Builder b;
  Value* x = b.input("x", {3, 8});
  b.output(build_layernorm(b, x, false, nullptr, nullptr));
  apply_and_check(b.g, fuse_layernorm, true, {random_tensor({3, 8}, 3)}, 1e-11);
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"LayerNormalization", 1}}));
  EXPECT_EQ(b.g.nodes()[0]->inputs.size(), 2u);
}

TEST(FuseLayerNorm, NearMissesAreLeftAlone) {
  {  // normalises over axis 1, not the last
    Builder b;
    Value* x = b.input("x", {3, 8, 2});
    Value* m = b.op(OpKind::kReduceMean, "mean", {x}, ReduceAttrs{{1}, true});
    Value* d = b.op(OpKind::kSub, "sub", {x, m});
    Value* v =
        b.op(OpKind::kReduceMean, "var", {b.op(OpKind::kPow, "sq", {d, b.scalar("two", 2.f)})}, ReduceAttrs{{1}, true});
    Value* s = b.op(OpKind::kSqrt, "sqrt", {b.op(OpKind::kAdd, "eps", {v, b.scalar("e", 1e-5f)})});
    b.output(b.op(OpKind::kDiv, "norm", {d, s}));
    apply_and_check(b.g, fuse_layernorm, false, {random_tensor({3, 8, 2}, 3)});
  }
  {  // the centred value is also a graph output
    Builder b;
    Value* x = b.input("x", {3, 8});
    b.output(build_layernorm(b, x, false, nullptr, nullptr));
    b.output(b.g.find_value("sub"));
    apply_and_check(b.g, fuse_layernorm, false, {random_tensor({3, 8}, 3)});
  }
  {  // gamma broadcasts along another axis: the LayerNorm fuses, the Mul stays
    Builder b;
    Value* x = b.input("x", {3, 8});
    b.output(build_layernorm(b, x, false, b.constant("gamma", random_tensor({3, 1}, 5)), nullptr));
    apply_and_check(b.g, fuse_layernorm, true, {random_tensor({3, 8}, 3)}, 1e-11);
    EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"LayerNormalization", 1}, {"Mul", 1}}));
  }
}

// ---- eliminate_identities ----

TEST(EliminateIdentities, NoOpsAndViewChains) {
  Builder b;
  Value* x = b.input("x", {2, 3, 4});
  Value* i = b.op(OpKind::kIdentity, "id", {x});
  Value* r = b.op(OpKind::kReshape, "same", {i}, ReshapeAttrs{{2, 3, 4}, false});
  Value* m = b.op(OpKind::kMul, "one", {r, b.scalar("k1", 1.f)});
  Value* t = b.op(OpKind::kTranspose, "tid", {m}, TransposeAttrs{{0, 1, 2}});
  Value* u = b.op(OpKind::kUnsqueeze, "un", {t}, AxesAttrs{{0}});
  Value* f = b.op(OpKind::kReshape, "flat", {u}, ReshapeAttrs{{1, 6, 4}, false});
  Value* s = b.op(OpKind::kSqueeze, "sq", {f}, AxesAttrs{{0}});
  Value* y = b.op(OpKind::kRelu, "relu", {s}, ActAttrs{Activation::relu()});
  b.output(b.op(OpKind::kIdentity, "out", {y}));
  apply_and_check(b.g, eliminate_identities, true, {random_tensor({2, 3, 4}, 1)}, 0.0);
  EXPECT_EQ(b.ops(), (std::map<std::string, int>{{"Relu", 1}, {"Reshape", 1}}));
  // The graph output kept its name: Relu now writes it directly.
  EXPECT_EQ(b.g.outputs()[0]->name, "out");
  EXPECT_EQ(b.g.outputs()[0]->producer->op, OpKind::kRelu);
  EXPECT_EQ(b.g.nodes()[0]->attr<ReshapeAttrs>().shape, (std::vector<int64_t>{6, 4}));
}

TEST(EliminateIdentities, KeepsWhatChangesValues) {
  Builder b;
  Value* x = b.input("x", {2, 3});
  Value* a = b.op(OpKind::kMul, "two", {x, b.scalar("k2", 2.f)});
  Value* c = b.op(OpKind::kMul, "bcast", {x, b.constant("ones", Tensor::from_floats({2, 2, 1}, {1, 1, 1, 1}))});
  b.output(b.op(OpKind::kTranspose, "t", {a}, TransposeAttrs{{1, 0}}));
  b.output(c);
  b.output(b.op(OpKind::kIdentity, "direct", {x}));  // graph input to graph output: nothing to bypass into
  apply_and_check(b.g, eliminate_identities, false, {random_tensor({2, 3}, 1)}, 0.0);
}

// ---- optimize ----

TEST(Optimize, ReportAndOptions) {
  auto build = [](Builder& b) {
    Value* x = b.input("x", {1, 3, 8, 8});
    Value* y = b.conv("conv", x, 4);
    add_batchnorm(b, y, "bn", 4);
    build_hardswish(b, y, HsForm::kDivAfter);
  };
  Builder b;
  build(b);
  Graph before = b.g.clone();
  PassReport report;
  ASSERT_TRUE(optimize(b.g, testing::ref_passes(), &report).is_ok());
  EXPECT_EQ(report.nodes_before, 6u);
  EXPECT_EQ(b.g.node_count(), 1u);
  EXPECT_EQ(b.g.nodes()[0]->attr<ConvAttrs>().act, Activation::hard_swish());
  EXPECT_FALSE(report.steps.empty());
  EXPECT_EQ(report.steps.back().nodes_after, 1u);
  const std::string d = report.describe();
  EXPECT_NE(d.find("Conv+BN/affine fold: 6 -> 5"), std::string::npos) << d;
  EXPECT_NE(d.find("HardSwish fusion: 5 -> 2"), std::string::npos) << d;
  EXPECT_NE(d.find("Conv+activation fusion: 2 -> 1"), std::string::npos) << d;
  testing::expect_same_outputs(before, b.g, {random_tensor({1, 3, 8, 8}, 2, -3.f, 3.f)}, 1e-10);

  // HardSwish feeding a pointwise conv keeps its "/6": the input-affine fold runs after the fusion.
  Builder p;
  Value* px = p.input("x", {1, 3, 8, 8});
  Value* hs_in = p.conv("conv", px, 4);
  Value* a3 = p.op(OpKind::kAdd, "plus3", {hs_in, p.scalar("three", 3.f)});
  Value* cl = p.op(OpKind::kClip, "clip", {a3}, ActAttrs{Activation::clip(0.f, 6.f)});
  Value* hs = p.op(OpKind::kDiv, "div", {p.op(OpKind::kMul, "mul", {hs_in, cl}), p.scalar("six", 6.f)});
  p.output(p.conv("pw", hs, 4, 1));
  Graph p_before = p.g.clone();
  ASSERT_TRUE(optimize(p.g, testing::ref_passes()).is_ok());
  EXPECT_EQ(p.ops(), (std::map<std::string, int>{{"Conv", 2}}));
  EXPECT_EQ(p.g.nodes()[0]->attr<ConvAttrs>().act, Activation::hard_swish());
  testing::expect_same_outputs(p_before, p.g, {random_tensor({1, 3, 8, 8}, 2, -3.f, 3.f)}, 1e-10);

  Builder c;
  build(c);
  PassOptions off;
  off.fold_batchnorm = false;
  off.fuse_activations = false;
  ASSERT_TRUE(optimize(c.g, testing::ref_passes(off)).is_ok());
  EXPECT_EQ(c.ops()["BatchNormalization"], 1);
  EXPECT_EQ(c.ops().count("HardSwish"), 0u);
}

}  // namespace
}  // namespace steadyocr::graph

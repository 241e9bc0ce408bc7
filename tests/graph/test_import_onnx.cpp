// ONNX import on small in-test models: opset-dependent forms, constant parameter inputs becoming attributes,
// and every kind of refusal (unsupported op/attribute/opset, malformed bytes) with a message that names it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "graph/onnx_import.h"
#include "graph/verifier.h"
#include "graph_test_util.h"
#include "onnx_builder.h"

namespace steadyocr::graph {
namespace {

using testing::OnnxBuilder;

Result<Graph> import(const OnnxBuilder& b, const std::string& name = "test.onnx") {
  return import_onnx_bytes(b.bytes(), name);
}

const Node* find_op(const Graph& g, OpKind op) {
  for (const auto& n : g.nodes()) {
    if (n->op == op) return n.get();
  }
  return nullptr;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ImportOnnx, ConstantsBecomeValuesAndDimParamsUnknown) {
  OnnxBuilder b(11);
  b.input("x", {-1, 2});
  b.constant("c", {2}, {1.f, 2.f});
  b.initializer("w", {2}, {3.f, 4.f});
  b.model().mutable_graph()->add_input()->set_name("w");  // old exporters list initializers as inputs too
  b.node("Add", {"x", "c"}, {"a"});
  b.node("Mul", {"a", "w"}, {"y"});
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->node_count(), 2u);
  ASSERT_EQ(g->inputs().size(), 1u);
  EXPECT_EQ(g->inputs()[0]->shape, (Shape{-1, 2}));
  const Value* c = g->find_value("c");
  ASSERT_NE(c, nullptr);
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->constant.to_floats(), (std::vector<float>{1.f, 2.f}));
  ASSERT_TRUE(g->find_value("w")->is_constant());
  EXPECT_EQ(g->find_value("w")->constant.to_floats(), (std::vector<float>{3.f, 4.f}));
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{-1, 2}));
  EXPECT_TRUE(verify(*g).is_ok());
}

TEST(ImportOnnx, ConvAttributesAndSamePadding) {
  OnnxBuilder b(13);
  b.input("x", {1, 2, 7, 9});
  b.constant("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  auto* n = b.node("Conv", {"x", "w"}, {"y"}, "conv0");
  OnnxBuilder::attr_int(n, "group", 2);
  OnnxBuilder::attr_string(n, "auto_pad", "SAME_UPPER");
  OnnxBuilder::attr_ints(n, "strides", {2, 2});
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto& a = find_op(*g, OpKind::kConv)->attr<ConvAttrs>();
  EXPECT_EQ(a.group, 2);
  EXPECT_EQ(a.kernel, (std::array<int64_t, 2>{3, 3}));  // from the weight when kernel_shape is absent
  // out = ceil(7/2)=4, ceil(9/2)=5; total pad = (4-1)*2+3-7 = 2 and (5-1)*2+3-9 = 2.
  EXPECT_EQ(a.pads, (std::array<int64_t, 4>{1, 1, 1, 1}));
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 4, 4, 5}));

  // SAME padding with stride 2 needs the input size: refused on a dynamic one.
  OnnxBuilder d(13);
  d.input("x", {1, 2, -1, -1});
  d.constant("w", {4, 1, 3, 3}, std::vector<float>(36, 0.1f));
  auto* m = d.node("Conv", {"x", "w"}, {"y"}, "conv_dyn");
  OnnxBuilder::attr_int(m, "group", 2);
  OnnxBuilder::attr_string(m, "auto_pad", "SAME_LOWER");
  OnnxBuilder::attr_ints(m, "strides", {2, 2});
  d.output("y");
  auto e = import(d, "dyn.onnx");
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(e.status().message(), "conv_dyn")) << e.status().message();
  EXPECT_TRUE(contains(e.status().message(), "auto_pad")) << e.status().message();
}

TEST(ImportOnnx, ConvChannelMismatchIsReported) {
  OnnxBuilder b(13);
  b.input("x", {1, 3, 8, 8});
  b.constant("w", {4, 2, 3, 3}, std::vector<float>(72, 0.f));
  b.node("Conv", {"x", "w"}, {"y"}, "conv_bad");
  b.output("y");
  auto g = import(b, "bad.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(g.status().message(), "bad.onnx")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "conv_bad")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "3 channels")) << g.status().message();
}

TEST(ImportOnnx, ClipBoundsFromAttributesOrConstantInputs) {
  OnnxBuilder old(9);
  old.input("x", {4});
  auto* n = old.node("Clip", {"x"}, {"y"});
  OnnxBuilder::attr_float(n, "min", 0.f);
  OnnxBuilder::attr_float(n, "max", 6.f);
  old.output("y");
  auto g = import(old);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(find_op(*g, OpKind::kClip)->attr<ActAttrs>().act, Activation::clip(0.f, 6.f));

  OnnxBuilder now(11);
  now.input("x", {4});
  now.constant("lo", {}, {-1.f});
  now.node("Clip", {"x", "lo", ""}, {"y"});  // max omitted: unbounded
  now.output("y");
  g = import(now);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Node* clip = find_op(*g, OpKind::kClip);
  EXPECT_EQ(clip->inputs.size(), 1u);
  EXPECT_EQ(clip->attr<ActAttrs>().act.alpha, -1.f);
  EXPECT_EQ(clip->attr<ActAttrs>().act.beta, std::numeric_limits<float>::max());

  // A bound computed at run time cannot become an attribute.
  OnnxBuilder dyn(11);
  dyn.input("x", {4});
  dyn.input("lo", {});
  dyn.node("Clip", {"x", "lo"}, {"y"}, "clip_dyn");
  dyn.output("y");
  auto e = import(dyn, "clip.onnx");
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(e.status().message(), "clip_dyn")) << e.status().message();
  EXPECT_TRUE(contains(e.status().message(), "min")) << e.status().message();
}

TEST(ImportOnnx, SliceSqueezeUnsqueezeReduceAcrossOpsets) {
  // opset 9: attributes.
  OnnxBuilder old(9);
  old.input("x", {2, 5, 1});
  auto* s = old.node("Slice", {"x"}, {"s"});
  OnnxBuilder::attr_ints(s, "starts", {1});
  OnnxBuilder::attr_ints(s, "ends", {100});
  OnnxBuilder::attr_ints(s, "axes", {1});
  auto* q = old.node("Squeeze", {"s"}, {"q"});
  OnnxBuilder::attr_ints(q, "axes", {2});
  auto* r = old.node("ReduceMean", {"q"}, {"r"});
  OnnxBuilder::attr_ints(r, "axes", {-1});
  auto* u = old.node("Unsqueeze", {"r"}, {"y"});
  OnnxBuilder::attr_ints(u, "axes", {0});
  old.output("y");
  auto g = import(old);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 2, 1}));
  const auto& sa = find_op(*g, OpKind::kSlice)->attr<SliceAttrs>();
  EXPECT_EQ(sa.starts, (std::vector<int64_t>{1}));
  EXPECT_EQ(sa.steps, (std::vector<int64_t>{1}));
  EXPECT_EQ(find_op(*g, OpKind::kSlice)->output()->shape, (Shape{2, 4, 1}));

  // opset 13: the same through constant inputs.
  OnnxBuilder now(13);
  now.input("x", {2, 5, 1});
  now.constant_i64("starts", {1}, {1});
  now.constant_i64("ends", {1}, {100});
  now.constant_i64("axes", {1}, {1});
  now.constant_i64("steps", {1}, {2});
  now.constant_i64("sq", {1}, {2});
  now.constant_i64("un", {1}, {0});
  now.node("Slice", {"x", "starts", "ends", "axes", "steps"}, {"s"});
  now.node("Squeeze", {"s", "sq"}, {"q"});
  auto* r2 = now.node("ReduceMean", {"q"}, {"r"});
  OnnxBuilder::attr_ints(r2, "axes", {-1});
  OnnxBuilder::attr_int(r2, "keepdims", 0);
  now.node("Unsqueeze", {"r", "un"}, {"y"});
  now.output("y");
  g = import(now);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(find_op(*g, OpKind::kSlice)->output()->shape, (Shape{2, 2, 1}));  // 1, 3
  EXPECT_EQ(find_op(*g, OpKind::kSlice)->inputs.size(), 1u);
  EXPECT_EQ(find_op(*g, OpKind::kSqueeze)->attr<AxesAttrs>().axes, (std::vector<int64_t>{2}));
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 2}));

  // Run-time slice bounds cannot become attributes.
  OnnxBuilder dyn(13);
  dyn.input("x", {2, 5});
  dyn.input("starts", {1}, onnx::TensorProto::INT64);
  dyn.constant_i64("ends", {1}, {3});
  dyn.node("Slice", {"x", "starts", "ends"}, {"y"}, "slice_dyn");
  dyn.output("y");
  auto e = import(dyn);
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(e.status().message(), "starts")) << e.status().message();
}

TEST(ImportOnnx, SoftmaxOpsetSemantics) {
  for (int64_t opset : {11, 13}) {
    OnnxBuilder b(opset);
    b.input("x", {2, 3, 4});
    auto* n = b.node("Softmax", {"x"}, {"y"});
    OnnxBuilder::attr_int(n, "axis", 1);
    b.output("y");
    auto g = import(b);
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    const auto& a = find_op(*g, OpKind::kSoftmax)->attr<SoftmaxAttrs>();
    EXPECT_EQ(a.axis, 1);
    EXPECT_EQ(a.flatten_trailing, opset < 13) << "opset " << opset;
  }
  // Default axis: 1 before opset 13 (flattening, here the last axis: plain softmax), -1 from 13.
  OnnxBuilder b(9);
  b.input("x", {2, 3});
  b.node("Softmax", {"x"}, {"y"});
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok());
  EXPECT_FALSE(find_op(*g, OpKind::kSoftmax)->attr<SoftmaxAttrs>().flatten_trailing);
  EXPECT_EQ(find_op(*g, OpKind::kSoftmax)->attr<SoftmaxAttrs>().axis, -1);
}

TEST(ImportOnnx, ResizeForms) {
  // opset 11 with roi/scales inputs (the det model's form).
  OnnxBuilder b(11);
  b.input("x", {1, 2, 3, 4});
  b.constant("roi", {0}, {});
  b.constant("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  auto* n = b.node("Resize", {"x", "roi", "scales"}, {"y"});
  OnnxBuilder::attr_string(n, "mode", "nearest");
  OnnxBuilder::attr_string(n, "coordinate_transformation_mode", "asymmetric");
  OnnxBuilder::attr_string(n, "nearest_mode", "floor");
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 2, 6, 8}));

  // opset 13 with sizes, linear, half_pixel (default).
  OnnxBuilder s(13);
  s.input("x", {1, 2, 3, 4});
  s.constant_i64("sizes", {4}, {1, 2, 5, 7});
  auto* m = s.node("Resize", {"x", "", "", "sizes"}, {"y"});
  OnnxBuilder::attr_string(m, "mode", "linear");
  s.output("y");
  g = import(s);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const auto& a = find_op(*g, OpKind::kResize)->attr<ResizeAttrs>();
  EXPECT_EQ(a.mode, ResizeMode::kLinear);
  EXPECT_EQ(a.coord, ResizeCoord::kHalfPixel);
  EXPECT_EQ(a.sizes, (std::vector<int64_t>{1, 2, 5, 7}));
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 2, 5, 7}));

  // opset 10 (scales input) and Upsample (opset 9): asymmetric, floor when upsampling.
  OnnxBuilder r10(10);
  r10.input("x", {1, 1, 2, 2});
  r10.constant("scales", {4}, {1.f, 1.f, 3.f, 3.f});
  r10.node("Resize", {"x", "scales"}, {"y"});
  r10.output("y");
  g = import(r10);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(find_op(*g, OpKind::kResize)->attr<ResizeAttrs>().coord, ResizeCoord::kAsymmetric);
  EXPECT_EQ(find_op(*g, OpKind::kResize)->attr<ResizeAttrs>().nearest, ResizeNearest::kFloor);
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 1, 6, 6}));

  OnnxBuilder up(9);
  up.input("x", {1, 1, 2, 2});
  up.constant("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  up.node("Upsample", {"x", "scales"}, {"y"});
  up.output("y");
  g = import(up);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{1, 1, 4, 4}));

  // cubic is refused, naming the value.
  OnnxBuilder c(11);
  c.input("x", {1, 1, 2, 2});
  c.constant("roi", {0}, {});
  c.constant("scales", {4}, {1.f, 1.f, 2.f, 2.f});
  auto* k = c.node("Resize", {"x", "roi", "scales"}, {"y"}, "resize_cubic");
  OnnxBuilder::attr_string(k, "mode", "cubic");
  c.output("y");
  auto e = import(c, "cubic.onnx");
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(e.status().message(), "cubic.onnx")) << e.status().message();
  EXPECT_TRUE(contains(e.status().message(), "resize_cubic")) << e.status().message();
  EXPECT_TRUE(contains(e.status().message(), "mode 'cubic'")) << e.status().message();

  // Scales computed at run time cannot become attributes.
  OnnxBuilder d(11);
  d.input("x", {1, 1, 2, 2});
  d.input("scales", {4});
  d.constant("roi", {0}, {});
  d.node("Resize", {"x", "roi", "scales"}, {"y"}, "resize_dyn");
  d.output("y");
  e = import(d);
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(e.status().message(), "scales")) << e.status().message();
}

TEST(ImportOnnx, ReshapeKeepsRunTimeShapeInput) {
  OnnxBuilder b(11);
  b.input("x", {-1, 6});
  b.node("Shape", {"x"}, {"s"});
  b.constant_i64("tail", {2}, {2, 3});
  auto* n = b.node("Slice", {"s", "st", "en"}, {"n"});
  (void)n;
  b.constant_i64("st", {1}, {0});
  b.constant_i64("en", {1}, {1});
  b.node("Concat", {"n", "tail"}, {"target"})->add_attribute();
  auto* concat = b.model().mutable_graph()->mutable_node(b.model().graph().node_size() - 1);
  concat->mutable_attribute(0)->set_name("axis");
  concat->mutable_attribute(0)->set_type(onnx::AttributeProto::INT);
  concat->mutable_attribute(0)->set_i(0);
  b.node("Reshape", {"x", "target"}, {"y"});
  b.output("y");
  // The constants are declared after the Slice that reads them: not topological, so refused.
  auto bad = import(b);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(bad.status().message(), "topological")) << bad.status().message();

  OnnxBuilder ok(11);
  ok.input("x", {-1, 6});
  ok.constant_i64("st", {1}, {0});
  ok.constant_i64("en", {1}, {1});
  ok.constant_i64("tail", {2}, {2, 3});
  ok.node("Shape", {"x"}, {"s"});
  ok.node("Slice", {"s", "st", "en"}, {"n"});
  OnnxBuilder::attr_int(ok.node("Concat", {"n", "tail"}, {"target"}), "axis", 0);
  ok.node("Reshape", {"x", "target"}, {"y"});
  ok.output("y");
  auto g = import(ok);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Node* r = find_op(*g, OpKind::kReshape);
  EXPECT_EQ(r->inputs.size(), 2u);
  EXPECT_EQ(r->output()->shape, (Shape{-1, -1, -1}));  // rank from the target's length
}

TEST(ImportOnnx, CheapOps) {
  OnnxBuilder b(11);
  b.input("x", {2, 3, 4});
  b.node("Identity", {"x"}, {"i"});
  auto* d = b.node("Dropout", {"i"}, {"d"});
  OnnxBuilder::attr_float(d, "ratio", 0.5f);
  auto* f = b.node("Flatten", {"d"}, {"f"});
  OnnxBuilder::attr_int(f, "axis", 2);
  b.constant("w", {4, 5}, std::vector<float>(20, 0.5f));
  b.constant("c", {5}, {1, 2, 3, 4, 5});
  auto* gm = b.node("Gemm", {"f", "w", "c"}, {"y"});
  OnnxBuilder::attr_float(gm, "alpha", 2.f);
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{6, 5}));
  auto h = g->op_histogram();
  EXPECT_EQ(h["Identity"], 2);
  EXPECT_EQ(h["Reshape"], 1);
  EXPECT_EQ(h["MatMul"], 1);
  EXPECT_EQ(h["Add"], 1);
  // y = 2 * x.reshape(6,4) @ 0.5 + c: each row sums x over its 4 values.
  Tensor x = testing::random_tensor({2, 3, 4}, 3);
  auto out = testing::run_graph(*g, {x});
  ASSERT_EQ(out.size(), 1u);
  for (int r = 0; r < 6; ++r) {
    float sum = 0;
    for (int k = 0; k < 4; ++k) sum += x.data<float>()[r * 4 + k];
    for (int c = 0; c < 5; ++c) EXPECT_NEAR(out[0].data<float>()[r * 5 + c], sum + (c + 1), 1e-5);
  }
}

TEST(ImportOnnx, GemmTransposedRunTimeOperands) {
  OnnxBuilder b(11);
  b.input("a", {3, 2});
  b.input("b", {4, 3});
  auto* gm = b.node("Gemm", {"a", "b"}, {"y"});
  OnnxBuilder::attr_int(gm, "transA", 1);
  OnnxBuilder::attr_int(gm, "transB", 1);
  b.output("y");
  auto g = import(b);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  EXPECT_EQ(g->outputs()[0]->shape, (Shape{2, 4}));
  Tensor a = testing::random_tensor({3, 2}, 1), bt = testing::random_tensor({4, 3}, 2);
  auto out = testing::run_graph(*g, {a, bt});
  ASSERT_EQ(out.size(), 1u);
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 4; ++j) {
      float want = 0;
      for (int k = 0; k < 3; ++k) want += a.data<float>()[k * 2 + i] * bt.data<float>()[j * 3 + k];
      EXPECT_NEAR(out[0].data<float>()[i * 4 + j], want, 1e-5);
    }
  }
}

TEST(ImportOnnx, UnsupportedOpNamesOpNodeAndModel) {
  OnnxBuilder b(13);
  b.input("x", {1, 4, 8});
  b.node("LSTM", {"x"}, {"y"}, "lstm_0");
  b.output("y");
  auto g = import(b, "det.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  const std::string& m = g.status().message();
  EXPECT_TRUE(contains(m, "model det.onnx: node 'lstm_0' uses op 'LSTM', which steadyocr does not support")) << m;
  EXPECT_TRUE(contains(m, "supported: Add, AveragePool")) << m;
}

TEST(ImportOnnx, UnsupportedAttributesDomainsAndOpsets) {
  {  // an attribute we do not interpret
    OnnxBuilder b(13);
    b.input("x", {1, 1, 4, 4});
    auto* n = b.node("MaxPool", {"x"}, {"y"}, "pool");
    OnnxBuilder::attr_ints(n, "kernel_shape", {2, 2});
    OnnxBuilder::attr_ints(n, "dilations", {2, 2});
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(g.status().message(), "dilations")) << g.status().message();
  }
  {  // an attribute nobody knows
    OnnxBuilder b(13);
    b.input("x", {4});
    OnnxBuilder::attr_int(b.node("Relu", {"x"}, {"y"}, "relu_x"), "fancy", 1);
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(g.status().message(), "fancy")) << g.status().message();
  }
  {  // a custom domain
    OnnxBuilder b(13);
    b.input("x", {4});
    b.node("FusedGemm", {"x"}, {"y"}, "fg")->set_domain("com.microsoft");
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(g.status().message(), "com.microsoft")) << g.status().message();
  }
  for (int64_t opset : {5, 19}) {
    OnnxBuilder b(opset);
    b.input("x", {4});
    b.node("Relu", {"x"}, {"y"});
    b.output("y");
    auto g = import(b, "new.onnx");
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported) << opset;
    EXPECT_TRUE(contains(g.status().message(), fmt::format("opset {}", opset))) << g.status().message();
  }
  {  // a wrongly typed attribute
    OnnxBuilder b(13);
    b.input("x", {2, 2});
    OnnxBuilder::attr_float(b.node("Concat", {"x", "x"}, {"y"}, "cat"), "axis", 1.f);
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(g.status().message(), "'axis' is float but must be int")) << g.status().message();
  }
  {  // BatchNormalization in training form
    OnnxBuilder b(9);
    b.input("x", {1, 2, 2, 2});
    for (const char* p : {"s", "b", "m", "v"}) b.constant(p, {2}, {1.f, 1.f});
    b.node("BatchNormalization", {"x", "s", "b", "m", "v"}, {"y", "mean_out"}, "bn");
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_TRUE(contains(g.status().message(), "mean_out")) << g.status().message();
  }
}

TEST(ImportOnnx, StructuralErrors) {
  {
    OnnxBuilder b(13);
    b.input("x", {4});
    b.node("Relu", {"nope"}, {"y"}, "r");
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(g.status().message(), "'nope'")) << g.status().message();
  }
  {
    OnnxBuilder b(13);
    b.input("x", {4});
    b.node("Relu", {"x"}, {"y"});
    b.output("z");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(g.status().message(), "graph output 'z'")) << g.status().message();
  }
  {
    OnnxBuilder b(13);
    b.input("x", {4});
    b.node("Relu", {"x"}, {"y"});
    b.node("Sigmoid", {"x"}, {"y"});
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE(contains(g.status().message(), "already produced")) << g.status().message();
  }
  {  // a tensor whose data is shorter than its dims say
    OnnxBuilder b(13);
    b.input("x", {4});
    b.initializer("w", {8}, {1.f, 2.f});
    b.node("Add", {"x", "w"}, {"y"});
    b.output("y");
    auto g = import(b);
    EXPECT_EQ(g.status().code(), StatusCode::kDataLoss);
    EXPECT_TRUE(contains(g.status().message(), "'w'")) << g.status().message();
  }
}

TEST(ImportOnnx, HugeDeclaredTensorIsRefusedBeforeAllocating) {
  OnnxBuilder b(13);
  b.input("x", {4});
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(int64_t{1} << 31);  // 8 GiB of floats declared, none present: over the per-tensor limit
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y");
  auto g = import(b);
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(contains(g.status().message(), "over the limit of 1073741824 bytes per tensor")) << g.status().message();
  t->add_dims(int64_t{1} << 31);  // beyond the element limit
  g = import(b);
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(g.status().message(), "too large")) << g.status().message();
}

TEST(ImportOnnx, MalformedBytesNeverCrash) {
  EXPECT_EQ(import_onnx_bytes("", "empty.onnx").status().code(), StatusCode::kInvalidArgument);
  auto e = import_onnx_bytes("this is not a protobuf \x01\x02\xff\xff", "text.onnx");
  EXPECT_FALSE(e.is_ok());
  EXPECT_TRUE(contains(e.status().message(), "text.onnx")) << e.status().message();
  std::mt19937 rng(42);
  for (int trial = 0; trial < 200; ++trial) {
    std::string bytes(1 + rng() % 4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    auto g = import_onnx_bytes(bytes, "random.onnx");
    EXPECT_FALSE(g.is_ok());
    EXPECT_TRUE(g.status().code() == StatusCode::kDataLoss || g.status().code() == StatusCode::kInvalidArgument ||
                g.status().code() == StatusCode::kUnsupported)
        << g.status().to_string();
  }
  // A valid small model, truncated everywhere, and with bytes flipped: errors, never a crash.
  OnnxBuilder b(11);
  b.input("x", {1, 2, 4, 4});
  b.constant("w", {3, 2, 1, 1}, {1, 2, 3, 4, 5, 6});
  b.node("Conv", {"x", "w"}, {"y"}, "conv");
  b.output("y");
  const std::string good = b.bytes();
  ASSERT_TRUE(import_onnx_bytes(good, "good.onnx").is_ok());
  for (size_t cut = 0; cut < good.size(); ++cut) {
    auto g = import_onnx_bytes(good.substr(0, cut), "cut.onnx");
    if (g.is_ok()) {
      EXPECT_TRUE(verify(*g).is_ok());  // a prefix can be a valid, smaller model
    }
  }
  for (int trial = 0; trial < 300; ++trial) {
    std::string bad = good;
    bad[rng() % bad.size()] = static_cast<char>(rng());
    auto g = import_onnx_bytes(bad, "flip.onnx");
    if (g.is_ok()) {
      EXPECT_TRUE(verify(*g).is_ok());
    }
  }
}

TEST(ImportOnnx, TruncatedRealModel) {
  SO_REQUIRE_MODELS();
  std::ifstream f(testing::models_dir() + "/ch_PP-OCRv4_det_infer.onnx", std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string bytes = ss.str();
  for (size_t cut :
       {size_t{0}, size_t{1}, size_t{100}, size_t{4096}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    auto g = import_onnx_bytes(bytes.substr(0, cut), "det.onnx");
    ASSERT_FALSE(g.is_ok()) << "cut at " << cut;
    EXPECT_TRUE(contains(g.status().message(), "det.onnx")) << g.status().message();
    EXPECT_NE(g.status().code(), StatusCode::kInternal) << g.status().to_string();
  }
}

TEST(ImportOnnx, FileErrors) {
  auto g = import_onnx("/nonexistent/dir/model.onnx");
  EXPECT_EQ(g.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(contains(g.status().message(), "model.onnx")) << g.status().message();
  g = import_onnx("/tmp");
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  ImportOptions small;
  small.max_file_bytes = 10;
  OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_EQ(import_onnx_bytes(b.bytes(), "big.onnx", small).status().code(), StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace steadyocr::graph

// Import of the three real PP-OCR models: node counts, op histograms, inputs/outputs and inferred shapes.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>

#include "graph/onnx_import.h"
#include "graph/verifier.h"
#include "test_util.h"

namespace steadyocr::graph {
namespace {

using testing::models_dir;

Graph load(const std::string& file) {
  auto g = import_onnx(models_dir() + "/" + file);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  return g.is_ok() ? std::move(g).value() : Graph();
}

std::string histogram_str(const std::map<std::string, int>& h) {
  std::string s;
  for (const auto& [k, v] : h) s += fmt::format("{}={} ", k, v);
  return s;
}

TEST(ImportModels, Det) {
  SO_REQUIRE_MODELS();
  Graph g = load("ch_PP-OCRv4_det_infer.onnx");
  std::cout << "det imported: " << g.node_count() << " nodes: " << histogram_str(g.op_histogram()) << "\n";
  EXPECT_EQ(g.node_count(), 330u);  // 672 ONNX nodes minus 342 Constant nodes
  std::map<std::string, int> want = {
      {"Add", 89},   {"BatchNormalization", 3}, {"Clip", 24},        {"Concat", 1}, {"Conv", 62}, {"ConvTranspose", 2},
      {"Div", 24},   {"GlobalAveragePool", 10}, {"HardSigmoid", 10}, {"Mul", 86},   {"Relu", 12}, {"Resize", 6},
      {"Sigmoid", 1}};
  EXPECT_EQ(g.op_histogram(), want);
  ASSERT_EQ(g.inputs().size(), 1u);
  EXPECT_EQ(g.inputs()[0]->name, "x");
  EXPECT_EQ(g.inputs()[0]->shape, (Shape{-1, 3, -1, -1}));
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.outputs()[0]->name, "sigmoid_0.tmp_0");
  EXPECT_EQ(g.outputs()[0]->shape, (Shape{-1, 1, -1, -1}));
  for (const auto& n : g.nodes()) {
    if (n->op == OpKind::kResize) {
      const auto& a = n->attr<ResizeAttrs>();
      EXPECT_EQ(a.mode, ResizeMode::kNearest);
      EXPECT_EQ(a.coord, ResizeCoord::kAsymmetric);
      EXPECT_EQ(a.nearest, ResizeNearest::kFloor);
      ASSERT_EQ(a.scales.size(), 4u);
      EXPECT_EQ(a.scales[0], 1.f);
      EXPECT_GE(a.scales[2], 2.f);
      EXPECT_EQ(n->inputs.size(), 1u);
    }
    if (n->op == OpKind::kClip) {
      EXPECT_EQ(n->attr<ActAttrs>().act, Activation::clip(0.f, 6.f));
      EXPECT_EQ(n->inputs.size(), 1u);  // opset-11 min/max inputs became attributes
    }
  }
  EXPECT_TRUE(verify(g).is_ok());
}

TEST(ImportModels, Rec) {
  SO_REQUIRE_MODELS();
  Graph g = load("ch_PP-OCRv4_rec_infer.onnx");
  std::cout << "rec imported: " << g.node_count() << " nodes: " << histogram_str(g.op_histogram()) << "\n";
  EXPECT_EQ(g.node_count(), 440u);
  auto h = g.op_histogram();
  EXPECT_EQ(h["Conv"], 38);
  EXPECT_EQ(h["MatMul"], 13);
  EXPECT_EQ(h["Shape"], 4);
  EXPECT_EQ(h["Cast"], 23);
  EXPECT_EQ(h["Slice"], 10);
  EXPECT_EQ(h["Reshape"], 6);
  EXPECT_EQ(h["Softmax"], 3);
  EXPECT_EQ(h["Pow"], 5);
  EXPECT_EQ(h["ReduceMean"], 10);
  EXPECT_EQ(g.inputs()[0]->shape, (Shape{-1, 3, 48, -1}));
  EXPECT_EQ(g.outputs()[0]->shape, (Shape{-1, -1, 6625}));
  for (const auto& n : g.nodes()) {
    if (n->op == OpKind::kSoftmax) {
      // opset-9 softmax at the last axis is plain softmax over it
      EXPECT_FALSE(n->attr<SoftmaxAttrs>().flatten_trailing);
      EXPECT_EQ(n->attr<SoftmaxAttrs>().axis, -1);
    }
    if (n->op == OpKind::kReshape) {
      EXPECT_EQ(n->inputs.size(), 2u) << n->describe();  // shape computed at run time
    }
  }
  EXPECT_TRUE(verify(g).is_ok());
}

TEST(ImportModels, Cls) {
  SO_REQUIRE_MODELS();
  Graph g = load("ch_ppocr_mobile_v2.0_cls_infer.onnx");
  std::cout << "cls imported: " << g.node_count() << " nodes: " << histogram_str(g.op_histogram()) << "\n";
  EXPECT_EQ(g.node_count(), 221u);
  auto h = g.op_histogram();
  EXPECT_EQ(h["BatchNormalization"], 35);
  EXPECT_EQ(h["Conv"], 53);
  EXPECT_EQ(h["MaxPool"], 1);
  EXPECT_EQ(g.outputs()[0]->shape, (Shape{-1, 2}));
  EXPECT_TRUE(verify(g).is_ok());
}

}  // namespace
}  // namespace steadyocr::graph

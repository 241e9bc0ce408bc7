// The verifier catches each kind of broken graph and names the offending node or value.
#include <gtest/gtest.h>

#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace steadyocr::graph {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// x[1,4] -> Relu 'a' -> Sigmoid 'b' -> y, all shapes inferred.
struct Chain {
  Graph g;
  Value* x;
  Value* mid;
  Value* y;
  Node* a;
  Node* b;
  Chain() {
    x = g.add_value("x", DType::kF32, {1, 4});
    mid = g.add_value("mid");
    y = g.add_value("y");
    a = g.add_node(OpKind::kRelu, "a", {x}, {mid}, ActAttrs{Activation::relu()});
    b = g.add_node(OpKind::kSigmoid, "b", {mid}, {y}, ActAttrs{Activation::sigmoid()});
    g.inputs().push_back(x);
    g.outputs().push_back(y);
    EXPECT_TRUE(infer_shapes(g).is_ok());
  }
};

TEST(Verifier, AcceptsAWellFormedGraph) {
  Chain c;
  EXPECT_TRUE(verify(c.g).is_ok());
  EXPECT_TRUE(verify(c.g, {true}).is_ok());
}

TEST(Verifier, NodesOutOfOrder) {
  Chain c;
  Graph g;
  // Same chain built consumer-first.
  Value* x = g.add_value("x", DType::kF32, {1, 4});
  Value* mid = g.add_value("mid", DType::kF32, {1, 4});
  Value* y = g.add_value("y", DType::kF32, {1, 4});
  g.add_node(OpKind::kSigmoid, "b", {mid}, {y}, ActAttrs{Activation::sigmoid()});
  g.add_node(OpKind::kRelu, "a", {x}, {mid}, ActAttrs{Activation::relu()});
  g.inputs().push_back(x);
  g.outputs().push_back(y);
  Status s = verify(g);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_TRUE(contains(s.message(), "Sigmoid 'b'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "topological")) << s.message();
  ASSERT_TRUE(g.toposort().is_ok());
  EXPECT_TRUE(verify(g).is_ok());
}

TEST(Verifier, UndefinedInputAndDanglingValue) {
  Chain c;
  Value* stray = c.g.add_value("stray", DType::kF32, {1, 4});
  c.b->inputs[0] = stray;
  Status s = verify(c.g);
  EXPECT_TRUE(contains(s.message(), "'stray'")) << s.message();

  Chain d;
  Value outside;  // not owned by the graph
  outside.name = "outside";
  d.b->inputs[0] = &outside;
  s = verify(d.g);
  EXPECT_TRUE(contains(s.message(), "dangling")) << s.message();
}

TEST(Verifier, TwoProducers) {
  Chain c;
  c.g.add_node(OpKind::kRelu, "dup", {c.x}, {c.mid}, ActAttrs{Activation::relu()});
  // add_node re-pointed mid's producer to 'dup'; 'a' still lists it.
  Status s = verify(c.g);
  EXPECT_FALSE(s.is_ok());
  EXPECT_TRUE(contains(s.message(), "'mid'")) << s.message();
}

TEST(Verifier, WrongArityAndAttributes) {
  Chain c;
  c.b->inputs.push_back(c.x);
  Status s = verify(c.g);
  EXPECT_TRUE(contains(s.message(), "has 2 inputs")) << s.message();

  Chain d;
  d.a->attrs = ActAttrs{Activation::sigmoid()};
  s = verify(d.g);
  EXPECT_TRUE(contains(s.message(), "Relu 'a'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "does not match the op")) << s.message();

  Chain e;
  e.a->attrs = ConvAttrs{};
  s = verify(e.g);
  EXPECT_TRUE(contains(s.message(), "wrong kind")) << s.message();

  Chain f;
  f.b->op = OpKind::kClip;
  f.b->attrs = ActAttrs{Activation::clip(6.f, 0.f)};
  s = verify(f.g);
  EXPECT_TRUE(contains(s.message(), "inverted")) << s.message();
}

TEST(Verifier, ShapeDisagreesWithInference) {
  Chain c;
  c.y->shape = {1, 5};
  Status s = verify(c.g);
  EXPECT_TRUE(contains(s.message(), "Sigmoid 'b'")) << s.message();
  EXPECT_TRUE(contains(s.message(), "f32[1,5]")) << s.message();
  EXPECT_TRUE(contains(s.message(), "f32[1,4]")) << s.message();

  Chain d;
  d.mid->dtype = DType::kI64;
  EXPECT_FALSE(verify(d.g).is_ok());
}

TEST(Verifier, StaticShapesRequiredAfterSpecialisation) {
  Graph g;
  Value* x = g.add_value("x", DType::kF32, {-1, 4});
  Value* y = g.add_value("y");
  g.add_node(OpKind::kRelu, "r", {x}, {y}, ActAttrs{Activation::relu()});
  g.inputs().push_back(x);
  g.outputs().push_back(y);
  ASSERT_TRUE(infer_shapes(g).is_ok());
  EXPECT_TRUE(verify(g).is_ok());
  Status s = verify(g, {true});
  EXPECT_TRUE(contains(s.message(), "dynamic shape [?,4]")) << s.message();
}

TEST(Verifier, GraphOutputsAndConstants) {
  Chain c;
  c.g.outputs().push_back(c.g.add_value("nothing", DType::kF32, {1}));
  Status s = verify(c.g);
  EXPECT_TRUE(contains(s.message(), "graph output 'nothing'")) << s.message();

  Chain d;
  Value* k = d.g.add_constant("k", Tensor::from_floats({2}, {1.f, 2.f}));
  k->shape = {3};
  s = verify(d.g);
  EXPECT_TRUE(contains(s.message(), "constant 'k'")) << s.message();

  Chain e;
  e.mid->constant = Tensor::from_floats({1, 4}, {0, 0, 0, 0});
  s = verify(e.g);
  EXPECT_FALSE(s.is_ok());
}

}  // namespace
}  // namespace steadyocr::graph

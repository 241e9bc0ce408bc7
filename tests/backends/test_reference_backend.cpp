// The reference interpreter: prepare/run contract, input checking, errors that name the cause, and
// intermediates released after their last use without disturbing values read later.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/reference/reference_backend.h"
#include "op_cases.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

using graph::OpKind;

// y = relu(x + c) * x  (x is read twice, the second time after the Add's output is dead), plus z = shape(x).
graph::Graph small_graph(Shape shape = {2, 3}) {
  graph::Graph g;
  g.set_name("small");
  graph::Value* x = g.add_value("x", DType::kF32, shape);
  g.inputs().push_back(x);
  graph::Value* c = g.add_constant("c", Tensor::from_floats({3}, {1, -10, 0.5f}));
  graph::Value* s = g.add_value("s", DType::kF32, shape);
  graph::Value* r = g.add_value("r", DType::kF32, shape);
  graph::Value* y = g.add_value("y", DType::kF32, shape);
  graph::Value* z = g.add_value("z", DType::kI64, {static_cast<int64_t>(shape.size())});
  g.add_node(OpKind::kAdd, "add", {x, c}, {s});
  g.add_node(OpKind::kRelu, "relu", {s}, {r}, graph::ActAttrs{graph::Activation::relu()});
  g.add_node(OpKind::kMul, "mul", {r, x}, {y});
  g.add_node(OpKind::kShape, "shape", {x}, {z});
  g.outputs() = {y, z};
  return g;
}

TEST(ReferenceBackend, NameAndSupportsEveryOp) {
  auto b = make_reference_backend();
  EXPECT_EQ(b->name(), "reference");
  EXPECT_EQ(b->device_info().backend, "reference");
  graph::Node n;
  for (size_t i = 0; i < static_cast<size_t>(OpKind::kCount); ++i) {
    n.op = static_cast<OpKind>(i);
    EXPECT_TRUE(b->supports(n)) << graph::op_name(n.op);
  }
}

TEST(ReferenceBackend, RunsGraphRepeatedly) {
  auto b = make_reference_backend();
  graph::Graph g = small_graph();
  auto p = b->prepare(g);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  for (int rep = 0; rep < 2; ++rep) {
    std::vector<Tensor> out;
    Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, -4, 20, -1});
    Status s = (*p)->run({x}, &out);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(out.size(), 2u);
    // relu(x + c) * x: row 0: (2, 0, 3.5) * (1, 2, 3); row 1: (0, 10, 0) * (-4, 20, -1).
    EXPECT_EQ(out[0].to_floats(), (std::vector<float>{2, 0, 10.5f, 0, 200, 0}));
    EXPECT_EQ(out[1].to_int64s(), (std::vector<int64_t>{2, 3}));
    // The input tensor is not modified.
    EXPECT_EQ(x.to_floats()[3], -4.f);
  }
}

TEST(ReferenceBackend, PrepareDoesNotKeepTheCallersGraph) {
  auto b = make_reference_backend();
  auto p = [&] {
    graph::Graph g = small_graph();
    return b->prepare(g);
  }();  // the graph is gone; the plan holds its own copy
  ASSERT_TRUE(p.is_ok());
  std::vector<Tensor> out;
  ASSERT_TRUE((*p)->run({Tensor::from_floats({2, 3}, {0, 0, 0, 0, 0, 0})}, &out).is_ok());
}

TEST(ReferenceBackend, InputErrorsNameTheInputAndShapes) {
  auto b = make_reference_backend();
  graph::Graph g = small_graph();
  auto p = b->prepare(g);
  ASSERT_TRUE(p.is_ok());
  std::vector<Tensor> out;
  Status s = (*p)->run({}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("1 input"), std::string::npos) << s.message();
  s = (*p)->run({Tensor::zeros(DType::kF32, {2, 4})}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[2,4]"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[2,3]"), std::string::npos) << s.message();
  s = (*p)->run({Tensor::zeros(DType::kI64, {2, 3})}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("i64"), std::string::npos) << s.message();
}

TEST(ReferenceBackend, DynamicShapesAreRefusedAtPrepare) {
  auto b = make_reference_backend();
  graph::Graph g = small_graph({-1, 3});
  auto p = b->prepare(g);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("static shape"), std::string::npos) << p.status().message();
}

TEST(ReferenceBackend, UnknownOpIsUnsupportedNamingTheNode) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {1});
  graph::Value* y = g.add_value("y", DType::kF32, {1});
  g.inputs().push_back(x);
  g.add_node(OpKind::kCount, "mystery", {x}, {y});
  g.outputs() = {y};
  auto p = make_reference_backend()->prepare(g);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(p.status().message().find("'mystery'"), std::string::npos) << p.status().message();
}

TEST(ReferenceBackend, KernelErrorsCarryTheNode) {
  // A Concat whose output Value disagrees with its inputs: the kernel refuses and names the node.
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {2, 2});
  graph::Value* y = g.add_value("y", DType::kF32, {2, 5});
  g.inputs().push_back(x);
  g.add_node(OpKind::kConcat, "cat", {x, x}, {y}, graph::AxisAttrs{1});
  g.outputs() = {y};
  auto p = make_reference_backend()->prepare(g);
  ASSERT_TRUE(p.is_ok());
  std::vector<Tensor> out;
  Status s = (*p)->run({Tensor::zeros(DType::kF32, {2, 2})}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Concat 'cat'"), std::string::npos) << s.message();
}

TEST(ReferenceBackend, OutputsMayBeInputsOrConstants) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {2});
  graph::Value* c = g.add_constant("c", Tensor::from_floats({1}, {7}));
  g.inputs().push_back(x);
  g.outputs() = {x, c};
  auto p = make_reference_backend()->prepare(g);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*p)->run({Tensor::from_floats({2}, {1, 2})}, &out).is_ok());
  EXPECT_EQ(out[0].to_floats(), (std::vector<float>{1, 2}));
  EXPECT_EQ(out[1].to_floats(), (std::vector<float>{7}));
}

TEST(ReferenceBackend, RunNodeReportsMissingKernel) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {1});
  graph::Value* y = g.add_value("y", DType::kF32, {1});
  graph::Node* n = g.add_node(OpKind::kCount, "odd", {x}, {y});
  Tensor t = Tensor::zeros(DType::kF32, {1});
  std::vector<Tensor> out;
  EXPECT_EQ(run_node_reference(*n, {&t}, &out).code(), StatusCode::kUnsupported);
  EXPECT_EQ(find_reference_kernel(OpKind::kCount), nullptr);
}

// Every single-node op case with its output Value one element larger on the last axis: the kernel must
// refuse with an error naming the node rather than write past its buffers. Resize alone takes the output
// shape as its target.
TEST(ReferenceBackend, KernelsRefuseOutputShapesTheyCannotFill) {
  int checked = 0;
  for (const OpCase& oc : all_op_cases()) {
    CaseGraph c = oc.build();
    if (c.graph.node_count() != 1) continue;
    graph::Node& n = *c.graph.nodes()[0];
    std::vector<const Tensor*> args;
    for (graph::Value* v : n.inputs) {
      if (v == nullptr) {
        args.push_back(nullptr);
      } else if (v->is_constant()) {
        args.push_back(&v->constant);
      } else {
        auto it = std::find(c.graph.inputs().begin(), c.graph.inputs().end(), v);
        ASSERT_NE(it, c.graph.inputs().end());
        args.push_back(&c.inputs[it - c.graph.inputs().begin()]);
      }
    }
    graph::Value* y = n.output(0);
    if (y->shape.empty()) y->shape = {1};
    y->shape.back() += 1;
    std::vector<Tensor> out;
    Status s = run_node_reference(n, args, &out);
    ++checked;
    if (n.op == OpKind::kResize) {
      EXPECT_TRUE(s.is_ok()) << oc.name << ": " << s.to_string();
      continue;
    }
    EXPECT_FALSE(s.is_ok()) << oc.name << " accepted output " << shape_str(y->shape);
    EXPECT_NE(s.message().find(n.describe()), std::string::npos) << oc.name << ": " << s.message();
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace steadyocr::testing

// Placement (runtime/placement.h): nodes the model's backend declines run on the next backend of its fallback
// chain, the output equals the reference, and every placement shows in the model's stats, the log and the counter.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>

#include "backends/reference/reference_backend.h"
#include "core/metrics.h"
#include "graph/onnx_builder.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::runtime {
namespace {

// Wraps a backend and declines one op kind; preparing a graph that still holds such a node is a test failure.
class DecliningBackend final : public Backend {
 public:
  DecliningBackend(std::shared_ptr<Backend> inner, graph::OpKind declined, std::string name)
      : inner_(std::move(inner)), declined_(declined), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  DeviceInfo device_info() const override { return inner_->device_info(); }
  bool supports(const graph::Node& node) const override { return node.op != declined_ && inner_->supports(node); }
  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override {
    ++prepared_graphs;
    for (const auto& n : graph.nodes()) {
      if (n->op == declined_) return internal_error(name_ + " was handed " + n->describe() + ", which it declines");
    }
    return inner_->prepare(graph);
  }
  int prepared_graphs = 0;

 private:
  std::shared_ptr<Backend> inner_;
  graph::OpKind declined_;
  std::string name_;
};

std::vector<float> values(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>((static_cast<int>(i * 7 % 11)) - 5);
  return v;
}

// x[N,3,H,W] -> Conv 3x3 (4 channels) -> Softmax over channels -> Conv 1x1 (2 channels) -> y, with one more Softmax
// at each end when `at_the_edges` (the declined op is then the first and the last node too).
std::string write_model(const std::string& file, bool at_the_edges) {
  testing::OnnxBuilder b;
  b.input("x", {-1, 3, -1, -1});
  b.initializer("w1", {4, 3, 3, 3}, values(4 * 3 * 3 * 3, 0.05f));
  b.initializer("b1", {4}, {0.1f, -0.2f, 0.3f, 0.f});
  b.initializer("w2", {2, 4, 1, 1}, values(2 * 4, 0.25f));
  std::string in = "x";
  if (at_the_edges) {
    testing::OnnxBuilder::attr_int(b.node("Softmax", {"x"}, {"x_soft"}, "soft_in"), "axis", 1);
    in = "x_soft";
  }
  auto* c1 = b.node("Conv", {in, "w1", "b1"}, {"c1"}, "conv1");
  testing::OnnxBuilder::attr_ints(c1, "pads", {1, 1, 1, 1});
  testing::OnnxBuilder::attr_ints(c1, "kernel_shape", {3, 3});
  testing::OnnxBuilder::attr_int(b.node("Softmax", {"c1"}, {"s1"}, "soft_mid"), "axis", 1);
  auto* c2 = b.node("Conv", {"s1", "w2"}, {at_the_edges ? "c2" : "y"}, "conv2");
  testing::OnnxBuilder::attr_ints(c2, "kernel_shape", {1, 1});
  if (at_the_edges) testing::OnnxBuilder::attr_int(b.node("Softmax", {"c2"}, {"y"}, "soft_out"), "axis", 1);
  b.output("y");
  const std::string path = ::testing::TempDir() + "/" + file;
  std::ofstream(path, std::ios::binary) << b.bytes();
  return path;
}

Tensor reference_output(const std::string& path, const Tensor& x) {
  auto m = Model::load(path, std::shared_ptr<Backend>(make_reference_backend()));
  EXPECT_TRUE(m.is_ok()) << m.status().to_string();
  auto y = (*m)->run(x);
  EXPECT_TRUE(y.is_ok()) << y.status().to_string();
  return y.is_ok() ? *y : Tensor();
}

bool identical(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

double placements_counted(const std::string& model, const std::string& from, const std::string& to) {
  return metrics::value("steadyocr_op_placements_total",
                        {{"model", model}, {"op", "Softmax"}, {"from", from}, {"to", to}});
}

size_t occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Placement, DeclinedOpRunsOnTheNextBackendVisibly) {
  for (bool edges : {false, true}) {
    SCOPED_TRACE(edges ? "declined op at the edges too" : "declined op in the middle");
    const std::string file = edges ? "placement_edges.onnx" : "placement_mid.onnx";
    const std::string path = write_model(file, edges);
    auto picky = std::make_shared<DecliningBackend>(std::shared_ptr<Backend>(make_reference_backend()),
                                                    graph::OpKind::kSoftmax, "picky-ref");
    ModelOptions o;
    o.fallbacks = {std::shared_ptr<Backend>(make_reference_backend())};
    auto m = Model::load(path, picky, o);
    ASSERT_TRUE(m.is_ok()) << m.status().to_string();
    const double counted = placements_counted(file, "picky-ref", "reference");

    ::testing::internal::CaptureStderr();
    for (const Shape& shape : {Shape{1, 3, 8, 8}, Shape{2, 3, 6, 10}}) {
      Tensor x = testing::random_tensor(shape, 3);
      auto y = (*m)->run(x);
      ASSERT_TRUE(y.is_ok()) << y.status().to_string();
      EXPECT_TRUE(identical(*y, reference_output(path, x)))
          << "placed run differs from the reference on " << shape_str(shape);
    }
    const std::string log = ::testing::internal::GetCapturedStderr();

    const int per_shape = edges ? 3 : 1;
    const ModelStats st = (*m)->stats();
    ASSERT_EQ(st.placements.size(), 1u);
    EXPECT_EQ(st.placements[0].op, "Softmax");
    EXPECT_EQ(st.placements[0].from, "picky-ref");
    EXPECT_EQ(st.placements[0].to, "reference");
    EXPECT_EQ(st.placements[0].nodes, static_cast<uint64_t>(2 * per_shape));  // two shapes planned
    EXPECT_EQ(placements_counted(file, "picky-ref", "reference") - counted, 2.0 * per_shape);
    EXPECT_EQ(occurrences(log, "declines Softmax"), 1u) << "one WARN line per model and op:\n" << log;
    EXPECT_NE(log.find("WARN  [runtime]"), std::string::npos) << log;
    EXPECT_NE(log.find("placed on reference"), std::string::npos) << log;
    EXPECT_NE(log.find("soft_mid"), std::string::npos) << log;
    // The top backend planned only the parts it takes: conv1 and conv2 (plus nothing at the edges), per shape.
    EXPECT_EQ(picky->prepared_graphs, 2 * 2);
  }
}

TEST(Placement, OnTheCpuBackendTheOutputMatchesTheReference) {
  auto names = available_backends();
  if (std::find(names.begin(), names.end(), "cpu") == names.end()) GTEST_SKIP() << "no cpu backend in this build";
  const std::string path = write_model("placement_cpu.onnx", true);
  auto cpu = create_backend("cpu");
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  auto picky = std::make_shared<DecliningBackend>(*cpu, graph::OpKind::kSoftmax, "picky-cpu");
  ModelOptions o;
  o.fallbacks = fallback_chain("cpu");
  auto m = Model::load(path, picky, o);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  Tensor x = testing::random_tensor({1, 3, 12, 9}, 5);
  auto y = (*m)->run(x);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  auto cmp = testing::compare(*y, reference_output(path, x));
  EXPECT_LT(cmp.nmse, 1e-10) << cmp.describe();
  ASSERT_EQ((*m)->stats().placements.size(), 1u);
  EXPECT_EQ((*m)->stats().placements[0].to, "reference");
  EXPECT_EQ((*m)->stats().placements[0].nodes, 3u);
}

TEST(Placement, NoBackendTakingANodeNamesItAndEveryBackendAsked) {
  const std::string path = write_model("placement_none.onnx", false);
  auto picky = std::make_shared<DecliningBackend>(std::shared_ptr<Backend>(make_reference_backend()),
                                                  graph::OpKind::kSoftmax, "picky-ref");
  auto also = std::make_shared<DecliningBackend>(std::shared_ptr<Backend>(make_reference_backend()),
                                                 graph::OpKind::kSoftmax, "picky-too");
  ModelOptions o;
  o.fallbacks = {also};
  auto m = Model::load(path, picky, o);
  ASSERT_TRUE(m.is_ok()) << m.status().to_string();
  auto y = (*m)->run(testing::random_tensor({1, 3, 8, 8}, 1));
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnsupported) << y.status().to_string();
  EXPECT_NE(y.status().message().find("Softmax 'soft_mid'"), std::string::npos) << y.status().to_string();
  EXPECT_NE(y.status().message().find("picky-ref, picky-too"), std::string::npos) << y.status().to_string();
  EXPECT_TRUE((*m)->stats().placements.empty());
}

TEST(Placement, AGraphTheBackendTakesWholeIsNotSplit) {
  const std::string path = write_model("placement_whole.onnx", true);
  auto picky = std::make_shared<DecliningBackend>(std::shared_ptr<Backend>(make_reference_backend()),
                                                  graph::OpKind::kTranspose, "picky-ref");
  ModelOptions o;
  o.fallbacks = fallback_chain("reference");
  EXPECT_TRUE(o.fallbacks.empty());
  o.fallbacks = {std::shared_ptr<Backend>(make_reference_backend())};
  auto m = Model::load(path, picky, o);
  ASSERT_TRUE(m.is_ok());
  Tensor x = testing::random_tensor({1, 3, 8, 8}, 2);
  auto y = (*m)->run(x);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_TRUE(identical(*y, reference_output(path, x)));
  EXPECT_TRUE((*m)->stats().placements.empty());
  EXPECT_EQ(picky->prepared_graphs, 1);
}

}  // namespace
}  // namespace steadyocr::runtime

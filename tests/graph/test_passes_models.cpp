// specialize + optimize on the three real models: node counts before/after, what must be gone, and the
// optimised graph computing the same as the unoptimised one (and as ONNX Runtime, where ../shared/data is).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <iostream>

#include "backends/reference/reference_backend.h"
#include "core/npy.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "graph/verifier.h"
#include "graph_test_util.h"
#include "test_util.h"

namespace steadyocr::graph {
namespace {

using testing::compare;
using testing::models_dir;

std::string histogram_str(const Graph& g) {
  std::string s;
  for (const auto& [k, v] : g.op_histogram()) s += fmt::format("{}={} ", k, v);
  return s;
}

struct Stages {
  size_t imported = 0, specialized = 0, optimized = 0;
  Graph spec;  // specialised, not optimised
  Graph opt;   // specialised and optimised
  PassReport report;
};

Stages run_stages(const std::string& file, const Shape& input) {
  Stages st;
  auto g = import_onnx(models_dir() + "/" + file);
  EXPECT_TRUE(g.is_ok()) << g.status().to_string();
  if (!g.is_ok()) return st;
  st.imported = g->node_count();
  Status s = specialize(*g, {input}, testing::ref_passes());
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  st.specialized = g->node_count();
  st.spec = g->clone();
  s = optimize(*g, testing::ref_passes(), &st.report);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  st.optimized = g->node_count();
  st.opt = std::move(g).value();
  std::cout << fmt::format("{} {}: imported {} nodes, specialised {}, optimised {}\n  passes: {}\n  after: {}\n", file,
                           shape_str(input), st.imported, st.specialized, st.optimized, st.report.describe(),
                           histogram_str(st.opt));
  return st;
}

Tensor run_reference(const Graph& g, const Tensor& x) {
  auto backend = make_reference_backend();
  auto prepared = backend->prepare(g);
  EXPECT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  if (!prepared.is_ok()) return {};
  std::vector<Tensor> out;
  Status s = (*prepared)->run({x}, &out);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  return s.is_ok() && !out.empty() ? out[0] : Tensor();
}

// Optimised vs unoptimised on the same input, and both vs ONNX Runtime's golden output when present. With
// `golden_abs_tol` > 0 the golden check is on the largest absolute difference instead of NMSE (see Det).
void check_numerics(const Stages& st, const std::string& golden_case, const Shape& shape, double golden_abs_tol = 0) {
  Tensor x = testing::random_tensor(shape, 7);
  std::string golden_out;
  if (!testing::shared_data_dir().empty()) {
    const std::string dir = testing::shared_data_dir() + "/golden/";
    auto in = load_npy(dir + golden_case + "_input.npy");
    if (in.is_ok() && in->shape() == shape) {
      x = *in;
      golden_out = dir + golden_case + "_output.npy";
    }
  }
  Tensor a = run_reference(st.spec, x);
  Tensor b = run_reference(st.opt, x);
  ASSERT_TRUE(a.defined() && b.defined());
  auto c = compare(b, a);
  std::cout << "  optimised vs specialised: " << c.describe() << "\n";
  EXPECT_LT(c.nmse, 1e-9);
  if (!golden_out.empty()) {
    auto want = load_npy(golden_out);
    ASSERT_TRUE(want.is_ok()) << want.status().to_string();
    auto ca = compare(a, *want), cb = compare(b, *want);
    std::cout << "  vs ONNX Runtime: specialised " << ca.describe() << "; optimised " << cb.describe() << "\n";
    if (golden_abs_tol > 0) {
      EXPECT_LT(ca.max_abs_diff, golden_abs_tol);
      EXPECT_LT(cb.max_abs_diff, golden_abs_tol);
    } else {
      EXPECT_LT(ca.nmse, 1e-6);
      EXPECT_LT(cb.nmse, 1e-6);
    }
  }
}

TEST(PassesModels, Det) {
  SO_REQUIRE_MODELS();
  const Shape shape = {1, 3, 96, 160};
  Stages st = run_stages("ch_PP-OCRv4_det_infer.onnx", shape);
  auto h = st.opt.op_histogram();
  EXPECT_EQ(h.count("BatchNormalization"), 0u);
  EXPECT_EQ(h["Conv"], 62);
  EXPECT_EQ(h["ConvTranspose"], 2);
  EXPECT_EQ(h.count("Clip"), 0u);     // all HardSwish patterns fused
  EXPECT_EQ(h.count("Relu"), 0u);     // into their convs
  EXPECT_EQ(h.count("Sigmoid"), 0u);  // the head's final sigmoid into its ConvTranspose
  EXPECT_LT(st.optimized, st.specialized / 2);
  EXPECT_TRUE(verify(st.opt, {true}).is_ok());
  // The golden det map is sigmoid of logits below -13 (random input): ONNX Runtime's approximate logistic
  // (0.5 + p(x)/q(x) in fp32) quantises those outputs to multiples of 2^-24, so NMSE against it measures its
  // rounding, not our graph. Two ulps of 0.5 is the meaningful bound there.
  check_numerics(st, "det", shape, 1.2e-7);
}

TEST(PassesModels, DetOddSize) {
  SO_REQUIRE_MODELS();
  const Shape shape = {1, 3, 64, 224};
  Stages st = run_stages("ch_PP-OCRv4_det_infer.onnx", shape);
  EXPECT_EQ(st.opt.outputs()[0]->shape, (Shape{1, 1, 64, 224}));
  check_numerics(st, "det_odd", shape, 1.2e-7);  // see Det
}

TEST(PassesModels, Rec) {
  SO_REQUIRE_MODELS();
  const Shape shape = {2, 3, 48, 160};
  Stages st = run_stages("ch_PP-OCRv4_rec_infer.onnx", shape);
  auto spec = st.spec.op_histogram();
  // The run-time shape computations are gone after specialisation; the 6 Slices left split q/k/v activations.
  EXPECT_EQ(spec.count("Shape"), 0u);
  EXPECT_EQ(spec.count("Cast"), 0u);
  EXPECT_EQ(spec.count("Concat"), 1u);  // the activation concat in the neck
  EXPECT_EQ(spec["Slice"], 6);
  for (const auto& n : st.spec.nodes()) {
    if (n->op == OpKind::kReshape) {
      EXPECT_EQ(n->inputs.size(), 1u) << n->describe();
    }
    for (const Value* o : n->outputs) EXPECT_EQ(o->dtype, DType::kF32) << n->describe();
  }
  auto h = st.opt.op_histogram();
  EXPECT_EQ(h["LayerNormalization"], 5);  // one per Pow/Sqrt pattern
  EXPECT_EQ(h.count("Pow"), 0u);
  EXPECT_EQ(h.count("Sqrt"), 0u);
  EXPECT_EQ(h.count("ReduceMean"), 0u);
  EXPECT_EQ(h.count("BatchNormalization"), 0u);
  EXPECT_EQ(h["Conv"], 38);
  check_numerics(st, "rec", shape);
}

TEST(PassesModels, Cls) {
  SO_REQUIRE_MODELS();
  const Shape shape = {3, 3, 48, 192};
  Stages st = run_stages("ch_ppocr_mobile_v2.0_cls_infer.onnx", shape);
  auto spec = st.spec.op_histogram();
  EXPECT_EQ(spec.count("Shape"), 0u);
  EXPECT_EQ(spec.count("Cast"), 0u);
  EXPECT_EQ(spec.count("Slice"), 0u);
  EXPECT_EQ(spec.count("Concat"), 0u);
  auto h = st.opt.op_histogram();
  EXPECT_EQ(h.count("BatchNormalization"), 0u);
  EXPECT_EQ(h["Conv"], 53);
  check_numerics(st, "cls", shape);
}

TEST(PassesModels, SpecializeRejectsWrongInputShapes) {
  SO_REQUIRE_MODELS();
  auto rec = import_onnx(models_dir() + "/ch_PP-OCRv4_rec_infer.onnx");
  ASSERT_TRUE(rec.is_ok());
  Status s = specialize(*rec, {{1, 3, 32, 320}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input 'x'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("[?,3,48,?]"), std::string::npos) << s.message();

  auto det = import_onnx(models_dir() + "/ch_PP-OCRv4_det_infer.onnx");
  ASSERT_TRUE(det.is_ok());
  s = specialize(*det, {{1, 4, 64, 64}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dimension 1 must be 3"), std::string::npos) << s.message();

  s = specialize(*det, {{1, 3, 64}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 3 instead of 4"), std::string::npos) << s.message();

  // A size the FPN cannot take (not a multiple of 32): shapes clash inside; the message names the input.
  auto det2 = import_onnx(models_dir() + "/ch_PP-OCRv4_det_infer.onnx");
  ASSERT_TRUE(det2.is_ok());
  s = specialize(*det2, {{1, 3, 100, 100}}, testing::ref_passes());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'x' [1,3,100,100]"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace steadyocr::graph

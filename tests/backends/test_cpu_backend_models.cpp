// The oneDNN CPU backend on the three real models: ONNX Runtime's golden outputs (../shared/data/golden),
// as imported and after optimize(), and the reference backend on a larger page-like det input and a rec
// batch. NMSE < 1e-6 everywhere, same argmax per row for rec and cls. det's golden map on uniform noise is
// saturated (logits -42..-13; ORT's approximate sigmoid is off by ~1% relative there), so as in
// test_golden_models.cpp the map is checked by absolute difference and the network by its logits against an
// independent float64 evaluation (tests/data/backends/*_logits.npy).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "backends/reference/reference_backend.h"
#include "core/npy.h"
#include "core/timer.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

std::shared_ptr<Backend> cpu_backend() {
  auto b = runtime::create_backend("cpu");
  return b.is_ok() ? b.value() : nullptr;
}

#define SO_REQUIRE_CPU(b) \
  if (!(b)) GTEST_SKIP() << "the cpu (oneDNN) backend is not in this build"

int64_t argmax_mismatches(const Tensor& a, const Tensor& b) {
  const int64_t cols = a.dim(-1), rows = a.numel() / cols;
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* pa = a.data<float>() + r * cols;
    const float* pb = b.data<float>() + r * cols;
    bad += std::max_element(pa, pa + cols) - pa != std::max_element(pb, pb + cols) - pb;
  }
  return bad;
}

// The graph's pre-sigmoid output: drops a final Sigmoid, or the Sigmoid fused into the last (transposed) conv.
bool strip_final_sigmoid(graph::Graph& g) {
  graph::Node* last = g.outputs()[0]->producer;
  if (!last) return false;
  if (last->op == graph::OpKind::kSigmoid) {
    g.outputs()[0] = last->input(0);
    g.remove_dead();
    return true;
  }
  if (auto* a = std::get_if<graph::ConvTransposeAttrs>(&last->attrs); a && a->act.kind == graph::ActKind::kSigmoid) {
    a->act = graph::Activation{};
    return true;
  }
  if (auto* a = std::get_if<graph::ConvAttrs>(&last->attrs); a && a->act.kind == graph::ActKind::kSigmoid) {
    a->act = graph::Activation{};
    return true;
  }
  return false;
}

Result<Tensor> run_graph(Backend& backend, const graph::Graph& imported, const Tensor& input, bool optimized,
                         bool logits = false) {
  graph::Graph g = imported.clone();
  RETURN_IF_ERROR(graph::specialize(g, {input.shape()}, runtime::reference_pass_options()));
  if (optimized) RETURN_IF_ERROR(graph::optimize(g, runtime::reference_pass_options()));
  if (logits && !strip_final_sigmoid(g)) return internal_error("det output is not a sigmoid");
  ASSIGN_OR_RETURN(auto prepared, backend.prepare(g));
  std::vector<Tensor> out;
  RETURN_IF_ERROR(prepared->run({input}, &out));
  if (out.size() != 1) return internal_error("expected one output");
  return std::move(out[0]);
}

struct GoldenCase {
  const char* name;
  const char* model;
  bool argmax_rows;
  bool saturated_sigmoid = false;  // det: see the file comment
};

class CpuGolden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(CpuGolden, MatchesOnnxRuntime) {
  SO_REQUIRE_MODELS();
  SO_REQUIRE_SHARED_DATA();
  auto backend = cpu_backend();
  SO_REQUIRE_CPU(backend);
  const GoldenCase& gc = GetParam();
  const std::string dir = shared_data_dir() + "/golden/";
  auto input = load_npy(dir + gc.name + "_input.npy");
  auto expected = load_npy(dir + gc.name + "_output.npy");
  ASSERT_TRUE(input.is_ok()) << input.status().to_string();
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  auto imported = graph::import_onnx(models_dir() + "/" + gc.model);
  ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
  for (bool optimized : {false, true}) {
    SCOPED_TRACE(optimized ? "optimized" : "specialised only");
    auto out = run_graph(*backend, *imported, *input, optimized);
    ASSERT_TRUE(out.is_ok()) << out.status().to_string();
    Comparison c = compare(*out, *expected);
    std::printf("[cpu golden] %-8s %-17s %s\n", gc.name, optimized ? "optimized" : "specialised-only",
                c.describe().c_str());
    EXPECT_TRUE(c.shape_match) << out->describe() << " vs " << expected->describe();
    EXPECT_EQ(c.non_finite, 0);
    if (!gc.saturated_sigmoid) {
      EXPECT_LT(c.nmse, 1e-6) << c.describe();
      if (gc.argmax_rows && c.shape_match) {
        EXPECT_EQ(argmax_mismatches(*out, *expected), 0);
      }
      continue;
    }
    EXPECT_LE(c.max_abs_diff, 4.0 / (1 << 24)) << c.describe();
    auto logits = load_npy(source_dir() + "/tests/data/backends/" + gc.name + "_logits.npy");
    ASSERT_TRUE(logits.is_ok()) << logits.status().to_string();
    auto z = run_graph(*backend, *imported, *input, optimized, /*logits=*/true);
    ASSERT_TRUE(z.is_ok()) << z.status().to_string();
    Comparison cz = compare(*z, *logits);
    std::printf("[cpu golden] %-8s %-17s logits vs float64 numpy: %s\n", gc.name,
                optimized ? "optimized" : "specialised-only", cz.describe().c_str());
    EXPECT_LT(cz.nmse, 1e-6) << cz.describe();
  }
}

INSTANTIATE_TEST_SUITE_P(Models, CpuGolden,
                         ::testing::Values(GoldenCase{"det", "ch_PP-OCRv4_det_infer.onnx", false, true},
                                           GoldenCase{"det_odd", "ch_PP-OCRv4_det_infer.onnx", false, true},
                                           GoldenCase{"rec", "ch_PP-OCRv4_rec_infer.onnx", true},
                                           GoldenCase{"cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", true}),
                         [](const auto& info) { return std::string(info.param.name); });

// Larger shapes than the goldens (blocked layouts with more spatial tiles, rec's wider sequence) against the
// reference backend, through runtime::Model as the pipeline uses it.
struct ShapeCase {
  const char* name;
  const char* model;
  Shape shape;
  bool argmax_rows;
};

class CpuVsReference : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(CpuVsReference, MatchesReference) {
  SO_REQUIRE_MODELS();
  auto backend = cpu_backend();
  SO_REQUIRE_CPU(backend);
  const ShapeCase& sc = GetParam();
  const std::string path = models_dir() + "/" + sc.model;
  auto cpu = runtime::Model::load(path, backend);
  auto ref = runtime::Model::load(path, std::shared_ptr<Backend>(make_reference_backend()));
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  // Image-like input: smooth gradients plus noise, normalised like the pipeline's.
  Tensor x = random_tensor(sc.shape, 7, -0.5f, 0.5f);
  float* p = x.data<float>();
  const int64_t w = sc.shape[3], hw = sc.shape[2] * w;
  for (int64_t i = 0; i < x.numel(); ++i) p[i] += 1.5f * std::sin(0.05f * (i % w)) * std::cos(0.07f * ((i % hw) / w));
  auto expected = (*ref)->run(x);
  ASSERT_TRUE(expected.is_ok()) << expected.status().to_string();
  Stopwatch sw;
  auto first = (*cpu)->run(x);
  const double first_ms = sw.elapsed_ms();
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  sw.reset();
  auto second = (*cpu)->run(x);
  const double second_ms = sw.elapsed_ms();
  ASSERT_TRUE(second.is_ok()) << second.status().to_string();
  Comparison c = compare(*first, *expected);
  std::printf("[cpu vs reference] %-5s %-16s %s (first run incl. planning %.1f ms, second %.1f ms)\n", sc.name,
              shape_str(sc.shape).c_str(), c.describe().c_str(), first_ms, second_ms);
  EXPECT_LT(c.nmse, 1e-6) << c.describe();
  EXPECT_EQ(c.non_finite, 0);
  if (sc.argmax_rows) {
    EXPECT_EQ(argmax_mismatches(*first, *expected), 0);
  }
  // The cached plan gives the same bytes on the second run (no state leaks between runs).
  ASSERT_EQ(first->shape(), second->shape());
  EXPECT_EQ(0, std::memcmp(first->raw(), second->raw(), first->nbytes()));
  EXPECT_EQ((*cpu)->stats().plans_built, 1u);
}

INSTANTIATE_TEST_SUITE_P(Models, CpuVsReference,
                         ::testing::Values(ShapeCase{"det", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 320, 224}, false},
                                           ShapeCase{"rec", "ch_PP-OCRv4_rec_infer.onnx", {6, 3, 48, 320}, true},
                                           ShapeCase{
                                               "cls", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {6, 3, 48, 192}, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace steadyocr::testing

namespace steadyocr::testing {
namespace {

// Every intermediate value of det (optimised graph) on the cpu backend against the reference, so a wrong
// kernel or layout shows up at the node that broke rather than at the output.
TEST(CpuLayerwise, DetIntermediatesMatchReference) {
  SO_REQUIRE_MODELS();
  SO_REQUIRE_SHARED_DATA();
  auto backend = cpu_backend();
  SO_REQUIRE_CPU(backend);
  auto input = load_npy(shared_data_dir() + "/golden/det_input.npy");
  ASSERT_TRUE(input.is_ok());
  auto imported = graph::import_onnx(models_dir() + "/ch_PP-OCRv4_det_infer.onnx");
  ASSERT_TRUE(imported.is_ok());
  graph::Graph g = imported->clone();
  ASSERT_TRUE(graph::specialize(g, {input->shape()}, runtime::reference_pass_options()).is_ok());
  ASSERT_TRUE(graph::optimize(g, runtime::reference_pass_options()).is_ok());
  std::vector<graph::Value*> outs;
  for (const auto& n : g.nodes()) {
    for (graph::Value* v : n->outputs) {
      if (v && v->dtype == DType::kF32 && !g.is_graph_output(v)) outs.push_back(v);
    }
  }
  for (graph::Value* v : outs) g.outputs().push_back(v);
  auto ref = make_reference_backend();
  auto pr = ref->prepare(g);
  auto pc = backend->prepare(g);
  ASSERT_TRUE(pr.is_ok()) << pr.status().to_string();
  ASSERT_TRUE(pc.is_ok()) << pc.status().to_string();
  std::vector<Tensor> er, ec;
  ASSERT_TRUE((*pr)->run({*input}, &er).is_ok());
  ASSERT_TRUE((*pc)->run({*input}, &ec).is_ok());
  ASSERT_EQ(er.size(), ec.size());
  for (size_t i = 0; i < er.size(); ++i) {
    Comparison c = compare(ec[i], er[i]);
    const graph::Value* v = g.outputs()[i];
    EXPECT_LT(c.nmse, 1e-9) << v->name << " (" << (v->producer ? v->producer->describe() : "input") << ") "
                            << c.describe();
  }
}

// One plan for every input shape (ModelOptions::symbolic_plans) against the plans made per shape, on the three models
// and shapes the pipeline makes (odd widths included): the same outputs (NMSE < 1e-9, the same argmax per rec/cls
// row), one plan built for all shapes, and a new shape costing no planning.
TEST(CpuSymbolicPlan, OnePlanForEveryShapeMatchesThePerShapePlans) {
  SO_REQUIRE_MODELS();
  auto cpu = cpu_backend();
  SO_REQUIRE_CPU(cpu);
  struct Case {
    const char* file;
    std::vector<Shape> shapes;
  };
  const Case cases[] = {
      {"ch_PP-OCRv4_det_infer.onnx", {{1, 3, 96, 320}, {1, 3, 160, 224}, {1, 3, 320, 96}, {2, 3, 64, 64}}},
      {"ch_PP-OCRv4_rec_infer.onnx", {{1, 3, 48, 96}, {3, 3, 48, 321}, {6, 3, 48, 700}, {2, 3, 48, 9}}},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {{2, 3, 48, 192}, {6, 3, 48, 192}}},
  };
  for (const Case& c : cases) {
    runtime::ModelOptions symbolic, per_shape;
    symbolic.reuse_generic_passes = per_shape.reuse_generic_passes = true;
    per_shape.symbolic_plans = false;
    auto a = runtime::Model::load(models_dir() + "/" + c.file, cpu, symbolic);
    auto b = runtime::Model::load(models_dir() + "/" + c.file, cpu, per_shape);
    ASSERT_TRUE(a.is_ok() && b.is_ok());
    ASSERT_TRUE((*a)->stats().symbolic_plan) << c.file << ": the cpu backend made no plan for every shape";
    EXPECT_FALSE((*b)->stats().symbolic_plan);
    uint32_t seed = 5;
    for (const Shape& s : c.shapes) {
      const Tensor x = random_tensor(s, seed++, 0.f, 1.f);
      runtime::CallInfo info;
      auto ya = (*a)->run_call(x, &info);
      auto yb = (*b)->run(x);
      ASSERT_TRUE(ya.is_ok()) << c.file << " " << shape_str(s) << ": " << ya.status().to_string();
      ASSERT_TRUE(yb.is_ok()) << yb.status().to_string();
      ASSERT_EQ(ya->shape(), yb->shape());
      const Comparison cmp = compare(*ya, *yb);
      EXPECT_LE(cmp.nmse, 1e-9) << c.file << " " << shape_str(s) << ": " << cmp.describe();
      if (ya->rank() == 3 || ya->rank() == 2) {
        EXPECT_EQ(argmax_mismatches(*ya, *yb), 0) << c.file << " " << shape_str(s);
      }
      EXPECT_LT(info.profile.plan_ms, 0.5) << c.file << ": finding the plan for a new shape " << shape_str(s);
    }
    EXPECT_EQ((*a)->stats().plans_built, 1u) << c.file;
    EXPECT_EQ((*b)->stats().plans_built, c.shapes.size()) << c.file;
  }
}

}  // namespace
}  // namespace steadyocr::testing

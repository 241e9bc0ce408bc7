// det on a real page (tests/data/golden_page, our own sample) against ONNX Runtime's output, on every backend
// present, with and without the graph passes: NMSE < 1e-6 (fp32) — the well-conditioned counterpart of the
// saturated uniform-noise det golden (see test_golden_models.cpp and tests/data/golden_page/README.md).
#include <gtest/gtest.h>

#include "core/npy.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

class DetPageGolden : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(DetPageGolden, MatchesOnnxRuntime) {
  SO_REQUIRE_MODELS();
  auto [backend_name, optimized] = GetParam();
  std::string dir = source_dir() + "/tests/data/golden_page";
  if (!file_exists(dir + "/det_page_output.npy")) {
    GTEST_SKIP() << "det_page_output.npy not generated yet (scripts/make_page_golden.py on a machine with onnxruntime)";
  }
  auto input = load_npy(dir + "/det_page_input.npy");
  auto expected = load_npy(dir + "/det_page_output.npy");
  ASSERT_TRUE(input.is_ok() && expected.is_ok());
  auto backend = runtime::create_backend(backend_name);
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  auto g = graph::import_onnx(models_dir() + "/ch_PP-OCRv4_det_infer.onnx");
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  ASSERT_TRUE(graph::specialize(*g, {input->shape()}, runtime::reference_pass_options()).is_ok());
  if (optimized) {
    ASSERT_TRUE(graph::optimize(*g, runtime::reference_pass_options()).is_ok());
  }
  auto prepared = (*backend)->prepare(*g);
  ASSERT_TRUE(prepared.is_ok()) << prepared.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*prepared)->run({*input}, &out).is_ok());
  Comparison c = compare(out[0], *expected);
  bool reduced = backend_name.find("fp16") != std::string::npos;
  double tol = reduced ? 1e-3 : 1e-6;
  EXPECT_LT(c.nmse, tol) << backend_name << (optimized ? " optimized: " : " plain: ") << c.describe();
  std::printf("det page golden on %s (%s): %s\n", backend_name.c_str(), optimized ? "optimized" : "plain",
              c.describe().c_str());
}

std::vector<std::tuple<std::string, bool>> cases() {
  std::vector<std::tuple<std::string, bool>> v;
  for (auto& b : runtime::available_backends()) {
    for (bool opt : {false, true}) v.emplace_back(b, opt);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(AllBackends, DetPageGolden, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<std::tuple<std::string, bool>>& info) {
                           std::string n =
                               std::get<0>(info.param) + (std::get<1>(info.param) ? "_optimized" : "_plain");
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace steadyocr::testing

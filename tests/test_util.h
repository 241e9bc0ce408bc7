// Shared helpers for the test suites: where models and evaluation data live, and tensor comparison.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "core/compare.h"
#include "core/tensor.h"

namespace steadyocr::testing {

// models/ in the source tree, or $STEADYOCR_MODELS.
std::string models_dir();
// ../shared/data beside the checkout, or $STEADYOCR_SHARED_DATA; empty when absent.
std::string shared_data_dir();
std::string source_dir();
bool file_exists(const std::string& path);

// NMSE, max abs diff, non-finite count and shape check (src/core/compare.h).
using ::steadyocr::Comparison;
inline Comparison compare(const Tensor& actual, const Tensor& expected) {
  return compare_tensors(actual, expected);
}

// Deterministic uniform values in [lo, hi).
Tensor random_tensor(const Shape& shape, uint32_t seed, float lo = -1.f, float hi = 1.f);

}  // namespace steadyocr::testing

// Skips the current test when the models are not present (they are fetched by the setup command).
#define SO_REQUIRE_MODELS()                                                                                     \
  do {                                                                                                          \
    if (!::steadyocr::testing::file_exists(::steadyocr::testing::models_dir() + "/ch_PP-OCRv4_det_infer.onnx")) \
      GTEST_SKIP() << "models not found in " << ::steadyocr::testing::models_dir()                              \
                   << " (run scripts/setup.sh or set STEADYOCR_MODELS)";                                        \
  } while (0)

#define SO_REQUIRE_SHARED_DATA()                                                               \
  do {                                                                                         \
    if (::steadyocr::testing::shared_data_dir().empty())                                       \
      GTEST_SKIP() << "../shared/data not found (set STEADYOCR_SHARED_DATA to run this test)"; \
  } while (0)

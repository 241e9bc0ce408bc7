#include "test_util.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <random>

namespace steadyocr::testing {

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string source_dir() {
  return STEADYOCR_SOURCE_DIR;
}

std::string models_dir() {
  if (const char* e = std::getenv("STEADYOCR_MODELS")) return e;
  return source_dir() + "/models";
}

std::string shared_data_dir() {
  if (const char* e = std::getenv("STEADYOCR_SHARED_DATA")) return file_exists(e) ? e : "";
  std::string d = source_dir() + "/../shared/data";
  return file_exists(d) ? d : "";
}

std::string Comparison::describe() const {
  return fmt::format("nmse={:.3g} max_abs_diff={:.3g} non_finite={} shape_match={}", nmse, max_abs_diff, non_finite,
                     shape_match);
}

Comparison compare(const Tensor& actual, const Tensor& expected) {
  Comparison c;
  if (actual.shape() != expected.shape()) {
    c.shape_match = false;
    c.nmse = INFINITY;
    return c;
  }
  std::vector<float> a = actual.to_floats(), b = expected.to_floats();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) {
      ++c.non_finite;
      continue;
    }
    double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
    c.max_abs_diff = std::max(c.max_abs_diff, std::abs(d));
  }
  c.nmse = num / std::max(den, 1e-30);
  if (c.non_finite) c.nmse = INFINITY;
  return c;
}

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

}  // namespace steadyocr::testing

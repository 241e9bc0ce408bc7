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

Tensor random_tensor(const Shape& shape, uint32_t seed, float lo, float hi) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(rng);
  return t;
}

}  // namespace steadyocr::testing

// The CUDA kernels' arithmetic that is shared with the host (src/backends/cuda/kernels/hard_swish.h): the same bits as
// the plain formula it replaces. IEEE fused multiply-adds and roundings are the same on the host and the device.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "backends/cuda/kernels/hard_swish.h"

namespace {

float from_bits(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}

uint32_t to_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

// The formula as the kernels computed it before (a division by 6).
float hard_swish_divided(float x) {
  return x * std::fmin(std::fmax(x / 6.f + 0.5f, 0.f), 1.f);
}

// Whether hard_swish(x) has the bits of the divided form (any NaN for a NaN).
bool same_as_divided(float x) {
  const float want = hard_swish_divided(x), got = steadyocr::cuda::k::hard_swish(x);
  return to_bits(want) == to_bits(got) || (std::isnan(want) && std::isnan(got));
}

TEST(CudaMath, HardSwishWithoutDivisionHasTheDividedFormsBits) {
  const float special[] = {0.f,
                           -0.f,
                           3.f,
                           -3.f,
                           3.5f,
                           -3.5f,
                           std::nextafter(3.f, 0.f),
                           std::nextafter(-3.f, 0.f),
                           1e-40f,
                           -1e-40f,
                           FLT_MIN,
                           FLT_MAX,
                           -FLT_MAX,
                           std::numeric_limits<float>::infinity(),
                           -std::numeric_limits<float>::infinity(),
                           std::numeric_limits<float>::quiet_NaN()};
  for (float x : special) EXPECT_TRUE(same_as_divided(x)) << "x = " << x;
  EXPECT_EQ(steadyocr::cuda::k::hard_swish(std::numeric_limits<float>::infinity()),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(steadyocr::cuda::k::hard_swish(6.f), 6.f);
  EXPECT_EQ(steadyocr::cuda::k::hard_swish(-6.f), -0.f);
  EXPECT_FLOAT_EQ(steadyocr::cuda::k::hard_swish(1.f), 1.f * (1.f / 6.f + 0.5f));
  // Every float with STEADYOCR_TEST_EXHAUSTIVE=1 (about a minute on two cores), else every 97th bit pattern and every
  // float near the gate's ends (where the quotient's last bit can decide the clamp).
  const char* all = std::getenv("STEADYOCR_TEST_EXHAUSTIVE");
  const uint64_t step = all && std::string(all) == "1" ? 1 : 97;
  uint64_t checked = 0, differ = 0;
  uint32_t first = 0;
  auto check = [&](uint32_t bits) {
    ++checked;
    if (!same_as_divided(from_bits(bits)) && differ++ == 0) first = bits;
  };
  for (uint64_t b = 0; b < (uint64_t{1} << 32); b += step) check(static_cast<uint32_t>(b));
  for (float end : {3.f, -3.f, 0.f}) {
    float x = end;
    for (int i = 0; i < 100000; ++i) x = std::nextafter(x, -INFINITY);
    for (int i = 0; i < 200000; ++i, x = std::nextafter(x, INFINITY)) check(to_bits(x));
  }
  EXPECT_EQ(differ, 0u) << differ << " of " << checked << " inputs differ; the first: bits " << std::hex << first;
  std::printf("hard-swish without division: %llu inputs checked%s, %llu differ\n",
              static_cast<unsigned long long>(checked), step == 1 ? " (all 2^32)" : "",
              static_cast<unsigned long long>(differ));
}

}  // namespace

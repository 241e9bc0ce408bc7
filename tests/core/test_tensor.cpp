// Tensor element conversion: reduced-precision tensors read on the host give their values, not zeros.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/half.h"
#include "core/tensor.h"
#include "test_util.h"

namespace steadyocr {
namespace {

Tensor from_bits(DType dt, const std::vector<uint16_t>& bits) {
  Tensor t = Tensor::empty(dt, {static_cast<int64_t>(bits.size())});
  std::memcpy(t.raw(), bits.data(), bits.size() * sizeof(uint16_t));
  return t;
}

TEST(Tensor, ToInt64sSaturatesFloats) {
  // Model files give these: a float past int64's range (or NaN) converted directly was undefined behaviour
  // (fuzz_onnx, a Resize's sizes of 2.6e32).
  Tensor t = Tensor::empty(DType::kF32, {6});
  float* p = t.data<float>();
  p[0] = 3.9f;
  p[1] = -7.5f;
  p[2] = 2.6e32f;
  p[3] = -2.6e32f;
  p[4] = std::numeric_limits<float>::quiet_NaN();
  p[5] = std::numeric_limits<float>::infinity();
  EXPECT_EQ(t.to_int64s(),
            (std::vector<int64_t>{3, -7, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 0,
                                  std::numeric_limits<int64_t>::max()}));
}

TEST(Tensor, ToFloatsWidensHalf) {
  // 1, -2, 0.5, the largest finite half, the smallest subnormal, +inf, NaN.
  Tensor t = from_bits(DType::kF16, {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x7C00, 0x7E00});
  std::vector<float> v = t.to_floats();
  ASSERT_EQ(v.size(), 7u);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(v[1], -2.f);
  EXPECT_EQ(v[2], 0.5f);
  EXPECT_EQ(v[3], 65504.f);
  EXPECT_EQ(v[4], std::ldexp(1.f, -24));
  EXPECT_EQ(v[5], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(v[6]));
}

TEST(Tensor, ToFloatsWidensBfloat16) {
  // 1, -2.5, 3.140625, -0, the largest finite bfloat16.
  Tensor t = from_bits(DType::kBF16, {0x3F80, 0xC020, 0x4049, 0x8000, 0x7F7F});
  std::vector<float> v = t.to_floats();
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0], 1.f);
  EXPECT_EQ(v[1], -2.5f);
  EXPECT_EQ(v[2], 3.140625f);
  EXPECT_EQ(v[3], 0.f);
  EXPECT_TRUE(std::signbit(v[3]));
  EXPECT_EQ(v[4], 3.3895314e38f);
}

TEST(Tensor, HalfRoundTripIsWithinHalfAnUlp) {
  Tensor x = testing::random_tensor({1000}, 5);
  std::vector<uint16_t> bits(static_cast<size_t>(x.numel()));
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = float_to_half(x.data<float>()[i] * 100.f);
  std::vector<float> back = from_bits(DType::kF16, bits).to_floats();
  for (size_t i = 0; i < bits.size(); ++i) {
    const float want = x.data<float>()[i] * 100.f;
    EXPECT_LE(std::fabs(back[i] - want), std::fabs(want) * std::ldexp(1.f, -11) + std::ldexp(1.f, -25)) << i;
  }
}

}  // namespace
}  // namespace steadyocr

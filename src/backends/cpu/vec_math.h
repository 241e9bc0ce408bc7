// Internal to the oneDNN CPU backend: float math written so that the compiler vectorises loops calling it
// (no libm calls in the hot loops of our own kernels).
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>

// Hot loops of our own kernels are compiled for AVX-512, AVX2 and baseline x86-64 and picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SO_CPU_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SO_CPU_CLONES
#endif

namespace steadyocr::cpu {

// e^x with the Cephes polynomial (about 1 ulp); inputs are clamped to [-87.3, 88] so the result stays finite and
// normal. Branch-free (value ternaries, round-to-nearest by the 1.5*2^23 trick) so loops calling it vectorise.
inline float vmin(float a, float b) {
  return b < a ? b : a;
}
inline float vmax(float a, float b) {
  return a < b ? b : a;
}

inline float vexp(float x) {
  x = vmin(vmax(x, -87.3f), 88.f);
  const float fx = (x * 1.44269504088896341f + 12582912.f) - 12582912.f;  // round(x / ln 2)
  const float r = x - fx * 0.693359375f + fx * 2.12194440e-4f;
  const float r2 = r * r;
  float p = 1.9875691500E-4f;
  p = p * r + 1.3981999507E-3f;
  p = p * r + 8.3334519073E-3f;
  p = p * r + 4.1665795894E-2f;
  p = p * r + 1.6666665459E-1f;
  p = p * r + 5.0000001201E-1f;
  p = p * r2 + r + 1.f;
  const int32_t e = (static_cast<int32_t>(fx) + 127) << 23;
  return p * std::bit_cast<float>(e);
}

inline float vsigmoid(float x) {
  return 1.f / (1.f + vexp(-x));
}

}  // namespace steadyocr::cpu

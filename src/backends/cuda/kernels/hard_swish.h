// Hard-swish, x * clamp(x / 6 + 1/2, 0, 1), without the division: the same bits for every float (host and device).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define SO_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define SO_HOST_DEVICE inline
#endif

namespace steadyocr::cuda::k {

// x / 6 as q0 = x * RN(1/6), corrected once with the fused residual x - 6 * q0, on x clamped to [-3.5, 3.5] (outside
// [-3, 3] the gate is 0 or 1 either way; the clamp keeps infinities out of the residual). The result equals
// x * fminf(fmaxf(x / 6.f + 0.5f, 0.f), 1.f) bit for bit on all 2^32 inputs (tests/backends/test_cuda_math.cpp:
// a sample, and all of them with STEADYOCR_TEST_EXHAUSTIVE=1). An IEEE division is a long sequence with a slow-path
// branch on the GPU; with it, hard-swish cost 2.3-2.8 us per fused pointwise launch against about 0.5 us for an
// instruction with an immediate (bench/pointwise_bench, H100, docs/BENCHMARKS.md).
SO_HOST_DEVICE float hard_swish(float x) {
  constexpr float kSixth = 1.f / 6.f;
  const float xc = fminf(fmaxf(x, -3.5f), 3.5f);
#if defined(__CUDA_ARCH__)
  const float q0 = __fmul_rn(xc, kSixth);  // not contracted into the correction
  const float q = __fmaf_rn(__fmaf_rn(-q0, 6.f, xc), kSixth, q0);
#else
  const float q0 = xc * kSixth;
  const float q = std::fma(std::fma(-q0, 6.f, xc), kSixth, q0);
#endif
  return x * fminf(fmaxf(q + 0.5f, 0.f), 1.f);
}

}  // namespace steadyocr::cuda::k

#undef SO_HOST_DEVICE

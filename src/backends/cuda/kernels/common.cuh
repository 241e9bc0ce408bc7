// Device helpers shared by our kernels: typed loads/stores by runtime element type, launch geometry.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "backends/cuda/kernels/kernels.h"

namespace steadyocr::cuda::k {

__device__ __forceinline__ float load_as_float(const void* p, Dt dt, int64_t i) {
  if (dt == Dt::kF16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void store_from_float(void* p, Dt dt, int64_t i, float v) {
  if (dt == Dt::kF16) {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
  return __half2float(v);
}

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}

constexpr int kThreads = 256;

// Blocks for a grid-stride loop over n elements (capped: the loop covers the rest).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 8) b = 65535LL * 8;
  return static_cast<unsigned>(b);
}

}  // namespace steadyocr::cuda::k

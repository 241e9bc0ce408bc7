// Pooling on NCHW: windowed max/average (one thread per output) and global average (one block per plane, 16-byte
// words where the planes allow).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void pool_kernel(const __grid_constant__ PoolParams p, int64_t n) {
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int ox = static_cast<int>(i % p.out_w);
    int oy = static_cast<int>((i / p.out_w) % p.out_h);
    int64_t plane = i / (static_cast<int64_t>(p.out_w) * p.out_h);
    const T* src = x + plane * p.in_h * p.in_w;
    int y0 = oy * p.sh - p.pad_t, x0 = ox * p.sw - p.pad_l;
    float acc = p.is_max ? -INFINITY : 0.f;
    int valid = 0;
    for (int ky = 0; ky < p.kh; ++ky) {
      int iy = y0 + ky;
      if (iy < 0 || iy >= p.in_h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        int ix = x0 + kx;
        if (ix < 0 || ix >= p.in_w) continue;
        float v = to_f(src[iy * p.in_w + ix]);
        acc = p.is_max ? fmaxf(acc, v) : acc + v;
        ++valid;
      }
    }
    if (!p.is_max) {
      int div = valid;
      if (p.count_include_pad) {
        // The window clipped to the padded extent (not beyond it, as ceil_mode may reach).
        int ys = max(y0, -p.pad_t), ye = min(y0 + p.kh, p.in_h + p.pad_b);
        int xs = max(x0, -p.pad_l), xe = min(x0 + p.kw, p.in_w + p.pad_r);
        div = (ye - ys) * (xe - xs);
      }
      acc = div > 0 ? acc / div : 0.f;
    }
    y[i] = from_f<T>(acc);
  }
}

// One block per plane. Planes of whole 16-byte words (kVec: halves in eights, floats in fours) are read a word at a
// time; the detector's attention planes ([1, C, 240, 184] with C around 100) take 1024 threads a block, so that a
// hundred blocks still keep the device's memory busy (one block of 256 threads read them at 17 us a launch).
template <typename T, int kBlock, bool kVec>
__global__ void __launch_bounds__(kBlock) global_avg_pool_kernel(const T* x, T* y, int64_t hw) {
  __shared__ float partial[kBlock / 32];
  const T* src = x + blockIdx.x * hw;
  float s = 0.f;
  if constexpr (kVec) {
    constexpr int kPer = 16 / sizeof(T);
    const uint4* words = reinterpret_cast<const uint4*>(src);
    const int64_t n_words = hw / kPer;
    for (int64_t i = threadIdx.x; i < n_words; i += kBlock) {
      const uint4 w = words[i];
      const T* v = reinterpret_cast<const T*>(&w);
      float part = 0.f;
#pragma unroll
      for (int j = 0; j < kPer; ++j) part += to_f(v[j]);
      s += part;
    }
  } else {
    for (int64_t i = threadIdx.x; i < hw; i += kBlock) s += to_f(src[i]);
  }
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < kBlock / 32 ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) y[blockIdx.x] = from_f<T>(s / static_cast<float>(hw));
  }
}

template <typename T>
void launch_gap(const T* x, T* y, int64_t nc, int64_t hw, cudaStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(nc);
  constexpr int kPer = 16 / sizeof(T);
  const bool vec = hw % kPer == 0 && (reinterpret_cast<uintptr_t>(x) & 15) == 0;
  const bool wide = nc < 512 && hw >= 8192;  // few large planes: more threads per plane
  if (wide) {
    vec ? global_avg_pool_kernel<T, 1024, true><<<blocks, 1024, 0, stream>>>(x, y, hw)
        : global_avg_pool_kernel<T, 1024, false><<<blocks, 1024, 0, stream>>>(x, y, hw);
  } else {
    vec ? global_avg_pool_kernel<T, kThreads, true><<<blocks, kThreads, 0, stream>>>(x, y, hw)
        : global_avg_pool_kernel<T, kThreads, false><<<blocks, kThreads, 0, stream>>>(x, y, hw);
  }
}

}  // namespace

cudaError_t launch_pool(const PoolParams& p, cudaStream_t stream) {
  int64_t n = p.nc * p.out_h * p.out_w;
  if (n <= 0) return cudaSuccess;
  if (p.dt == Dt::kF16) {
    pool_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
  } else {
    pool_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
  }
  return cudaGetLastError();
}

cudaError_t launch_global_avg_pool(const void* x, void* y, Dt dt, int64_t nc, int64_t hw, cudaStream_t stream) {
  if (nc <= 0) return cudaSuccess;
  if (nc > 0x7fffffffLL) return cudaErrorInvalidValue;
  if (dt == Dt::kF16) {
    launch_gap(static_cast<const __half*>(x), static_cast<__half*>(y), nc, hw, stream);
  } else {
    launch_gap(static_cast<const float*>(x), static_cast<float*>(y), nc, hw, stream);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

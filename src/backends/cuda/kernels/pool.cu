// Pooling on NCHW: windowed max/average (one thread per output) and global average (one block per plane).
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

template <typename T>
__global__ void global_avg_pool_kernel(const T* x, T* y, int64_t hw) {
  __shared__ float partial[kThreads / 32];
  const T* src = x + blockIdx.x * hw;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < hw; i += blockDim.x) s += to_f(src[i]);
  for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    s = threadIdx.x < (blockDim.x >> 5) ? partial[threadIdx.x] : 0.f;
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    if (threadIdx.x == 0) y[blockIdx.x] = from_f<T>(s / static_cast<float>(hw));
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
  unsigned blocks = static_cast<unsigned>(nc);
  if (dt == Dt::kF16) {
    global_avg_pool_kernel<__half>
        <<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y), hw);
  } else {
    global_avg_pool_kernel<float>
        <<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), hw);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

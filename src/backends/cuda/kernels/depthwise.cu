// Depthwise convolution (one filter per channel), one thread per output, fp32 accumulation. Memory-bound; needs
// no per-shape planning (cuDNN builds an execution plan on the first call of every new shape).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void depthwise_kernel(const __grid_constant__ DepthwiseParams p, int64_t total) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  T* y = static_cast<T*>(p.y);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ox = static_cast<int>(i % p.ow);
    const int oy = static_cast<int>((i / p.ow) % p.oh);
    const int64_t plane = i / (static_cast<int64_t>(p.ow) * p.oh);  // n * C + c
    const int c = static_cast<int>(plane % p.c);
    const T* src = x + plane * p.h * p.w_in;
    const T* f = w + static_cast<int64_t>(c) * p.kh * p.kw;
    const int y0 = oy * p.sh - p.pad_t, x0 = ox * p.sw - p.pad_l;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = y0 + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      const T* row = src + static_cast<int64_t>(iy) * p.w_in;
      const T* frow = f + ky * p.kw;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int ix = x0 + kx * p.dil_w;
        if (ix < 0 || ix >= p.w_in) continue;
        acc = fmaf(to_f(row[ix]), to_f(frow[kx]), acc);
      }
    }
    y[i] = from_f<T>(acc);
  }
}

}  // namespace

cudaError_t launch_depthwise(const DepthwiseParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  if (p.dt == Dt::kF16) {
    depthwise_kernel<__half><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  } else {
    depthwise_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

// The two data movements of convolutions without cuDNN (ops/conv_own.cpp, ops/conv_transpose.cpp): im2col before a
// cuBLAS GEMM for a regular convolution, col2im after one for a transposed convolution. One thread per element
// written, no atomics (col2im gathers), fp32 accumulation; no per-shape planning.
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void im2col_kernel(const __grid_constant__ Im2colParams p, int64_t total) {
  const T* x = static_cast<const T*>(p.src);
  T* col = static_cast<T*>(p.dst);
  const int64_t ohw = static_cast<int64_t>(p.oh) * p.ow;
  const int kk = p.kh * p.kw;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t pos = i % ohw;
    const int64_t row = i / ohw;  // (n * c + ci) * kk + ky * kw + kx
    const int r = static_cast<int>(row % kk);
    const int64_t plane = row / kk;  // n * c + ci
    const int ky = r / p.kw, kx = r % p.kw;
    const int oy = static_cast<int>(pos / p.ow), ox = static_cast<int>(pos % p.ow);
    const int iy = oy * p.sh - p.pad_t + ky * p.dil_h;
    const int ix = ox * p.sw - p.pad_l + kx * p.dil_w;
    T v = from_f<T>(0.f);
    if (iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_in) v = x[(plane * p.h + iy) * p.w_in + ix];
    col[i] = v;
  }
}

template <typename T>
__global__ void col2im_kernel(const __grid_constant__ Im2colParams p, int64_t total) {
  const T* col = static_cast<const T*>(p.src);
  T* y = static_cast<T*>(p.dst);
  const int64_t hw = static_cast<int64_t>(p.h) * p.w_in;
  const int kk = p.kh * p.kw;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int ox = static_cast<int>(i % p.ow);
    const int oy = static_cast<int>((i / p.ow) % p.oh);
    const int64_t plane = i / (static_cast<int64_t>(p.ow) * p.oh);  // n * c + co
    const T* src = col + plane * kk * hw;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int ty = oy + p.pad_t - ky * p.dil_h;
      if (ty < 0 || ty % p.sh != 0) continue;
      const int iy = ty / p.sh;
      if (iy >= p.h) continue;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int tx = ox + p.pad_l - kx * p.dil_w;
        if (tx < 0 || tx % p.sw != 0) continue;
        const int ix = tx / p.sw;
        if (ix >= p.w_in) continue;
        acc += to_f(src[(ky * p.kw + kx) * hw + static_cast<int64_t>(iy) * p.w_in + ix]);
      }
    }
    y[i] = from_f<T>(acc);
  }
}

}  // namespace

cudaError_t launch_im2col(const Im2colParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.c * p.kh * p.kw * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  if (p.dt == Dt::kF16) {
    im2col_kernel<__half><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  } else {
    im2col_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  }
  return cudaGetLastError();
}

cudaError_t launch_col2im(const Im2colParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  if (p.dt == Dt::kF16) {
    col2im_kernel<__half><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  } else {
    col2im_kernel<float><<<blocks_for(total), kThreads, 0, stream>>>(p, total);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

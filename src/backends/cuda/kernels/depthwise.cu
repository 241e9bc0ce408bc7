// Depthwise convolution (one filter per channel), one thread per output, fp32 accumulation. Memory-bound; needs
// no per-shape planning (cuDNN builds an execution plan on the first call of every new shape). The epilogue (bias,
// activation, affine: DwEpilogue) runs in the same thread where its operands are per channel, and the index
// arithmetic is 32-bit below 2^31 outputs: on the recogniser's [6,240,12,80] 5x5 layers a separate epilogue launch
// and 64-bit divisions were most of the step's time.
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T, typename I, bool kFused>
__global__ void depthwise_kernel(const __grid_constant__ DepthwiseParams p, I total) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  T* y = static_cast<T*>(p.y);
  const I ow = static_cast<I>(p.ow), oh = static_cast<I>(p.oh), ch = static_cast<I>(p.c);
  const I plane_size = static_cast<I>(p.h) * static_cast<I>(p.w_in);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I row = i / ow;
    const int ox = static_cast<int>(i - row * ow);
    const I plane = row / oh;  // n * C + c
    const int oy = static_cast<int>(row - plane * oh);
    const int c = static_cast<int>(plane % ch);
    const T* src = x + plane * plane_size;
    const T* f = w + c * p.kh * p.kw;
    const int y0 = oy * p.sh - p.pad_t, x0 = ox * p.sw - p.pad_l;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = y0 + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      const T* line = src + static_cast<I>(iy) * static_cast<I>(p.w_in);
      const T* frow = f + ky * p.kw;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int ix = x0 + kx * p.dil_w;
        if (ix < 0 || ix >= p.w_in) continue;
        acc = fmaf(to_f(line[ix]), to_f(frow[kx]), acc);
      }
    }
    if constexpr (kFused) {
      // The raw sum as the separate epilogue would have read it back.
      store_from_float(p.epi.out, p.epi.out_dt, i, apply_channel_epilogue(p.epi, to_f(from_f<T>(acc)), c));
    } else {
      y[i] = from_f<T>(acc);
    }
  }
}

}  // namespace

cudaError_t launch_depthwise(const DepthwiseParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  // The input is as large as the output times the stride, at most: 32-bit offsets hold for both below 2^31.
  const int64_t in_total = static_cast<int64_t>(p.n) * p.c * p.h * p.w_in;
  dispatch_conv_kernel(p.dt, fits_u32(total) && fits_u32(in_total), p.epi.n_instrs > 0,
                       [&](auto t, auto i, auto fused) {
                         using I = decltype(i);
                         depthwise_kernel<decltype(t), I, fused.value>
                             <<<blocks_for(total), kThreads, 0, stream>>>(p, static_cast<I>(total));
                       });
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

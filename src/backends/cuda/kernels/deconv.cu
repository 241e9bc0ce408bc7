// Transposed convolution whose kernel is its stride (kernels.h ShuffleDeconvParams): each output has exactly one
// input pixel, so the sum runs over the input channels only; one thread per output, fp32 accumulation, the epilogue
// in the same thread. cuDNN took 0.30 ms for the detector's last 2x2 head on a page (H200, 2026-12-03).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T, typename I, bool kFused>
__global__ void shuffle_deconv_kernel(const __grid_constant__ ShuffleDeconvParams p, I total) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  const I ow = static_cast<I>(p.w_in) * p.sw, oh = static_cast<I>(p.h) * p.sh, cout = static_cast<I>(p.cout);
  const I plane_in = static_cast<I>(p.h) * static_cast<I>(p.w_in);
  const I wstride = cout * p.sh * p.sw;  // next input channel's weights
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I row = i / ow;
    const I ox = i - row * ow;
    const I plane = row / oh;  // n * cout + co
    const I oy = row - plane * oh;
    const I b = plane / cout;
    const int co = static_cast<int>(plane - b * cout);
    const I iy = oy / p.sh, ix = ox / p.sw;
    const int ky = static_cast<int>(oy - iy * p.sh), kx = static_cast<int>(ox - ix * p.sw);
    const T* src = x + b * static_cast<I>(p.cin) * plane_in + iy * static_cast<I>(p.w_in) + ix;
    const T* f = w + (static_cast<I>(co) * p.sh + ky) * p.sw + kx;
    float acc = 0.f;
    for (int ci = 0; ci < p.cin; ++ci) acc = fmaf(to_f(src[ci * plane_in]), to_f(f[ci * wstride]), acc);
    if constexpr (kFused) {
      store_from_float(p.epi.out, p.epi.out_dt, i, apply_channel_epilogue(p.epi, to_f(from_f<T>(acc)), co));
    } else {
      static_cast<T*>(p.y)[i] = from_f<T>(acc);
    }
  }
}

}  // namespace

cudaError_t launch_shuffle_deconv(const ShuffleDeconvParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.cout * p.h * p.sh * p.w_in * p.sw;
  if (total <= 0) return cudaSuccess;
  const int64_t in_total = static_cast<int64_t>(p.n) * p.cin * p.h * p.w_in;
  dispatch_conv_kernel(p.dt, fits_u32(total) && fits_u32(in_total), p.epi.n_instrs > 0,
                       [&](auto t, auto i, auto fused) {
                         using I = decltype(i);
                         shuffle_deconv_kernel<decltype(t), I, fused.value>
                             <<<blocks_for(total), kThreads, 0, stream>>>(p, static_cast<I>(total));
                       });
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

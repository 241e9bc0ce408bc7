// A picture's bytes into a model's input (ImageLut, graph/ir.h): y[n][c][h][w] = lut[c][x[n][h][w][c]], the table in
// shared memory, one thread per output value (coalesced writes; the reads stride by C bytes). A masked picture has a
// last byte per pixel that zeroes the pixel's values where it is 0 (the recogniser's padding).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

constexpr int kMaxLutChannels = 4;

template <typename I, bool kMasked>
__global__ void image_lut_kernel(const uint8_t* x, const float* lut, float* y, I n, I c, I hw) {
  const I cx = kMasked ? c + 1 : c;
  __shared__ float table[kMaxLutChannels * 256];
  for (I i = threadIdx.x; i < c * 256; i += blockDim.x) table[i] = lut[i];
  __syncthreads();
  const I total = n * c * hw;
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I plane = i / hw;  // b * c + ch
    const I p = i - plane * hw;
    const I b = plane / c;
    const I ch = plane - b * c;
    const uint8_t* pixel = x + (b * hw + p) * cx;
    y[i] = kMasked && pixel[c] == 0 ? 0.f : table[ch * 256 + pixel[ch]];
  }
}

template <bool kMasked>
void launch_lut(const uint8_t* x, const float* lut, float* y, int64_t n, int64_t c, int64_t hw, cudaStream_t stream) {
  const int64_t total = n * c * hw;
  if (fits_u32(n * (c + 1) * hw)) {
    image_lut_kernel<uint32_t, kMasked><<<blocks_for(total), kThreads, 0, stream>>>(
        x, lut, y, static_cast<uint32_t>(n), static_cast<uint32_t>(c), static_cast<uint32_t>(hw));
  } else {
    image_lut_kernel<int64_t, kMasked><<<blocks_for(total), kThreads, 0, stream>>>(x, lut, y, n, c, hw);
  }
}

}  // namespace

cudaError_t launch_image_lut(const uint8_t* x, const float* lut, float* y, int64_t n, int64_t c, int64_t hw,
                             bool masked, cudaStream_t stream) {
  if (c < 1 || c > kMaxLutChannels) return cudaErrorInvalidValue;
  if (n * c * hw <= 0) return cudaSuccess;
  if (masked) {
    launch_lut<true>(x, lut, y, n, c, hw, stream);
  } else {
    launch_lut<false>(x, lut, y, n, c, hw, stream);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

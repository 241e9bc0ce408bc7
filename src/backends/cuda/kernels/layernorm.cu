// LayerNorm over the trailing `cols` elements of each row, statistics in fp32 (two passes over the row).
#include "backends/cuda/kernels/reduce_util.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void layernorm_kernel(const T* x, T* y, const float* scale, const float* bias, int64_t cols, float eps) {
  __shared__ float scratch[kThreads / 32];
  const T* src = x + blockIdx.x * cols;
  T* dst = y + blockIdx.x * cols;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) s += to_f(src[i]);
  float mean = block_sum(s, scratch) / static_cast<float>(cols);
  float v = 0.f;
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    float d = to_f(src[i]) - mean;
    v += d * d;
  }
  float var = block_sum(v, scratch) / static_cast<float>(cols);
  float inv = 1.f / sqrtf(var + eps);
  for (int64_t i = threadIdx.x; i < cols; i += blockDim.x) {
    float r = (to_f(src[i]) - mean) * inv * scale[i];
    if (bias != nullptr) r += bias[i];
    dst[i] = from_f<T>(r);
  }
}

}  // namespace

cudaError_t launch_layernorm(const void* x, void* y, Dt dt, const float* scale, const float* bias, int64_t rows,
                             int64_t cols, float eps, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  unsigned blocks = static_cast<unsigned>(rows);
  if (dt == Dt::kF16) {
    layernorm_kernel<__half><<<blocks, kThreads, 0, stream>>>(static_cast<const __half*>(x), static_cast<__half*>(y),
                                                              scale, bias, cols, eps);
  } else {
    layernorm_kernel<float>
        <<<blocks, kThreads, 0, stream>>>(static_cast<const float*>(x), static_cast<float*>(y), scale, bias, cols, eps);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

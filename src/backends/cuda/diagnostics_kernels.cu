#include "backends/cuda/diagnostics_kernels.h"

namespace steadyocr::cuda::diag {
namespace {
constexpr int kBlock = 256;

__global__ void axpy_kernel(float a, const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}

__global__ void to_half_kernel(const float* in, __half* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __float2half_rn(in[i]);
}

__global__ void to_float_kernel(const __half* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __half2float(in[i]);
}

int blocks(int n) {
  return (n + kBlock - 1) / kBlock;
}
}  // namespace

cudaError_t launch_axpy(float a, const float* x, float* y, int n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  axpy_kernel<<<blocks(n), kBlock, 0, stream>>>(a, x, y, n);
  return cudaGetLastError();
}

cudaError_t axpy_attributes(cudaFuncAttributes* attributes) {
  return cudaFuncGetAttributes(attributes, axpy_kernel);
}

cudaError_t launch_to_half(const float* in, __half* out, int n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  to_half_kernel<<<blocks(n), kBlock, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

cudaError_t launch_to_float(const __half* in, float* out, int n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  to_float_kernel<<<blocks(n), kBlock, 0, stream>>>(in, out, n);
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::diag

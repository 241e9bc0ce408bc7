// Strided copies: one kernel serves transpose, slice, concat and padding (views with element strides).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void strided_copy_kernel(const __grid_constant__ CopyParams p, int64_t n) {
  const T* src = static_cast<const T*>(p.src);
  T* dst = static_cast<T*>(p.dst);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t rem = i, so = 0, d_off = 0;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < p.rank) {
        int64_t c = rem % p.shape[d];
        rem /= p.shape[d];
        so += c * p.src_strides[d];
        d_off += c * p.dst_strides[d];
      }
    }
    dst[d_off] = src[so];
  }
}

}  // namespace

cudaError_t launch_strided_copy(const CopyParams& p, cudaStream_t stream) {
  int64_t n = 1;
  for (int d = 0; d < p.rank; ++d) n *= p.shape[d];
  if (n <= 0) return cudaSuccess;
  switch (p.elem_size) {
    case 1:
      strided_copy_kernel<uint8_t><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
      break;
    case 2:
      strided_copy_kernel<uint16_t><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
      break;
    case 4:
      strided_copy_kernel<uint32_t><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
      break;
    case 8:
      strided_copy_kernel<uint64_t><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

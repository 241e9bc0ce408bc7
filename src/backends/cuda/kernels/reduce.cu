// ReduceMean over any set of axes: one thread per output element walks the reduced sub-space (the models
// reduce small tensors; the common trailing-axes case gets a block per row).
#include "backends/cuda/kernels/reduce_util.cuh"

namespace steadyocr::cuda::k {
namespace {

__global__ void reduce_mean_generic_kernel(const __grid_constant__ ReduceParams p) {
  for (int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; o < p.out_n;
       o += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t base = 0, rem = o;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d < p.keep_rank) {
        base += (rem % p.keep_shape[d]) * p.keep_strides[d];
        rem /= p.keep_shape[d];
      }
    }
    float s = 0.f;
    for (int64_t r = 0; r < p.red_n; ++r) {
      int64_t off = 0, rr = r;
#pragma unroll
      for (int d = kMaxRank - 1; d >= 0; --d) {
        if (d < p.red_rank) {
          off += (rr % p.red_shape[d]) * p.red_strides[d];
          rr /= p.red_shape[d];
        }
      }
      s += load_as_float(p.x, p.dt, base + off);
    }
    store_from_float(p.y, p.dt, o, s / static_cast<float>(p.red_n));
  }
}

__global__ void reduce_mean_rows_kernel(const void* x, void* y, Dt dt, int64_t n) {
  __shared__ float scratch[kThreads / 32];
  int64_t base = blockIdx.x * n;
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += load_as_float(x, dt, base + i);
  s = block_sum(s, scratch);
  if (threadIdx.x == 0) store_from_float(y, dt, blockIdx.x, s / static_cast<float>(n));
}

}  // namespace

cudaError_t launch_reduce_mean(const ReduceParams& p, cudaStream_t stream) {
  if (p.out_n <= 0 || p.red_n <= 0) return cudaSuccess;
  // Trailing contiguous reduction: the reduced block of each output is contiguous and outputs follow each other.
  bool rows = p.red_rank == 1 && p.red_strides[0] == 1 && p.out_n <= 0x7fffffffLL;
  if (rows) {
    for (int d = 0; d < p.keep_rank; ++d) {
      int64_t expect = p.red_n;
      for (int e = d + 1; e < p.keep_rank; ++e) expect *= p.keep_shape[e];
      if (p.keep_shape[d] != 1 && p.keep_strides[d] != expect) rows = false;
    }
  }
  if (rows) {
    reduce_mean_rows_kernel<<<static_cast<unsigned>(p.out_n), kThreads, 0, stream>>>(p.x, p.y, p.dt, p.red_n);
  } else {
    reduce_mean_generic_kernel<<<blocks_for(p.out_n), kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

// Softmax over n elements spaced `inner` apart: a block per row when the axis is innermost, else a thread per row.
#include "backends/cuda/kernels/reduce_util.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T>
__global__ void softmax_rows_kernel(const T* x, T* y, int64_t n) {
  __shared__ float scratch[kThreads / 32];
  const T* src = x + blockIdx.x * n;
  T* dst = y + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_f(src[i]));
  m = block_max(m, scratch);
  float s = 0.f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += expf(to_f(src[i]) - m);
  s = block_sum(s, scratch);
  float inv = 1.f / s;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) dst[i] = from_f<T>(expf(to_f(src[i]) - m) * inv);
}

template <typename T>
__global__ void softmax_strided_kernel(const T* x, T* y, int64_t outer, int64_t n, int64_t inner) {
  int64_t rows = outer * inner;
  for (int64_t r = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; r < rows;
       r += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t o = r / inner, in = r % inner;
    const T* src = x + o * n * inner + in;
    T* dst = y + o * n * inner + in;
    float m = -INFINITY;
    for (int64_t i = 0; i < n; ++i) m = fmaxf(m, to_f(src[i * inner]));
    float s = 0.f;
    for (int64_t i = 0; i < n; ++i) s += expf(to_f(src[i * inner]) - m);
    float inv = 1.f / s;
    for (int64_t i = 0; i < n; ++i) dst[i * inner] = from_f<T>(expf(to_f(src[i * inner]) - m) * inv);
  }
}

template <typename T>
cudaError_t launch(const void* x, void* y, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream) {
  const T* xs = static_cast<const T*>(x);
  T* ys = static_cast<T*>(y);
  if (inner == 1) {
    if (outer > 0x7fffffffLL) return cudaErrorInvalidValue;
    softmax_rows_kernel<T><<<static_cast<unsigned>(outer), kThreads, 0, stream>>>(xs, ys, n);
  } else {
    softmax_strided_kernel<T><<<blocks_for(outer * inner), kThreads, 0, stream>>>(xs, ys, outer, n, inner);
  }
  return cudaGetLastError();
}

// Top1 of a row: its largest value and the first index holding it (graph/ir.h OpKind::kTop1); y is f32 [rows, 2].
template <typename T>
__global__ void top1_rows_kernel(const T* x, float* y, int64_t n) {
  __shared__ float scratch[kThreads / 32];
  __shared__ int64_t first[kThreads / 32];
  const T* src = x + blockIdx.x * n;
  float m = -INFINITY;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, to_f(src[i]));
  m = block_max(m, scratch);
  int64_t at = INT64_MAX;
  for (int64_t i = threadIdx.x; i < n && at == INT64_MAX; i += blockDim.x) {
    if (to_f(src[i]) == m) at = i;
  }
  for (int o = 16; o > 0; o >>= 1) {
    const long long other = __shfl_xor_sync(0xffffffffu, static_cast<long long>(at), o);
    at = other < at ? other : at;
  }
  if ((threadIdx.x & 31) == 0) first[threadIdx.x >> 5] = at;
  __syncthreads();
  if (threadIdx.x == 0) {
    int64_t best = INT64_MAX;
    for (int w = 0; w < kThreads / 32; ++w) best = first[w] < best ? first[w] : best;
    if (best == INT64_MAX) best = 0;  // no value compared equal (NaN row): index 0, as the reference does
    y[2 * blockIdx.x] = to_f(src[best]);
    y[2 * blockIdx.x + 1] = static_cast<float>(best);
  }
}

}  // namespace

cudaError_t launch_top1(const void* x, float* y, Dt dt, int64_t rows, int64_t n, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaSuccess;
  if (rows > 0x7fffffffLL) return cudaErrorInvalidValue;
  const unsigned grid = static_cast<unsigned>(rows);
  if (dt == Dt::kF16) {
    top1_rows_kernel<__half><<<grid, kThreads, 0, stream>>>(static_cast<const __half*>(x), y, n);
  } else {
    top1_rows_kernel<float><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(x), y, n);
  }
  return cudaGetLastError();
}

cudaError_t launch_softmax(const void* x, void* y, Dt dt, int64_t outer, int64_t n, int64_t inner,
                           cudaStream_t stream) {
  if (outer <= 0 || n <= 0 || inner <= 0) return cudaSuccess;
  return dt == Dt::kF16 ? launch<__half>(x, y, outer, n, inner, stream) : launch<float>(x, y, outer, n, inner, stream);
}

}  // namespace steadyocr::cuda::k

// Per-value statistics for the reduced-precision calibration: energy of the fp32 reference, squared error of the
// reduced-precision value against it, peak magnitude and non-finite count.
#include "backends/cuda/kernels/reduce_util.cuh"

namespace steadyocr::cuda::k {
namespace {

__device__ __forceinline__ void atomic_max_double(double* addr, double v) {
  unsigned long long* a = reinterpret_cast<unsigned long long*>(addr);
  unsigned long long old = *a;
  while (__longlong_as_double(old) < v) {
    unsigned long long assumed = old;
    old = atomicCAS(a, assumed, __double_as_longlong(v));
    if (old == assumed) break;
  }
}

__global__ void stats_kernel(const void* x, Dt x_dt, const void* ref, Dt ref_dt, int64_t n, double* out) {
  __shared__ float scratch[kThreads / 32];
  float energy = 0.f, err = 0.f, peak = 0.f, bad = 0.f, worst = 0.f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float a = load_as_float(x, x_dt, i);
    float r = ref ? load_as_float(ref, ref_dt, i) : a;
    if (!isfinite(a)) {
      bad += 1.f;
      continue;
    }
    energy += r * r;
    err += (a - r) * (a - r);
    peak = fmaxf(peak, fabsf(r));
    worst = fmaxf(worst, fabsf(a - r));
  }
  energy = block_sum(energy, scratch);
  err = block_sum(err, scratch);
  bad = block_sum(bad, scratch);
  peak = block_max(peak, scratch);
  worst = block_max(worst, scratch);
  if (threadIdx.x == 0) {
    atomicAdd(&out[0], static_cast<double>(energy));
    atomicAdd(&out[1], static_cast<double>(err));
    atomic_max_double(&out[2], static_cast<double>(peak));
    atomicAdd(&out[3], static_cast<double>(bad));
    atomic_max_double(&out[4], static_cast<double>(worst));
  }
}

}  // namespace

cudaError_t launch_value_stats(const void* x, Dt x_dt, const void* ref, Dt ref_dt, int64_t n, double* out,
                               cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  unsigned blocks = blocks_for(n);
  if (blocks > 1024) blocks = 1024;
  stats_kernel<<<blocks, kThreads, 0, stream>>>(x, x_dt, ref, ref_dt, n, out);
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

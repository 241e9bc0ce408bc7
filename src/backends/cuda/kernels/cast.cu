// Element type conversions (f32 <-> f16 for precision boundaries, integer <-> float for Cast nodes).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

__device__ __forceinline__ double load_any(const void* p, Dt dt, int64_t i) {
  switch (dt) {
    case Dt::kF32:
      return static_cast<const float*>(p)[i];
    case Dt::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    case Dt::kI64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case Dt::kI32:
      return static_cast<const int32_t*>(p)[i];
    case Dt::kU8:
    case Dt::kBool:
      return static_cast<const uint8_t*>(p)[i];
  }
  return 0;
}

__device__ __forceinline__ double saturate(double v, double lo, double hi) {
  if (isnan(v)) return 0;
  v = trunc(v);
  return v < lo ? lo : (v > hi ? hi : v);
}

__device__ __forceinline__ void store_any(void* p, Dt dt, int64_t i, double v) {
  switch (dt) {
    case Dt::kF32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case Dt::kF16:
      static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v));
      break;
    case Dt::kI64: {
      // 2^63 itself does not fit: it saturates to INT64_MAX.
      const double s = saturate(v, -9.2233720368547758e18, 9.2233720368547758e18);
      static_cast<int64_t*>(p)[i] = s >= 9.2233720368547758e18 ? INT64_MAX : static_cast<int64_t>(s);
      break;
    }
    case Dt::kI32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(saturate(v, -2147483648.0, 2147483647.0));
      break;
    case Dt::kU8:
      static_cast<uint8_t*>(p)[i] = static_cast<uint8_t>(saturate(v, 0.0, 255.0));
      break;
    case Dt::kBool:
      static_cast<uint8_t*>(p)[i] = v != 0 ? 1 : 0;
      break;
  }
}

__global__ void cast_kernel(const void* src, Dt sdt, void* dst, Dt ddt, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    store_any(dst, ddt, i, load_any(src, sdt, i));
  }
}

__global__ void f32_to_f16_kernel(const float* src, __half* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __float2half_rn(src[i]);
  }
}

__global__ void f16_to_f32_kernel(const __half* src, float* dst, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    dst[i] = __half2float(src[i]);
  }
}

}  // namespace

cudaError_t launch_cast(const void* src, Dt src_dt, void* dst, Dt dst_dt, int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  if (src_dt == Dt::kF32 && dst_dt == Dt::kF16) {
    f32_to_f16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const float*>(src), static_cast<__half*>(dst),
                                                              n);
  } else if (src_dt == Dt::kF16 && dst_dt == Dt::kF32) {
    f16_to_f32_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const __half*>(src), static_cast<float*>(dst),
                                                              n);
  } else {
    cast_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, src_dt, dst, dst_dt, n);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

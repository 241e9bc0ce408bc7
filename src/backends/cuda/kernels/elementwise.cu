// Elementwise programs: one launch evaluates a chain of broadcast binary ops and activations (see kernels.h). The
// index arithmetic is 32-bit below 2^31 elements (every input has at most as many as the output) and each input's walk
// over the axes stops at its outermost strided one: a conv's per-channel bias over [N, C, H*W] costs one division
// and one remainder, not three of each in 64 bits. Each thread takes four consecutive elements (elementwise_vec_kernel;
// a plain one for rank 0): the device timeline of 2026-12-06 had these launches at a tenth of the memory's speed, a
// third of all kernel time.
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

// The offset of element `i` in input `in`: the index walked from the innermost axis to the input's outermost strided
// one.
template <typename I>
__device__ __forceinline__ I walk_offset(const EwParams& p, const EwInput& in, I i) {
  I off = 0;
  I rem = i;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d < p.rank && d >= in.lo) {
      const I s = static_cast<I>(p.shape[d]);
      const I q = rem / s;
      off += (rem - q * s) * static_cast<I>(in.strides[d]);
      rem = q;
    }
  }
  return off;
}

template <typename I>
__device__ __forceinline__ float load_input(const EwParams& p, int k, I i) {
  const EwInput& in = p.in[k];
  if (in.contiguous) return load_as_float(in.ptr, in.dt, i);
  return load_as_float(in.ptr, in.dt, walk_offset<I>(p, in, i));
}

template <typename I>
__global__ void elementwise_kernel(const __grid_constant__ EwParams p) {
  const I n = static_cast<I>(p.n);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    float acc = load_input<I>(p, p.acc_src, i);
    for (int j = 0; j < p.n_instrs; ++j) {
      const EwInstr& ins = p.ins[j];
      float b = ins.src >= 0 ? load_input<I>(p, ins.src, i) : ins.imm;
      acc = ew_apply(ins, acc, b);
    }
    store_from_float(p.out, p.out_dt, i, acc);
  }
}

// Four consecutive elements per thread: the program's instructions (their dispatch), the index walk and the type
// switches are paid once per four values, contiguous halves and floats move as 8- and 16-byte words. Each value goes
// through exactly the operations of elementwise_kernel, so the results are the same bits.
constexpr int kVec = 4;

__device__ __forceinline__ bool aligned_to(const void* p, unsigned bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

template <typename I>
__device__ __forceinline__ void load_vec(const EwParams& p, int k, I base, I n, float (&v)[kVec]) {
  const EwInput& in = p.in[k];
  const bool whole = base + kVec <= n;
  if (in.contiguous) {
    if (in.dt == Dt::kF16) {
      const __half* src = static_cast<const __half*>(in.ptr) + base;
      if (whole && aligned_to(src, 8)) {
        const uint2 raw = *reinterpret_cast<const uint2*>(src);
        const __half2 lo = *reinterpret_cast<const __half2*>(&raw.x);
        const __half2 hi = *reinterpret_cast<const __half2*>(&raw.y);
        v[0] = __low2float(lo);
        v[1] = __high2float(lo);
        v[2] = __low2float(hi);
        v[3] = __high2float(hi);
        return;
      }
    } else {
      const float* src = static_cast<const float*>(in.ptr) + base;
      if (whole && aligned_to(src, 16)) {
        const float4 f = *reinterpret_cast<const float4*>(src);
        v[0] = f.x;
        v[1] = f.y;
        v[2] = f.z;
        v[3] = f.w;
        return;
      }
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) v[j] = base + j < n ? load_as_float(in.ptr, in.dt, base + j) : 0.f;
    return;
  }
  // Strided: one walk, then along the innermost axis; a new walk only where a row ends inside the four.
  const int last = p.rank - 1;
  const I inner = static_cast<I>(p.shape[last]);
  const I step = last >= in.lo ? static_cast<I>(in.strides[last]) : 0;
  I off = walk_offset<I>(p, in, base);
  I col = base % inner;
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    v[j] = base + j < n ? load_as_float(in.ptr, in.dt, off) : 0.f;
    if (++col == inner) {
      col = 0;
      off = walk_offset<I>(p, in, base + j + 1);
    } else {
      off += step;
    }
  }
}

template <typename I>
__device__ __forceinline__ void store_vec(const EwParams& p, I base, I n, const float (&v)[kVec]) {
  const bool whole = base + kVec <= n;
  if (p.out_dt == Dt::kF16) {
    __half* dst = static_cast<__half*>(p.out) + base;
    if (whole && aligned_to(dst, 8)) {
      const __half2 lo = __halves2half2(__float2half_rn(v[0]), __float2half_rn(v[1]));
      const __half2 hi = __halves2half2(__float2half_rn(v[2]), __float2half_rn(v[3]));
      uint2 raw;
      raw.x = *reinterpret_cast<const unsigned*>(&lo);
      raw.y = *reinterpret_cast<const unsigned*>(&hi);
      *reinterpret_cast<uint2*>(dst) = raw;
      return;
    }
  } else {
    float* dst = static_cast<float*>(p.out) + base;
    if (whole && aligned_to(dst, 16)) {
      *reinterpret_cast<float4*>(dst) = make_float4(v[0], v[1], v[2], v[3]);
      return;
    }
  }
#pragma unroll
  for (int j = 0; j < kVec; ++j) {
    if (base + j < n) store_from_float(p.out, p.out_dt, base + j, v[j]);
  }
}

template <typename I>
__global__ void elementwise_vec_kernel(const __grid_constant__ EwParams p) {
  const I n = static_cast<I>(p.n);
  const I stride = static_cast<I>(gridDim.x) * blockDim.x * kVec;
  for (I base = (static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x) * kVec; base < n; base += stride) {
    float acc[kVec];
    load_vec<I>(p, p.acc_src, base, n, acc);
    for (int j = 0; j < p.n_instrs; ++j) {
      const EwInstr& ins = p.ins[j];
      float b[kVec];
      if (ins.src >= 0) {
        load_vec<I>(p, ins.src, base, n, b);
      } else {
#pragma unroll
        for (int v = 0; v < kVec; ++v) b[v] = ins.imm;
      }
      ew_apply_n(ins, acc, b);  // one dispatch for the four values
    }
    store_vec<I>(p, base, n, acc);
  }
}

}  // namespace

cudaError_t launch_elementwise(const EwParams& p, cudaStream_t stream) {
  if (p.n <= 0) return cudaSuccess;
  // The vector kernel steps along the innermost axis (rank >= 1). With 32-bit indices its base plus one grid stride
  // must stay below 2^31, hence the check on n plus that stride.
  const int64_t vec_threads = (p.n + kVec - 1) / kVec;
  const unsigned vec_blocks = blocks_for(vec_threads);
  if (p.rank >= 1 && fits_u32(p.n + int64_t{kVec} * vec_blocks * kThreads)) {
    elementwise_vec_kernel<uint32_t><<<vec_blocks, kThreads, 0, stream>>>(p);
  } else if (p.rank >= 1) {
    elementwise_vec_kernel<int64_t><<<vec_blocks, kThreads, 0, stream>>>(p);
  } else if (fits_u32(p.n)) {
    elementwise_kernel<uint32_t><<<blocks_for(p.n), kThreads, 0, stream>>>(p);
  } else {
    elementwise_kernel<int64_t><<<blocks_for(p.n), kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

// Elementwise programs: one launch evaluates a chain of broadcast binary ops and activations (see kernels.h). The
// index arithmetic is 32-bit below 2^31 elements (every input has at most as many as the output) and each input's walk
// over the axes stops at its outermost strided one: a conv's per-channel bias over [N, C, H*W] costs one division
// and one remainder, not three of each in 64 bits.
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename I>
__device__ __forceinline__ float load_input(const EwParams& p, int k, I i) {
  const EwInput& in = p.in[k];
  if (in.contiguous) return load_as_float(in.ptr, in.dt, i);
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
  return load_as_float(in.ptr, in.dt, off);
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

}  // namespace

cudaError_t launch_elementwise(const EwParams& p, cudaStream_t stream) {
  if (p.n <= 0) return cudaSuccess;
  if (fits_u32(p.n)) {
    elementwise_kernel<uint32_t><<<blocks_for(p.n), kThreads, 0, stream>>>(p);
  } else {
    elementwise_kernel<int64_t><<<blocks_for(p.n), kThreads, 0, stream>>>(p);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

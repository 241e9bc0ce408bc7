// Elementwise programs: one launch evaluates a chain of broadcast binary ops and activations (see kernels.h).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

__device__ __forceinline__ float load_input(const EwParams& p, int k, int64_t i) {
  const EwInput& in = p.in[k];
  if (in.contiguous) return load_as_float(in.ptr, in.dt, i);
  int64_t off = 0;
  int64_t rem = i;
#pragma unroll
  for (int d = kMaxRank - 1; d >= 0; --d) {
    if (d < p.rank) {
      int64_t c = rem % p.shape[d];
      rem /= p.shape[d];
      off += c * in.strides[d];
    }
  }
  return load_as_float(in.ptr, in.dt, off);
}

__device__ __forceinline__ float apply(const EwInstr& ins, float a, float b) {
  switch (ins.op) {
    case EwOp::kAdd:
      return a + b;
    case EwOp::kSub:
      return a - b;
    case EwOp::kRsub:
      return b - a;
    case EwOp::kMul:
      return a * b;
    case EwOp::kDiv:
      return a / b;
    case EwOp::kRdiv:
      return b / a;
    case EwOp::kPow:
      return b == 2.f ? a * a : powf(a, b);
    case EwOp::kRpow:
      return powf(b, a);
    case EwOp::kSqrt:
      return sqrtf(a);
    case EwOp::kRelu:
      return a > 0.f ? a : 0.f;
    case EwOp::kSigmoid:
      return 1.f / (1.f + expf(-a));
    case EwOp::kHardSigmoid:
      return fminf(fmaxf(ins.alpha * a + ins.beta, 0.f), 1.f);
    case EwOp::kHardSwish:
      return a * fminf(fmaxf(a / 6.f + 0.5f, 0.f), 1.f);
    case EwOp::kClip:
      return fminf(fmaxf(a, ins.alpha), ins.beta);
  }
  return a;
}

__global__ void elementwise_kernel(const __grid_constant__ EwParams p) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < p.n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float acc = load_input(p, p.acc_src, i);
    for (int j = 0; j < p.n_instrs; ++j) {
      const EwInstr& ins = p.ins[j];
      float b = ins.src >= 0 ? load_input(p, ins.src, i) : ins.imm;
      acc = apply(ins, acc, b);
    }
    store_from_float(p.out, p.out_dt, i, acc);
  }
}

}  // namespace

cudaError_t launch_elementwise(const EwParams& p, cudaStream_t stream) {
  if (p.n <= 0) return cudaSuccess;
  elementwise_kernel<<<blocks_for(p.n), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

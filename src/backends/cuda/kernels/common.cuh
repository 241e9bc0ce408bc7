// Device helpers shared by our kernels: typed loads/stores by runtime element type, launch geometry.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "backends/cuda/kernels/hard_swish.h"
#include "backends/cuda/kernels/kernels.h"

namespace steadyocr::cuda::k {

__device__ __forceinline__ float load_as_float(const void* p, Dt dt, int64_t i) {
  if (dt == Dt::kF16) return __half2float(static_cast<const __half*>(p)[i]);
  return static_cast<const float*>(p)[i];
}

__device__ __forceinline__ void store_from_float(void* p, Dt dt, int64_t i, float v) {
  if (dt == Dt::kF16) {
    static_cast<__half*>(p)[i] = __float2half_rn(v);
  } else {
    static_cast<float*>(p)[i] = v;
  }
}

template <typename T>
__device__ __forceinline__ float to_f(T v);
template <>
__device__ __forceinline__ float to_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ float to_f<__half>(__half v) {
  return __half2float(v);
}

template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}

// One instruction of an elementwise program (kernels.h) whose operation is known at compile time: acc combined with
// operand b (kernels that apply one instruction to many values choose the operation once: for_ew_op).
template <EwOp kOp>
__device__ __forceinline__ float ew_op(const EwInstr& ins, float a, float b) {
  if constexpr (kOp == EwOp::kAdd) return a + b;
  if constexpr (kOp == EwOp::kSub) return a - b;
  if constexpr (kOp == EwOp::kRsub) return b - a;
  if constexpr (kOp == EwOp::kMul) return a * b;
  if constexpr (kOp == EwOp::kDiv) return a / b;
  if constexpr (kOp == EwOp::kRdiv) return b / a;
  if constexpr (kOp == EwOp::kPow) return b == 2.f ? a * a : powf(a, b);
  if constexpr (kOp == EwOp::kRpow) return powf(b, a);
  if constexpr (kOp == EwOp::kSqrt) return sqrtf(a);
  if constexpr (kOp == EwOp::kRelu) return a > 0.f ? a : 0.f;
  if constexpr (kOp == EwOp::kSigmoid) return 1.f / (1.f + expf(-a));
  if constexpr (kOp == EwOp::kHardSigmoid) return fminf(fmaxf(ins.alpha * a + ins.beta, 0.f), 1.f);
  if constexpr (kOp == EwOp::kHardSwish) return hard_swish(a);  // a * clamp(a / 6 + 1/2, 0, 1), no division
  if constexpr (kOp == EwOp::kClip) return fminf(fmaxf(a, ins.alpha), ins.beta);
  return a;
}

// Calls f(std::integral_constant<EwOp, op>{}) for the run-time `op`: one dispatch for work over many values.
template <typename F>
__device__ __forceinline__ void for_ew_op(EwOp op, F&& f) {
  switch (op) {
#define SO_EW_CASE(o)                           \
  case EwOp::o:                                 \
    f(std::integral_constant<EwOp, EwOp::o>{}); \
    break;
    SO_EW_CASE(kAdd)
    SO_EW_CASE(kSub)
    SO_EW_CASE(kRsub)
    SO_EW_CASE(kMul)
    SO_EW_CASE(kDiv)
    SO_EW_CASE(kRdiv)
    SO_EW_CASE(kPow)
    SO_EW_CASE(kRpow)
    SO_EW_CASE(kSqrt)
    SO_EW_CASE(kRelu)
    SO_EW_CASE(kSigmoid)
    SO_EW_CASE(kHardSigmoid)
    SO_EW_CASE(kHardSwish)
    SO_EW_CASE(kClip)
#undef SO_EW_CASE
  }
}

// One instruction over kN values at once (acc[i] combined with b[i]): the operation is chosen once for all of them.
// Kernels that give each thread several values use this rather than ew_apply per value (a dispatch per value cost more
// than the operations; docs/BENCHMARKS.md, 2026-12-06).
template <int kN>
__device__ __forceinline__ void ew_apply_n(const EwInstr& ins, float (&acc)[kN], const float (&b)[kN]) {
  for_ew_op(ins.op, [&](auto op) {
    constexpr EwOp kOp = decltype(op)::value;
#pragma unroll
    for (int i = 0; i < kN; ++i) acc[i] = ew_op<kOp>(ins, acc[i], b[i]);
  });
}

// One instruction of an elementwise program (kernels.h): acc combined with operand b.
__device__ __forceinline__ float ew_apply(const EwInstr& ins, float a, float b) {
  float r = a;
  for_ew_op(ins.op, [&](auto op) { r = ew_op<decltype(op)::value>(ins, a, b); });
  return r;
}

// A fused per-channel epilogue (DwEpilogue) on one output of channel `c`: `raw` is the sum already rounded to the
// data type.
__device__ __forceinline__ float apply_channel_epilogue(const DwEpilogue& e, float raw, int c) {
  float acc = raw;
  for (int j = 0; j < e.n_instrs; ++j) {
    const EwInstr& ins = e.ins[j];
    float b = ins.imm;
    if (ins.src == 0) {
      b = raw;
    } else if (ins.src > 0) {
      b = load_as_float(e.in[ins.src], e.in_dt[ins.src], e.per_channel[ins.src] ? c : 0);
    }
    acc = ew_apply(ins, acc, b);
  }
  return acc;
}

// Instruction j's operand b for outputs of channel `c` where it is not the raw sum (ins.src == 0): a per-channel
// vector's value at c, a scalar input, or the immediate. Kernels whose block has one channel read these once.
__device__ __forceinline__ float channel_operand(const DwEpilogue& e, int j, int c) {
  const EwInstr& ins = e.ins[j];
  if (ins.src <= 0) return ins.imm;
  return load_as_float(e.in[ins.src], e.in_dt[ins.src], e.per_channel[ins.src] ? c : 0);
}

// apply_channel_epilogue on kN outputs of one channel at once: `raw` the sums rounded to the data type, `operand[j]`
// instruction j's channel_operand. One dispatch per instruction for the kN values, and no read per output: per output,
// the switch and the operand's read before each operation cost more than the operations.
template <int kN>
__device__ __forceinline__ void apply_channel_epilogue_n(const DwEpilogue& e, const float* operand,
                                                         const float (&raw)[kN], float (&v)[kN]) {
#pragma unroll
  for (int r = 0; r < kN; ++r) v[r] = raw[r];
  for (int j = 0; j < e.n_instrs; ++j) {
    const EwInstr& ins = e.ins[j];
    const bool from_raw = ins.src == 0;
    const float bj = operand[j];
    float b[kN];
#pragma unroll
    for (int r = 0; r < kN; ++r) b[r] = from_raw ? raw[r] : bj;
    ew_apply_n(ins, v, b);
  }
}

constexpr int kThreads = 256;

// Index type of a kernel over `n` elements: 32-bit divisions are several times cheaper than 64-bit ones (a grid-stride
// loop below 2^31 cannot pass 2^32: the stride is under 2^27).
inline bool fits_u32(int64_t n) {
  return n < (int64_t{1} << 31);
}

// Calls launch(T{}, I{}, std::bool_constant<fused>{}) with the element type of `dt` (float or __half), the index type
// (uint32_t when `narrow`, else int64_t) and whether a fused epilogue runs: one place for the eight instantiations a
// conv kernel with a fused epilogue has (depthwise.cu, deconv.cu).
template <typename Launch>
void dispatch_conv_kernel(Dt dt, bool narrow, bool fused, Launch&& launch) {
  auto with_fused = [&](auto t, auto i) { fused ? launch(t, i, std::true_type{}) : launch(t, i, std::false_type{}); };
  auto with_index = [&](auto t) { narrow ? with_fused(t, uint32_t{}) : with_fused(t, int64_t{}); };
  dt == Dt::kF16 ? with_index(__half{}) : with_index(float{});
}

// Blocks for a grid-stride loop over n elements (capped: the loop covers the rest).
inline unsigned blocks_for(int64_t n, int threads = kThreads) {
  int64_t b = (n + threads - 1) / threads;
  if (b < 1) b = 1;
  if (b > 65535LL * 8) b = 65535LL * 8;
  return static_cast<unsigned>(b);
}

}  // namespace steadyocr::cuda::k

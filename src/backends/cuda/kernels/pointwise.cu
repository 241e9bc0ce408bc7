// Pointwise (1x1) convolution in fp16 with its epilogue in the same kernel (kernels.h PointwiseParams). Per image n,
// Y[n] (K x HW) = W (K x C) * X[n] (C x HW) on tensor cores (WMMA 16x16x16, fp32 accumulation), one block per tile of
// BM output channels x BN pixels, staged through shared memory in steps of 32 input channels (the next step's loads
// in flight during this step's products). Each output is rounded to fp16, as a stored raw output would be, then goes
// through the per-channel epilogue program (bias, activation, affine) before its single store. One pixel per image
// (squeeze-and-excite) takes a warp per output instead. cuBLAS's GEMM wrote the raw output and an elementwise launch
// read it back: about 20 launches per recognition call and 40 per page were those epilogues (docs/BENCHMARKS.md).
#include <mma.h>

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

constexpr int kBK = 32;          // input channels per step
constexpr int kPwThreads = 128;  // four warps, each 32 x 32 outputs (2 x 2 fragments)

// One thread's share of an R x C tile in registers: loaded from global memory (row stride `ld`, zeros outside the
// rows x cols corner) while the tensor cores work on the previous step, then stored to shared memory (row stride
// LD). Every load of a share is issued before the first is used. kVec: 16-byte words (the launcher checked that the
// row strides, the corner's columns and the sources are 8-half aligned).
template <int R, int C, bool kVec>
struct TileShare {
  static constexpr int kElems = kVec ? 8 : 1;
  static constexpr int kPerRow = C / kElems;
  static constexpr int kIters = R * kPerRow / kPwThreads;
  static_assert(R * kPerRow % kPwThreads == 0, "a tile divides among the threads");
  using Word = std::conditional_t<kVec, uint4, __half>;
  Word v[kIters];

  __device__ __forceinline__ void load(const __half* src, int ld, int rows, int cols) {
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kPwThreads;
      const int r = i / kPerRow, c = (i - r * kPerRow) * kElems;
      const bool in = r < rows && c < cols;
      if constexpr (kVec) {
        v[j] = in ? *reinterpret_cast<const uint4*>(src + r * ld + c) : make_uint4(0u, 0u, 0u, 0u);
      } else {
        v[j] = in ? src[r * ld + c] : __float2half_rn(0.f);
      }
    }
  }

  template <int LD>
  __device__ __forceinline__ void store(__half* dst) const {
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kPwThreads;
      const int r = i / kPerRow, c = (i - r * kPerRow) * kElems;
      *reinterpret_cast<Word*>(dst + r * LD + c) = v[j];
    }
  }
};

template <int BM, int BN, bool kVec>
__global__ void __launch_bounds__(kPwThreads) pointwise_kernel(const __grid_constant__ PointwiseParams p) {
  using namespace nvcuda;
  constexpr int kWarpsN = BN / 32;
  constexpr int kLdA = kBK + 8, kLdB = BN + 8, kLdC = BN + 4;  // padded rows: fewer bank conflicts, 32-byte fragments
  __shared__ __align__(32) __half a_tile[BM * kLdA];
  __shared__ __align__(32) __half b_tile[kBK * kLdB];
  __shared__ __align__(32) float c_tile[BM * kLdC];
  __shared__ float operand[kEwMaxInputs][BM];  // the epilogue's per-channel operands of this tile's channels

  const int n = static_cast<int>(blockIdx.z);
  const int k0 = static_cast<int>(blockIdx.y) * BM, p0 = static_cast<int>(blockIdx.x) * BN;
  const int rows_k = min(BM, p.k - k0), cols_p = min(BN, p.hw - p0);
  const __half* x = static_cast<const __half*>(p.x) + static_cast<int64_t>(n) * p.c * p.hw + p0;
  const __half* w = static_cast<const __half*>(p.w) + static_cast<int64_t>(k0) * p.c;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int wm = warp / kWarpsN, wn = warp % kWarpsN;

  TileShare<BM, kBK, kVec> share_a;
  TileShare<kBK, BN, kVec> share_b;
  share_a.load(w, p.c, rows_k, min(kBK, p.c));
  share_b.load(x, p.hw, min(kBK, p.c), cols_p);
  for (int i = static_cast<int>(threadIdx.x); i < kEwMaxInputs * BM; i += kPwThreads) {
    const int s = i / BM, r = i - s * BM;
    if (s > 0 && p.epi.in[s] && r < rows_k) {
      operand[s][r] = load_as_float(p.epi.in[s], p.epi.in_dt[s], p.epi.per_channel[s] ? k0 + r : 0);
    }
  }

  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (auto& row : acc) {
    for (auto& f : row) wmma::fill_fragment(f, 0.f);
  }
  for (int c0 = 0; c0 < p.c; c0 += kBK) {
    share_a.template store<kLdA>(a_tile);
    share_b.template store<kLdB>(b_tile);
    __syncthreads();
    const int c1 = c0 + kBK;
    if (c1 < p.c) {  // the next step's loads are in flight during this step's products
      const int depth = min(kBK, p.c - c1);
      share_a.load(w + c1, p.c, rows_k, depth);
      share_b.load(x + static_cast<int64_t>(c1) * p.hw, p.hw, depth, cols_p);
    }
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
      wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
#pragma unroll
      for (int i = 0; i < 2; ++i) {
        wmma::load_matrix_sync(fa[i], a_tile + (wm * 32 + i * 16) * kLdA + kk, kLdA);
        wmma::load_matrix_sync(fb[i], b_tile + kk * kLdB + wn * 32 + i * 16, kLdB);
      }
#pragma unroll
      for (int i = 0; i < 2; ++i) {
#pragma unroll
        for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(c_tile + (wm * 32 + i * 16) * kLdC + wn * 32 + j * 16, acc[i][j], kLdC,
                              wmma::mem_row_major);
    }
  }
  __syncthreads();
  // The epilogue, one instruction at a time over this thread's share of the tile, in place in shared memory (one
  // dispatch per instruction, not per output: interpreting the program per output cost more than the products). A
  // thread's outputs share one pixel column and step through the channels; consecutive threads take consecutive
  // pixels, so a warp's stores are contiguous. The program is apply_channel_epilogue's, its operands from shared
  // memory; `raw_tile` keeps the rounded sums for programs that read them again.
  constexpr int kPer = BM * BN / kPwThreads, kRowStep = kPwThreads / BN;
  static_assert(kPwThreads % BN == 0 && BM % kRowStep == 0, "a thread's outputs share a pixel column");
  __shared__ __half raw_tile[BM * BN];
  const int col = static_cast<int>(threadIdx.x) % BN, row0 = static_cast<int>(threadIdx.x) / BN;
  bool reads_raw = false;
  for (int j = 0; j < p.epi.n_instrs; ++j) reads_raw = reads_raw || p.epi.ins[j].src == 0;
#pragma unroll
  for (int e = 0; e < kPer; ++e) {
    const int r = row0 + e * kRowStep;
    const __half h = __float2half_rn(c_tile[r * kLdC + col]);
    c_tile[r * kLdC + col] = __half2float(h);
    if (reads_raw) raw_tile[r * BN + col] = h;
  }
  for (int j = 0; j < p.epi.n_instrs; ++j) {
    const EwInstr ins = p.epi.ins[j];
    for_ew_op(ins.op, [&](auto op) {
      constexpr EwOp kOp = decltype(op)::value;
#pragma unroll 8
      for (int e = 0; e < kPer; ++e) {
        const int r = row0 + e * kRowStep;
        const float b = ins.src == 0  ? __half2float(raw_tile[r * BN + col])
                        : ins.src > 0 ? operand[ins.src][r]
                                      : ins.imm;
        c_tile[r * kLdC + col] = ew_op<kOp>(ins, c_tile[r * kLdC + col], b);
      }
    });
  }
  if (col < cols_p) {
    const int64_t out0 = (static_cast<int64_t>(n) * p.k + k0) * p.hw + p0 + col;
#pragma unroll 8
    for (int e = 0; e < kPer; ++e) {
      const int r = row0 + e * kRowStep;
      if (r < rows_k)
        store_from_float(p.epi.out, p.epi.out_dt, out0 + static_cast<int64_t>(r) * p.hw, c_tile[r * kLdC + col]);
    }
  }
}

// One pixel per image (the squeeze-and-excite convolutions after a global pool): one warp per output, its lanes
// across the input channels, then the epilogue in lane 0. A tile of pixels would leave all but one column empty.
__global__ void pointwise_gemv_kernel(const __grid_constant__ PointwiseParams p) {
  const int64_t out = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  if (out >= static_cast<int64_t>(p.n) * p.k) return;  // the whole warp
  const int64_t n = out / p.k;
  const int k = static_cast<int>(out - n * p.k);
  const __half* x = static_cast<const __half*>(p.x) + n * p.c;
  const __half* w = static_cast<const __half*>(p.w) + static_cast<int64_t>(k) * p.c;
  float sum = 0.f;
  for (int c = lane; c < p.c; c += 32) sum = fmaf(__half2float(x[c]), __half2float(w[c]), sum);
#pragma unroll
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) {
    store_from_float(p.epi.out, p.epi.out_dt, out,
                     apply_channel_epilogue(p.epi, __half2float(__float2half_rn(sum)), k));
  }
}

template <int BM, int BN>
void launch_tiles(const PointwiseParams& p, bool vec, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.hw + BN - 1) / BN), static_cast<unsigned>((p.k + BM - 1) / BM),
                  static_cast<unsigned>(p.n));
  if (vec) {
    pointwise_kernel<BM, BN, true><<<grid, kPwThreads, 0, stream>>>(p);
  } else {
    pointwise_kernel<BM, BN, false><<<grid, kPwThreads, 0, stream>>>(p);
  }
}

}  // namespace

bool pointwise_supported(int64_t n, int64_t c, int64_t k, int64_t hw) {
  return n >= 1 && n <= 65535 && c >= 1 && k >= 1 && hw >= 1 && c <= (1 << 20) && k <= (1 << 20) &&
         c * hw < (int64_t{1} << 31) && k * hw < (int64_t{1} << 31) && n * c * hw < (int64_t{1} << 40) &&
         (hw > 1 || n * k < (int64_t{1} << 30));
}

cudaError_t launch_pointwise(const PointwiseParams& p, cudaStream_t stream) {
  if (p.n <= 0 || p.k <= 0 || p.hw <= 0) return cudaSuccess;
  if (p.hw == 1) {
    const int64_t threads = static_cast<int64_t>(p.n) * p.k * 32;
    pointwise_gemv_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p);
    return cudaGetLastError();
  }
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const bool vec = p.c % 8 == 0 && p.hw % 8 == 0 && aligned(p.x) && aligned(p.w);
  // Few output channels (the detector's and the recogniser's first layers): 32 x 128 tiles, else 64 x 64.
  if (p.k <= 32) {
    launch_tiles<32, 128>(p, vec, stream);
  } else {
    launch_tiles<64, 64>(p, vec, stream);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

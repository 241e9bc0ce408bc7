// Pointwise (1x1) convolution in fp16 with its epilogue in the same kernel (kernels.h PointwiseParams). Per image n,
// Y[n] (K x HW) = W (K x C) * X[n] (C x HW) on tensor cores (WMMA 16x16x16, fp32 accumulation), one block per tile of
// BM output channels x BN pixels, staged through shared memory in steps of 32 input channels (the next step's loads
// in flight during this step's products). Each output is rounded to fp16, as a stored raw output would be, then goes
// through the per-channel epilogue program (bias, activation, affine) before its single store. One pixel per image
// (squeeze-and-excite) takes a warp per output instead. cuBLAS's GEMM wrote the raw output and an elementwise launch
// read it back: about 20 launches per recognition call and 40 per page were those epilogues (docs/BENCHMARKS.md).
#include <cuda_pipeline.h>
#include <mma.h>

#include <type_traits>

#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

// One warp per 32 x 32 outputs of a tile (2 x 2 fragments).
template <int BM, int BN>
constexpr int pw_threads() {
  return BM / 32 * (BN / 32) * 32;
}
constexpr int kPwThreads = 128;  // the register-staged kernel's tiles: four warps

// The async kernel's steps (input channels) and stages, for 64 x 64 tiles and for 32 x 128 (few output channels).
constexpr int kWideStep = 64, kWideStages = 2;
constexpr int kNarrowStep = 64, kNarrowStages = 2;
// Values per thread that go through the epilogue at once (a thread has 32).
constexpr int kPwChunk = 16;

// One thread's share of an R x C tile in registers, for sources of any alignment: loaded from global memory (row
// stride `ld`, zeros outside the rows x cols corner) while the tensor cores work on the previous step, then stored to
// shared memory (row stride LD). Every load of a share is issued before the first is used.
template <int R, int C>
struct TileShare {
  static constexpr int kIters = R * C / kPwThreads;
  static_assert(R * C % kPwThreads == 0, "a tile divides among the threads");
  __half v[kIters];

  __device__ __forceinline__ void load(const __half* src, int ld, int rows, int cols) {
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kPwThreads;
      const int r = i / C, c = i - r * C;
      v[j] = r < rows && c < cols ? src[r * ld + c] : __float2half_rn(0.f);
    }
  }

  template <int LD>
  __device__ __forceinline__ void store(__half* dst) const {
#pragma unroll
    for (int j = 0; j < kIters; ++j) {
      const int i = static_cast<int>(threadIdx.x) + j * kPwThreads;
      const int r = i / C, c = i - r * C;
      dst[r * LD + c] = v[j];
    }
  }
};

// The tile's products over one step of BK input channels: A is BM x BK (row stride LDA), B is BK x BN (LDB); warp
// (wm, wn) owns the 32 x 32 outputs at (wm * 32, wn * 32).
template <int BK, int LDA, int LDB>
__device__ __forceinline__ void mma_step(
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2], const __half* a, const __half* b,
    int wm, int wn) {
  using namespace nvcuda;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa[2];
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      wmma::load_matrix_sync(fa[i], a + (wm * 32 + i * 16) * LDA + kk, LDA);
      wmma::load_matrix_sync(fb[i], b + kk * LDB + wn * 32 + i * 16, LDB);
    }
#pragma unroll
    for (int i = 0; i < 2; ++i) {
#pragma unroll
      for (int j = 0; j < 2; ++j) wmma::mma_sync(acc[i][j], fa[i], fb[j], acc[i][j]);
    }
  }
}

// Where a tile lies: image n, output channels k0.. (rows_k of them), pixels p0.. (cols_p of them).
struct TilePlace {
  int n, k0, p0, rows_k, cols_p;
};

template <int BM, int BN>
__device__ __forceinline__ TilePlace tile_place(const PointwiseParams& p) {
  TilePlace t;
  t.n = static_cast<int>(blockIdx.z);
  t.k0 = static_cast<int>(blockIdx.y) * BM;
  t.p0 = static_cast<int>(blockIdx.x) * BN;
  t.rows_k = min(BM, p.k - t.k0);
  t.cols_p = min(BN, p.hw - t.p0);
  return t;
}

// The epilogue's per-channel operands of the tile's channels, read once into shared memory.
template <int BM, int kThreads>
__device__ __forceinline__ void load_operands(const PointwiseParams& p, const TilePlace& t,
                                              float (&operand)[kEwMaxInputs][BM]) {
  for (int i = static_cast<int>(threadIdx.x); i < kEwMaxInputs * BM; i += kThreads) {
    const int s = i / BM, r = i - s * BM;
    if (s > 0 && p.epi.in[s] && r < t.rows_k) {
      operand[s][r] = load_as_float(p.epi.in[s], p.epi.in_dt[s], p.epi.per_channel[s] ? t.k0 + r : 0);
    }
  }
}

// One instruction of the epilogue over a thread's chunk of values (in registers): the operation and the kind of its
// operand are chosen once for the chunk, and the chunk's operands are all read before the first is used. Choosing the
// operand per value put a branch and a dependent shared-memory read before each value's operation: each instruction
// cost about 1.2-1.4 us per launch whatever the tile's work (H100, 2026-12-06, docs/BENCHMARKS.md).
template <int kChunk, int kRowStep, int BM>
__device__ __forceinline__ void epilogue_step(const EwInstr& ins, float (&v)[kChunk], const __half (&raw)[kChunk],
                                              const float (&operand)[kEwMaxInputs][BM], int row) {
  float b[kChunk];
  if (ins.src == 0) {
#pragma unroll
    for (int e = 0; e < kChunk; ++e) b[e] = __half2float(raw[e]);
  } else if (ins.src > 0) {
    const float* column = operand[ins.src] + row;
#pragma unroll
    for (int e = 0; e < kChunk; ++e) b[e] = column[e * kRowStep];
  } else {
#pragma unroll
    for (int e = 0; e < kChunk; ++e) b[e] = ins.imm;
  }
  ew_apply_n(ins, v, b);
}

// The accumulators through shared memory (`c_tile`, BM x BN floats, row stride BN + 4), the epilogue, the stores. A
// thread's outputs share one pixel column and step through the channels; consecutive threads take consecutive pixels,
// so a warp's stores are contiguous. They go through the epilogue in chunks of kChunk values held in registers: each
// value is read from shared memory once, rounded to fp16 as a stored raw output would be (kept for programs that read
// it again), then the program runs one instruction at a time over the chunk (epilogue_step: one dispatch per
// instruction and chunk, not per output: interpreting the program per output cost more than the products), and the
// chunk is stored. The program is apply_channel_epilogue's, its operands from shared memory.
template <int BM, int BN, int kChunk, int kThreads = pw_threads<BM, BN>()>
__device__ __forceinline__ void finish_tile(
    const PointwiseParams& p, const TilePlace& t,
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[2][2], float* c_tile,
    const float (&operand)[kEwMaxInputs][BM], int wm, int wn) {
  using namespace nvcuda;
  constexpr int kLdC = BN + 4;
#pragma unroll
  for (int i = 0; i < 2; ++i) {
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      wmma::store_matrix_sync(c_tile + (wm * 32 + i * 16) * kLdC + wn * 32 + j * 16, acc[i][j], kLdC,
                              wmma::mem_row_major);
    }
  }
  __syncthreads();
  constexpr int kPer = BM * BN / kThreads, kRowStep = kThreads / BN;
  static_assert(kThreads % BN == 0 && BM % kRowStep == 0, "a thread's outputs share a pixel column");
  static_assert(kPer % kChunk == 0, "whole chunks");
  const int col = static_cast<int>(threadIdx.x) % BN, row0 = static_cast<int>(threadIdx.x) / BN;
  const bool stores = col < t.cols_p;
  const int64_t out0 = (static_cast<int64_t>(t.n) * p.k + t.k0) * p.hw + t.p0 + col;
  for (int c0 = 0; c0 < kPer; c0 += kChunk) {
    const int row = row0 + c0 * kRowStep;  // the chunk's first channel in the tile
    float v[kChunk];
    __half raw[kChunk];
#pragma unroll
    for (int e = 0; e < kChunk; ++e) {
      raw[e] = __float2half_rn(c_tile[(row + e * kRowStep) * kLdC + col]);
      v[e] = __half2float(raw[e]);
    }
    for (int j = 0; j < p.epi.n_instrs; ++j) epilogue_step<kChunk, kRowStep, BM>(p.epi.ins[j], v, raw, operand, row);
    if (stores) {
#pragma unroll
      for (int e = 0; e < kChunk; ++e) {
        const int r = row + e * kRowStep;
        if (r < t.rows_k) store_from_float(p.epi.out, p.epi.out_dt, out0 + static_cast<int64_t>(r) * p.hw, v[e]);
      }
    }
  }
}

// Any alignment: steps of 32 input channels staged through registers (TileShare).
template <int BM, int BN, int kChunk>
__global__ void __launch_bounds__(kPwThreads) pointwise_kernel(const __grid_constant__ PointwiseParams p) {
  static_assert(pw_threads<BM, BN>() == kPwThreads, "the register-staged kernel's tiles are four warps");
  constexpr int kBK = 32, kLdA = kBK + 8, kLdB = BN + 8;  // padded rows: fewer bank conflicts, 32-byte fragments
  __shared__ __align__(32) __half a_tile[BM * kLdA];
  __shared__ __align__(32) __half b_tile[kBK * kLdB];
  __shared__ __align__(32) float c_tile[BM * (BN + 4)];
  __shared__ float operand[kEwMaxInputs][BM];
  const TilePlace t = tile_place<BM, BN>(p);
  const __half* x = static_cast<const __half*>(p.x) + static_cast<int64_t>(t.n) * p.c * p.hw + t.p0;
  const __half* w = static_cast<const __half*>(p.w) + static_cast<int64_t>(t.k0) * p.c;
  const int warp = static_cast<int>(threadIdx.x) / 32, wm = warp / (BN / 32), wn = warp % (BN / 32);

  TileShare<BM, kBK> share_a;
  TileShare<kBK, BN> share_b;
  share_a.load(w, p.c, t.rows_k, min(kBK, p.c));
  share_b.load(x, p.hw, min(kBK, p.c), t.cols_p);
  load_operands<BM, kPwThreads>(p, t, operand);
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (auto& row : acc) {
    for (auto& f : row) nvcuda::wmma::fill_fragment(f, 0.f);
  }
  for (int c0 = 0; c0 < p.c; c0 += kBK) {
    share_a.template store<kLdA>(a_tile);
    share_b.template store<kLdB>(b_tile);
    __syncthreads();
    const int c1 = c0 + kBK;
    if (c1 < p.c) {  // the next step's loads are in flight during this step's products
      const int depth = min(kBK, p.c - c1);
      share_a.load(w + c1, p.c, t.rows_k, depth);
      share_b.load(x + static_cast<int64_t>(c1) * p.hw, p.hw, depth, t.cols_p);
    }
    mma_step<kBK, kLdA, kLdB>(acc, a_tile, b_tile, wm, wn);
    __syncthreads();
  }
  finish_tile<BM, BN, kChunk>(p, t, acc, c_tile, operand, wm, wn);
}

// Rows in words (pointwise_in_words: input channels a multiple of 8, pixels a multiple of 2, aligned sources): steps
// of kBK input channels copied straight to shared memory (cp.async) through kStages stages, so that kStages - 1 steps'
// copies are in flight during a step's products (one barrier per step); the epilogue's tile reuses the stages' memory
// (dynamic shared memory: async_smem_bytes). The weights go as 16-byte words; the pixels as words of kVec
// halves (8, 4 or 2: the largest that divides a row, so that no word straddles two rows or the edge).
template <int BM, int BN, int kVec, int kBK, int kStages, int kChunk>
__global__ void __launch_bounds__(pw_threads<BM, BN>())
    pointwise_async_kernel(const __grid_constant__ PointwiseParams p) {
  static_assert(kVec == 8 || kVec == 4 || kVec == 2, "cp.async copies 16, 8 or 4 bytes");
  static_assert(kStages >= 2 && kBK % 16 == 0, "two stages or more, whole fragments per step");
  constexpr int kThreads = pw_threads<BM, BN>();
  constexpr int kLdA = kBK + 8, kLdB = BN + 8;
  constexpr int kStageA = BM * kLdA, kStage = kStageA + kBK * kLdB;  // halves
  extern __shared__ __align__(128) unsigned char smem[];
  __shared__ float operand[kEwMaxInputs][BM];
  __half* stages = reinterpret_cast<__half*>(smem);
  const TilePlace t = tile_place<BM, BN>(p);
  const __half* x = static_cast<const __half*>(p.x) + static_cast<int64_t>(t.n) * p.c * p.hw + t.p0;
  const __half* w = static_cast<const __half*>(p.w) + static_cast<int64_t>(t.k0) * p.c;
  const int warp = static_cast<int>(threadIdx.x) / 32, wm = warp / (BN / 32), wn = warp % (BN / 32);
  const int steps = (p.c + kBK - 1) / kBK;

  // Step `step`'s copies into its stage, as one commit group (empty past the last step, so that every iteration
  // waits on the same count).
  auto copy_step = [&](int step) {
    if (step < steps) {
      __half* a = stages + (step % kStages) * kStage;
      __half* b = a + kStageA;
      const int c0 = step * kBK, depth = min(kBK, p.c - c0);
      for (int i = static_cast<int>(threadIdx.x); i < BM * (kBK / 8); i += kThreads) {
        const int r = i / (kBK / 8), c = (i - r * (kBK / 8)) * 8;
        const bool in = r < t.rows_k && c < depth;  // outside: 16 bytes of zeros, nothing read
        __pipeline_memcpy_async(a + r * kLdA + c, in ? w + static_cast<int64_t>(r) * p.c + c0 + c : w, 16, in ? 0 : 16);
      }
      for (int i = static_cast<int>(threadIdx.x); i < kBK * (BN / kVec); i += kThreads) {
        const int r = i / (BN / kVec), c = (i - r * (BN / kVec)) * kVec;
        const bool in = r < depth && c < t.cols_p;  // cols_p is a multiple of kVec: a word is all in or all out
        __pipeline_memcpy_async(b + r * kLdB + c, in ? x + static_cast<int64_t>(c0 + r) * p.hw + c : x, 2 * kVec,
                                in ? 0 : 2 * kVec);
      }
    }
    __pipeline_commit();
  };
#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) copy_step(s);
  load_operands<BM, kThreads>(p, t, operand);
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> acc[2][2];
  for (auto& row : acc) {
    for (auto& f : row) nvcuda::wmma::fill_fragment(f, 0.f);
  }
  for (int s = 0; s < steps; ++s) {
    __pipeline_wait_prior(kStages - 2);  // this thread's copies of step s have landed
    __syncthreads();  // everyone's have; and every warp is done with step s - 1, whose stage the next copy refills
    copy_step(s + kStages - 1);
    const __half* a = stages + (s % kStages) * kStage;
    mma_step<kBK, kLdA, kLdB>(acc, a, a + kStageA, wm, wn);
  }
  __pipeline_wait_prior(0);
  __syncthreads();  // every warp's products are done before the epilogue's tile overwrites the stages
  float* c_tile = reinterpret_cast<float*>(smem);
  finish_tile<BM, BN, kChunk>(p, t, acc, c_tile, operand, wm, wn);
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

// The async kernel's dynamic shared memory: its stages, or the epilogue's tile (which reuses them) where larger.
template <int BM, int BN, int kBK, int kStages>
constexpr int async_smem_bytes() {
  const int stages = kStages * (BM * (kBK + 8) + kBK * (BN + 8)) * 2, epilogue = BM * (BN + 4) * 4;
  return stages > epilogue ? stages : epilogue;
}

// One launch of the async kernel. Its shared memory stays within the 48 KiB a kernel gets without being allowed more
// per device (cudaFuncSetAttribute): the configurations that needed more (deeper stages, 128-wide tiles) did not pay
// (H100, 2026-12-06, docs/BENCHMARKS.md).
template <int BM, int BN, int kVec, int kBK, int kStages, int kChunk>
cudaError_t launch_async(const dim3& grid, const PointwiseParams& p, cudaStream_t stream) {
  constexpr int kBytes = async_smem_bytes<BM, BN, kBK, kStages>();
  static_assert(kBytes <= 48 * 1024, "within the shared memory a kernel gets without cudaFuncSetAttribute");
  pointwise_async_kernel<BM, BN, kVec, kBK, kStages, kChunk><<<grid, pw_threads<BM, BN>(), kBytes, stream>>>(p);
  return cudaGetLastError();
}

// Tiles of BM output channels x BN pixels; rows in words through the async kernel (steps of kBK channels, kStages
// stages), other rows through registers.
template <int BM, int BN, int kBK, int kStages, int kChunk = kPwChunk>
cudaError_t launch_tiles(const PointwiseParams& p, bool words, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.hw + BN - 1) / BN), static_cast<unsigned>((p.k + BM - 1) / BM),
                  static_cast<unsigned>(p.n));
  if (words && p.hw % 8 == 0) return launch_async<BM, BN, 8, kBK, kStages, kChunk>(grid, p, stream);
  if (words && p.hw % 4 == 0) return launch_async<BM, BN, 4, kBK, kStages, kChunk>(grid, p, stream);
  if (words) return launch_async<BM, BN, 2, kBK, kStages, kChunk>(grid, p, stream);
  if constexpr (pw_threads<BM, BN>() == kPwThreads) {
    pointwise_kernel<BM, BN, kChunk><<<grid, kPwThreads, 0, stream>>>(p);
    return cudaGetLastError();
  } else {  // the register-staged kernel's tiles are four warps
    return launch_tiles<64, 64, kBK, kStages, kChunk>(p, false, stream);
  }
}

}  // namespace

bool pointwise_supported(int64_t n, int64_t c, int64_t k, int64_t hw) {
  return n >= 1 && n <= 65535 && c >= 1 && k >= 1 && hw >= 1 && c <= (1 << 20) && k <= (1 << 20) &&
         c * hw < (int64_t{1} << 31) && k * hw < (int64_t{1} << 31) && n * c * hw < (int64_t{1} << 40) &&
         (hw > 1 || n * k < (int64_t{1} << 30));
}

bool pointwise_in_words(int64_t c, int64_t hw) {
  return c % 8 == 0 && hw % 2 == 0;
}

cudaError_t launch_pointwise(const PointwiseParams& p, cudaStream_t stream) {
  if (p.n <= 0 || p.k <= 0 || p.hw <= 0) return cudaSuccess;
  if (p.hw == 1) {
    const int64_t threads = static_cast<int64_t>(p.n) * p.k * 32;
    pointwise_gemv_kernel<<<static_cast<unsigned>((threads + kThreads - 1) / kThreads), kThreads, 0, stream>>>(p);
    return cudaGetLastError();
  }
  const auto aligned = [](const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; };
  const bool words = pointwise_in_words(p.c, p.hw) && aligned(p.x) && aligned(p.w);
  // Few output channels (the detector's and the recogniser's first layers): 32 x 128 tiles, else 64 x 64.
  if (p.k <= 32) return launch_tiles<32, 128, kNarrowStep, kNarrowStages>(p, words, stream);
  return launch_tiles<64, 64, kWideStep, kWideStages>(p, words, stream);
}

}  // namespace steadyocr::cuda::k

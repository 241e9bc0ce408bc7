// Depthwise convolution (one filter per channel), fp32 accumulation: a tiled kernel for the 3x3 and 5x5 filters the
// models use (below), and one thread per output for any other geometry. Neither needs per-shape planning (cuDNN
// builds an execution plan on the first call of every new shape). The epilogue (bias, activation, affine:
// DwEpilogue) runs in the same thread where its operands are per channel, and the index arithmetic is 32-bit below
// 2^31 outputs: on the recogniser's [6,240,12,80] 5x5 layers a separate epilogue launch and 64-bit divisions were
// most of the step's time.
#include <algorithm>

#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

template <typename T, typename I, bool kFused>
__global__ void depthwise_kernel(const __grid_constant__ DepthwiseParams p, I total) {
  const T* x = static_cast<const T*>(p.x);
  const T* w = static_cast<const T*>(p.w);
  T* y = static_cast<T*>(p.y);
  const I ow = static_cast<I>(p.ow), oh = static_cast<I>(p.oh), ch = static_cast<I>(p.c);
  const I plane_size = static_cast<I>(p.h) * static_cast<I>(p.w_in);
  for (I i = static_cast<I>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<I>(gridDim.x) * blockDim.x) {
    const I row = i / ow;
    const int ox = static_cast<int>(i - row * ow);
    const I plane = row / oh;  // n * C + c
    const int oy = static_cast<int>(row - plane * oh);
    const int c = static_cast<int>(plane % ch);
    const T* src = x + plane * plane_size;
    const T* f = w + c * p.kh * p.kw;
    const int y0 = oy * p.sh - p.pad_t, x0 = ox * p.sw - p.pad_l;
    float acc = 0.f;
    for (int ky = 0; ky < p.kh; ++ky) {
      const int iy = y0 + ky * p.dil_h;
      if (iy < 0 || iy >= p.h) continue;
      const T* line = src + static_cast<I>(iy) * static_cast<I>(p.w_in);
      const T* frow = f + ky * p.kw;
      for (int kx = 0; kx < p.kw; ++kx) {
        const int ix = x0 + kx * p.dil_w;
        if (ix < 0 || ix >= p.w_in) continue;
        acc = fmaf(to_f(line[ix]), to_f(frow[kx]), acc);
      }
    }
    if constexpr (kFused) {
      // The raw sum as the separate epilogue would have read it back.
      store_from_float(p.epi.out, p.epi.out_dt, i, apply_channel_epilogue(p.epi, to_f(from_f<T>(acc)), c));
    } else {
      y[i] = from_f<T>(acc);
    }
  }
}

// The tiled kernel (3x3 and 5x5 filters, strides 1-2, no dilation: every depthwise layer of the PP-OCR models). A
// block computes a tile of one plane (n, c): kTileCols columns by kRowGroups groups of `rows` consecutive rows (1-4,
// chosen per layer so that short planes waste few threads). The tile's input with its halo is read once into shared
// memory as floats (zeros outside the picture) and the filter once into registers; each output then takes KH x KW
// fused multiply-adds from shared memory, in the order of depthwise_kernel (rows, then columns; a tap outside the
// picture adds 0), so the values are the same. The epilogue's operands are read once per block (a block has one
// channel) and its program runs once per instruction over the thread's rows (apply_channel_epilogue_n on kRows
// values: 1, 2 or 4). The one-thread-per-output kernel re-read every tap and the filter from global memory with
// bounds checks and three divisions per output: 0.28 ms for a [48,240,12,80] 5x5 layer on the H100 in fp32 and fp16
// alike (docs/BENCHMARKS.md).
constexpr int kTileCols = 32, kRowGroups = 4, kTileThreads = kTileCols * kRowGroups, kMaxRows = 4;
constexpr int kMaxTileStride = 2;

// kRows: the rows a thread can hold (1, 2 or kMaxRows), `rows` (at most kRows) those it has for this layer.
template <typename T, typename I, int KH, int KW, bool kFused, int kRows>
__global__ void __launch_bounds__(kTileThreads)
    depthwise_tiled_kernel(const __grid_constant__ DepthwiseParams p, int rows, int tiles_x, int tiles_y) {
  extern __shared__ float tile[];
  const int tiles = tiles_x * tiles_y;
  const I plane = static_cast<I>(blockIdx.x / static_cast<unsigned>(tiles));  // n * C + c
  const int t = static_cast<int>(blockIdx.x - static_cast<unsigned>(plane) * static_cast<unsigned>(tiles));
  const int tile_y = t / tiles_x, tile_x = t - tile_y * tiles_x;
  const int out_rows = kRowGroups * rows;
  const int oy0 = tile_y * out_rows, ox0 = tile_x * kTileCols;
  const int in_rows = (out_rows - 1) * p.sh + KH, in_cols = (kTileCols - 1) * p.sw + KW;
  const int iy0 = oy0 * p.sh - p.pad_t, ix0 = ox0 * p.sw - p.pad_l;
  const T* src = static_cast<const T*>(p.x) + plane * static_cast<I>(p.h) * static_cast<I>(p.w_in);
  for (int k = threadIdx.x; k < in_rows * in_cols; k += kTileThreads) {
    const int r = k / in_cols, col = k - r * in_cols;
    const int iy = iy0 + r, ix = ix0 + col;
    tile[k] = iy >= 0 && iy < p.h && ix >= 0 && ix < p.w_in ? to_f(src[static_cast<I>(iy) * p.w_in + ix]) : 0.f;
  }
  const int c = static_cast<int>(plane % static_cast<I>(p.c));
  const T* wp = static_cast<const T*>(p.w) + c * (KH * KW);
  float f[KH * KW];
#pragma unroll
  for (int k = 0; k < KH * KW; ++k) f[k] = to_f(wp[k]);
  __shared__ float operand[kEwMaxInstrs];  // the epilogue's operands for this block's channel
  if constexpr (kFused) {
    if (static_cast<int>(threadIdx.x) < p.epi.n_instrs) {
      operand[threadIdx.x] = channel_operand(p.epi, static_cast<int>(threadIdx.x), c);
    }
  }
  __syncthreads();
  const int tx = static_cast<int>(threadIdx.x) % kTileCols, group = static_cast<int>(threadIdx.x) / kTileCols;
  const int ox = ox0 + tx;
  if (ox >= p.ow) return;
  const I out_plane = plane * static_cast<I>(p.oh) * static_cast<I>(p.ow);
  // The thread's rows (up to kRows, in registers), then the epilogue on all of them at once, then the stores.
  float raw[kRows];
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int ly = group * rows + r;
    float acc = 0.f;
    if (r < rows && oy0 + ly < p.oh) {
      const float* in = tile + ly * p.sh * in_cols + tx * p.sw;
#pragma unroll
      for (int ky = 0; ky < KH; ++ky) {
#pragma unroll
        for (int kx = 0; kx < KW; ++kx) acc = fmaf(in[ky * in_cols + kx], f[ky * KW + kx], acc);
      }
    }
    raw[r] = to_f(from_f<T>(acc));  // the raw sum as the separate epilogue would have read it back
  }
  float v[kRows];
  if constexpr (kFused) apply_channel_epilogue_n(p.epi, operand, raw, v);
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    const int oy = oy0 + group * rows + r;
    if (r >= rows || oy >= p.oh) break;
    const I i = out_plane + static_cast<I>(oy) * static_cast<I>(p.ow) + static_cast<I>(ox);
    if constexpr (kFused) {
      store_from_float(p.epi.out, p.epi.out_dt, i, v[r]);
    } else {
      static_cast<T*>(p.y)[i] = from_f<T>(raw[r]);
    }
  }
}

// The tiled kernel's launch for KH x KW; false when the layer is not one it takes (the caller runs depthwise_kernel).
template <int KH, int KW>
bool launch_tiled(const DepthwiseParams& p, bool narrow, cudaStream_t stream) {
  if (p.kh != KH || p.kw != KW || p.dil_h != 1 || p.dil_w != 1) return false;
  if (p.sh < 1 || p.sw < 1 || p.sh > kMaxTileStride || p.sw > kMaxTileStride) return false;
  const int rows = std::min(kMaxRows, std::max(1, (p.oh + kRowGroups - 1) / kRowGroups));
  const int tiles_y = (p.oh + kRowGroups * rows - 1) / (kRowGroups * rows);
  const int tiles_x = (p.ow + kTileCols - 1) / kTileCols;
  const int64_t blocks = static_cast<int64_t>(p.n) * p.c * tiles_x * tiles_y;
  if (blocks <= 0 || blocks >= (int64_t{1} << 31)) return false;
  const size_t shared =
      sizeof(float) * static_cast<size_t>((kRowGroups * rows - 1) * p.sh + KH) * ((kTileCols - 1) * p.sw + KW);
  dispatch_conv_kernel(p.dt, narrow, p.epi.n_instrs > 0, [&](auto t, auto i, auto fused) {
    auto launch = [&](auto capacity) {
      depthwise_tiled_kernel<decltype(t), decltype(i), KH, KW, fused.value, capacity.value>
          <<<static_cast<unsigned>(blocks), kTileThreads, shared, stream>>>(p, rows, tiles_x, tiles_y);
    };
    // With an epilogue, a thread holds only the rows it has: its program runs over every value it holds, and the
    // recogniser's last layers (one or two rows per thread) would pay for four (a runtime choice among three copies
    // of the program cost the four-row layers 0.2-0.7 us per launch instead: docs/BENCHMARKS.md).
    if constexpr (fused.value) {
      if (rows == 1) return launch(std::integral_constant<int, 1>{});
      if (rows == 2) return launch(std::integral_constant<int, 2>{});
    }
    launch(std::integral_constant<int, kMaxRows>{});
  });
  return true;
}

}  // namespace

cudaError_t launch_depthwise(const DepthwiseParams& p, cudaStream_t stream) {
  const int64_t total = static_cast<int64_t>(p.n) * p.c * p.oh * p.ow;
  if (total <= 0) return cudaSuccess;
  // The input is as large as the output times the stride, at most: 32-bit offsets hold for both below 2^31.
  const int64_t in_total = static_cast<int64_t>(p.n) * p.c * p.h * p.w_in;
  const bool narrow = fits_u32(total) && fits_u32(in_total);
  if (launch_tiled<3, 3>(p, narrow, stream) || launch_tiled<5, 5>(p, narrow, stream)) return cudaGetLastError();
  dispatch_conv_kernel(p.dt, narrow, p.epi.n_instrs > 0, [&](auto t, auto i, auto fused) {
    using I = decltype(i);
    depthwise_kernel<decltype(t), I, fused.value><<<blocks_for(total), kThreads, 0, stream>>>(p, static_cast<I>(total));
  });
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

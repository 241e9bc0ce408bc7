// Launch API of our own CUDA kernels: plain structs and functions, compiled by nvcc in kernels/*.cu and
// called from the op builders (g++). Each launcher enqueues on `stream` and returns the launch's error
// (cudaGetLastError), which the caller checks through SO_GPU_CHECK.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace steadyocr::cuda::k {

constexpr int kMaxRank = 6;

// Element types the kernels read and write.
enum class Dt : uint8_t { kF32 = 0, kF16 = 1, kI64 = 2, kI32 = 3, kU8 = 4, kBool = 5 };

// ---- elementwise programs (elementwise.cu) -------------------------------------------------------------------
// An accumulator machine over one output index space: acc = load(in[acc_src]); then each instruction combines
// acc with an operand (another input, broadcast by its strides, or an immediate). Chains of elementwise nodes
// and conv epilogues (bias + residual + activation) become one program, so one launch.
enum class EwOp : uint8_t {
  kAdd,
  kSub,   // acc - b
  kRsub,  // b - acc
  kMul,
  kDiv,   // acc / b
  kRdiv,  // b / acc
  kPow,   // acc ^ b
  kRpow,  // b ^ acc
  kSqrt,
  kRelu,
  kSigmoid,
  kHardSigmoid,  // clamp(alpha*acc + beta, 0, 1)
  kHardSwish,    // acc * clamp(acc/6 + 1/2, 0, 1)
  kClip,         // clamp(acc, alpha, beta)
};

constexpr int kEwMaxInputs = 8;
constexpr int kEwMaxInstrs = 24;

struct EwInput {
  const void* ptr = nullptr;
  Dt dt = Dt::kF32;
  bool contiguous = false;  // same index as the output: no stride arithmetic
  int lo = 0;               // the outermost axis with a nonzero stride (the index walk stops there)
  int64_t strides[kMaxRank] = {0, 0, 0, 0, 0, 0};
};

struct EwInstr {
  EwOp op = EwOp::kAdd;
  int8_t src = -1;  // input index of operand b, -1 = immediate `imm`
  float imm = 0.f;
  float alpha = 0.f;
  float beta = 0.f;
};

struct EwParams {
  int rank = 0;
  int64_t shape[kMaxRank] = {1, 1, 1, 1, 1, 1};
  int64_t n = 0;
  int n_inputs = 0;
  EwInput in[kEwMaxInputs];
  int acc_src = 0;
  int n_instrs = 0;
  EwInstr ins[kEwMaxInstrs];
  void* out = nullptr;
  Dt out_dt = Dt::kF32;
};
cudaError_t launch_elementwise(const EwParams& p, cudaStream_t stream);

// ---- strided copies (copy.cu): transpose, slice, concat, pad ---------------------------------------------------
struct CopyParams {
  int rank = 0;
  int64_t shape[kMaxRank] = {1, 1, 1, 1, 1, 1};
  const void* src = nullptr;  // first element of the source view
  int64_t src_strides[kMaxRank] = {0, 0, 0, 0, 0, 0};
  void* dst = nullptr;  // first element of the destination view
  int64_t dst_strides[kMaxRank] = {0, 0, 0, 0, 0, 0};
  int elem_size = 4;  // 1, 2, 4 or 8 bytes
};
cudaError_t launch_strided_copy(const CopyParams& p, cudaStream_t stream);

// ---- casts (cast.cu): ONNX semantics, float -> integer truncates and saturates (NaN -> 0), -> bool is != 0 -------
cudaError_t launch_cast(const void* src, Dt src_dt, void* dst, Dt dst_dt, int64_t n, cudaStream_t stream);

// ---- depthwise convolution (depthwise.cu): NCHW, one filter per channel, weights in the data type -------------
// The convolution's epilogue evaluated in the same thread (fused; depthwise and shuffle-deconv kernels): the raw sum,
// rounded to the data type as a stored output would be, is the accumulator of the program's instructions; operand k
// is the raw sum itself (k = 0), a per-channel vector (read at the output's channel) or a scalar. Programs with other
// operands run as their own launch.
struct DwEpilogue {
  int n_instrs = 0;  // 0: none, y holds the raw sum
  EwInstr ins[kEwMaxInstrs];
  const void* in[kEwMaxInputs] = {};
  Dt in_dt[kEwMaxInputs] = {};
  bool per_channel[kEwMaxInputs] = {};  // false: one value
  void* out = nullptr;
  Dt out_dt = Dt::kF32;
};

struct DepthwiseParams {
  const void* x = nullptr;
  const void* w = nullptr;  // [C, 1, kh, kw]
  void* y = nullptr;
  Dt dt = Dt::kF32;
  int n = 0, c = 0, h = 0, w_in = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, pad_t = 0, pad_l = 0, dil_h = 1, dil_w = 1;
  DwEpilogue epi;  // n_instrs > 0: the output goes to epi.out after the program
};
cudaError_t launch_depthwise(const DepthwiseParams& p, cudaStream_t stream);

// ---- pointwise convolution in fp16 with a fused epilogue (pointwise.cu): NCHW, group 1, 1x1, no stride or pads -----
// y[n][k][p] = epilogue(sum over c of w[k][c] * x[n][c][p]) on tensor cores, fp32 accumulation; the sum is rounded to
// fp16 before the program (DwEpilogue, operands per output channel), whose result is the only store (to epi.out).
struct PointwiseParams {
  const void* x = nullptr;  // __half [n, c, hw]
  const void* w = nullptr;  // __half [k, c]
  int n = 0, c = 0, k = 0, hw = 0;
  DwEpilogue epi;  // n_instrs > 0
};
// Whether launch_pointwise takes this geometry (grid and index limits).
bool pointwise_supported(int64_t n, int64_t c, int64_t k, int64_t hw);
// Whether its rows go as words (with aligned tensors): the weights' as 16 bytes (input channels a multiple of 8), the
// pixels' as 16, 8 or 4 bytes (a multiple of 2 pixels per image); the kernel that copies them asynchronously (level
// with cuBLAS and the epilogue's launch on wide sums, docs/BENCHMARKS.md). Other rows stage through registers.
bool pointwise_in_words(int64_t c, int64_t hw);
cudaError_t launch_pointwise(const PointwiseParams& p, cudaStream_t stream);

// ---- transposed convolution whose kernel is its stride (deconv.cu): NCHW, group 1, no pads or dilation --------
// Each output reads one input pixel: y[n][co][oy][ox] = sum over ci of x[n][ci][oy / sh][ox / sw] *
// w[ci][co][oy % sh][ox % sw], then the epilogue (operands per output channel) in the same thread. The detector's
// 2x2 stride-2 upsampling heads; no column buffer and no per-shape planning.
struct ShuffleDeconvParams {
  const void* x = nullptr;
  const void* w = nullptr;  // [cin, cout, sh, sw]
  void* y = nullptr;
  Dt dt = Dt::kF32;
  int n = 0, cin = 0, cout = 0, h = 0, w_in = 0, sh = 1, sw = 1;
  DwEpilogue epi;  // n_instrs > 0: the output goes to epi.out after the program
};
cudaError_t launch_shuffle_deconv(const ShuffleDeconvParams& p, cudaStream_t stream);

// ---- convolution without cuDNN (im2col.cu): NCHW, the GEMM is cuBLAS's -------------------------------------------
// im2col: col[i][(c * kh + ky) * kw + kx][oy * ow + ox] = x[n0 + i][c][oy * sh - pad_t + ky * dil_h][...] (0 outside),
// for `n` images from x (already offset to the first one).
// col2im (the transposed convolution's gather): y[i][c][oy][ox] = sum over the (ky, kx, iy, ix) with
// oy + pad_t = iy * sh + ky * dil_h (and likewise on x) of col[i][(c * kh + ky) * kw + kx][iy * w_in + ix];
// here h/w_in are the transposed convolution's input sides and oh/ow its output sides.
struct Im2colParams {
  const void* src = nullptr;
  void* dst = nullptr;
  Dt dt = Dt::kF32;
  int n = 0, c = 0, h = 0, w_in = 0, oh = 0, ow = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1, pad_t = 0, pad_l = 0, dil_h = 1, dil_w = 1;
};
cudaError_t launch_im2col(const Im2colParams& p, cudaStream_t stream);
cudaError_t launch_col2im(const Im2colParams& p, cudaStream_t stream);

// ---- resize (resize.cu): NCHW, on H and W ----------------------------------------------------------------------
struct ResizeParams {
  const void* x = nullptr;
  void* y = nullptr;
  Dt dt = Dt::kF32;
  int64_t nc = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  float scale_h = 1.f, scale_w = 1.f;  // output/input
  int mode = 0;                        // 0 nearest, 1 linear
  int coord = 0;                       // 0 half_pixel, 1 asymmetric, 2 align_corners, 3 pytorch_half_pixel
  int nearest = 0;                     // 0 round_prefer_floor, 1 round_prefer_ceil, 2 floor, 3 ceil
};
cudaError_t launch_resize(const ResizeParams& p, cudaStream_t stream);

// ---- pooling (pool.cu): NCHW ---------------------------------------------------------------------------------
struct PoolParams {
  const void* x = nullptr;
  void* y = nullptr;
  Dt dt = Dt::kF32;
  int64_t nc = 0;
  int in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int kh = 1, kw = 1, sh = 1, sw = 1;
  int pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
  bool is_max = false;
  bool count_include_pad = false;
};
cudaError_t launch_pool(const PoolParams& p, cudaStream_t stream);
cudaError_t launch_global_avg_pool(const void* x, void* y, Dt dt, int64_t nc, int64_t hw, cudaStream_t stream);

// ---- softmax (softmax.cu): over `n` elements spaced `inner` apart, for outer*inner rows -------------------------
cudaError_t launch_softmax(const void* x, void* y, Dt dt, int64_t outer, int64_t n, int64_t inner, cudaStream_t stream);
// y[r] = {the largest of row r of x (rows x n), the first index holding it} (f32 pairs).
cudaError_t launch_top1(const void* x, float* y, Dt dt, int64_t rows, int64_t n, cudaStream_t stream);
// ImageLut (image.cu): x u8 [n, hw, c] (channels last), lut f32 [c, 256] -> y f32 [n, c, hw]; c <= 4. masked: x has
// c + 1 channels, the last a mask (0: the pixel's values are 0).
cudaError_t launch_image_lut(const uint8_t* x, const float* lut, float* y, int64_t n, int64_t c, int64_t hw,
                             bool masked, cudaStream_t stream);

// ---- ReduceMean (reduce.cu) ----------------------------------------------------------------------------------
struct ReduceParams {
  const void* x = nullptr;
  void* y = nullptr;
  Dt dt = Dt::kF32;
  int keep_rank = 0;  // kept axes (output index space), in input order
  int64_t keep_shape[kMaxRank] = {1, 1, 1, 1, 1, 1};
  int64_t keep_strides[kMaxRank] = {0, 0, 0, 0, 0, 0};
  int red_rank = 0;  // reduced axes
  int64_t red_shape[kMaxRank] = {1, 1, 1, 1, 1, 1};
  int64_t red_strides[kMaxRank] = {0, 0, 0, 0, 0, 0};
  int64_t out_n = 0;
  int64_t red_n = 0;
};
cudaError_t launch_reduce_mean(const ReduceParams& p, cudaStream_t stream);

// ---- LayerNorm (layernorm.cu): rows x cols, scale/bias f32[cols] (bias may be null) -----------------------------
cudaError_t launch_layernorm(const void* x, void* y, Dt dt, const float* scale, const float* bias, int64_t rows,
                             int64_t cols, float eps, cudaStream_t stream);

// ---- statistics for precision calibration (stats.cu) ---------------------------------------------------------
// Accumulates into out[5] (doubles, zeroed by the caller): sum(ref^2), sum((x-ref)^2), max|ref|, non-finite x,
// max|x-ref|.
// With ref == nullptr, ref := x (range only).
cudaError_t launch_value_stats(const void* x, Dt x_dt, const void* ref, Dt ref_dt, int64_t n, double* out,
                               cudaStream_t stream);

// ---- fault injection (fault.cu) ------------------------------------------------------------------------------
// Writes through an invalid device address: a real illegal-address fault that makes the context sticky-dead.
cudaError_t launch_illegal_address(cudaStream_t stream);
// Spins until *release_flag (host-mapped) becomes nonzero or timeout_ms passes.
cudaError_t launch_spin(const volatile int* release_flag, uint64_t timeout_ms, cudaStream_t stream);

}  // namespace steadyocr::cuda::k

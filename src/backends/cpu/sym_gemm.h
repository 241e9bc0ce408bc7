// Internal to the oneDNN CPU backend's symbolic plan: matrix products whose sizes are run-time arguments (oneDNN's
// sgemm: no primitive, nothing JIT-compiled per shape), with the epilogue applied to each chunk of output rows while
// it is still in cache, and the epilogue itself.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/cpu/fusion.h"
#include "core/status.h"

namespace steadyocr::cpu {

// What follows a product on each output row of `cols` channels: the bias, then the IR's fused activation and
// epilogue stages (backends/cpu/fusion.h's post-ops) in order, the residual among them.
class RowEpilogue {
 public:
  enum class Op : uint8_t {
    kChannelAdd,  // per-channel operand (bias, BatchNorm shift, ...)
    kChannelSub,
    kChannelMul,
    kChannelDiv,
    kResidual,  // + the residual tensor's row
    kRelu,
    kSigmoid,
    kHardSwish,
    kClip,    // clamp(x, alpha, beta)
    kLinear,  // alpha * x + beta
    kSqrt,
    kSwish,  // x * sigmoid(alpha * x)
    kSquare,
  };
  struct Stage {
    Op op = Op::kLinear;
    float alpha = 0.f, beta = 0.f;
    int channel = -1;  // per-channel stages: index into channels_
  };

  // `bias` (one value per channel) first when given, then `e`'s post-ops; kUnsupported for a post-op it has no
  // stage for.
  static Result<RowEpilogue> make(const std::vector<float>* bias, int64_t cols, const Epilogue& e);

  // Applies the stages to `rows` rows of `cols` floats, `ld` apart; the residual's rows are `ld_res` apart. The rows
  // hold channels [col0, col0 + cols) of the output (a block of a wider row).
  void apply(float* c, int64_t rows, int64_t cols, int64_t ld, const float* residual, int64_t ld_res,
             int64_t col0 = 0) const;
  bool empty() const { return stages_.empty(); }
  bool has_residual() const;
  std::string describe() const;  // "+bias+hardswish+mul[c]"

 private:
  std::vector<Stage> stages_;
  std::vector<std::vector<float>> channels_;
};

// Fills rows [r0, r0 + rows) of A (k floats each, dense) into `dst`: for products whose A is gathered (im2col).
using RowProducer = std::function<void(int64_t r0, int64_t rows, float* dst)>;

struct GemmArgs {
  int64_t m = 0, n = 0, k = 0;
  const float* a = nullptr;  // [m, k], rows `lda` apart; null when `produce` gathers them
  int64_t lda = 0;
  RowProducer produce;
  const float* b = nullptr;  // [k, n] row-major, or [n, k] when b_transposed
  bool b_transposed = false;
  float* c = nullptr;  // [m, n], rows `ldc` apart
  int64_t ldc = 0;
  const RowEpilogue* epilogue = nullptr;
  const float* residual = nullptr;  // [m, n], rows `ldr` apart
  int64_t ldr = 0;
};

// C = A * B, then the epilogue, chunk by chunk of rows across the calling thread's OpenMP team.
Status gemm_rows(const GemmArgs& g);

// One product C = A * B on the calling thread (inside a parallel region oneDNN's sgemm runs on this thread alone).
Status sgemm_serial(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool b_transposed, float* c, int64_t ldc);

}  // namespace steadyocr::cpu

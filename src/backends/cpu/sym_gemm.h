// Internal to the oneDNN CPU backend's symbolic plan: matrix products whose sizes are run-time arguments (oneDNN's
// sgemm: no primitive, nothing JIT-compiled per shape), with the epilogue applied to each chunk of output rows while
// it is still in cache, and the epilogue itself.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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
  std::string describe() const;  // "+bias+hardswish+mul[c]"

 private:
  std::vector<Stage> stages_;
  std::vector<std::vector<float>> channels_;
};

// Fills rows [r0, r0 + rows) of A (k floats each, dense) into `dst`: for products whose A is gathered (im2col).
using RowProducer = std::function<void(int64_t r0, int64_t rows, float* dst)>;
// Takes rows [r0, r0 + rows) of C (n floats each, dense in `src`) where they belong: for products whose C is scattered
// (a transposed convolution's kernel positions).
using RowConsumer = std::function<void(int64_t r0, int64_t rows, const float* src)>;

// One product's rows for ChunkGemm::run.
struct GemmArgs {
  int64_t m = 0;
  const float* a = nullptr;  // [m, k], rows `lda` apart; null when `produce` gathers them
  int64_t lda = 0;
  RowProducer produce;
  float* c = nullptr;  // [m, n], rows `ldc` apart; null when `consume` takes them
  int64_t ldc = 0;
  RowConsumer consume;
  const float* residual = nullptr;  // [m, n], rows `ldr` apart: read by a sum post-op
  int64_t ldr = 0;
};

// C[m, n] = A[m, k] * W (+ bias), then `e`'s post-ops (fusion.h: activations, per-channel arithmetic, the residual
// as oneDNN's sum), by one oneDNN matmul primitive made for a fixed number of rows and run chunk by chunk across
// the team: it depends on k, n and the post-ops, never on m, so it is made once (at the first run) and serves every
// input shape, with oneDNN's JIT kernels and the post-ops applied in registers. A last, shorter chunk runs through a
// padded copy. W is [k, n] row-major.
class ChunkGemm {
 public:
  ChunkGemm(int64_t k, int64_t n, Tensor weights, std::vector<float> bias, Epilogue e);
  ~ChunkGemm();
  ChunkGemm(ChunkGemm&&) noexcept;
  // g.residual is read when the post-ops hold a sum.
  Status run(const GemmArgs& g) const;
  // Makes the primitive now (run() makes it at the first call otherwise); thread-safe.
  Status init() const;
  int64_t rows_per_chunk() const { return mc_; }
  std::string describe() const;

 private:
  struct Prim;

  int64_t k_, n_, mc_;
  Tensor w_;
  std::vector<float> bias_;
  Epilogue e_;
  bool has_sum_ = false;
  std::unique_ptr<Prim> prim_;
};

// One product C = A * B on the calling thread (inside a parallel region oneDNN's sgemm runs on this thread alone).
Status sgemm_serial(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool b_transposed, float* c, int64_t ldc);

}  // namespace steadyocr::cpu

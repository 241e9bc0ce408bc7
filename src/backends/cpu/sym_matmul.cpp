// The symbolic plan's MatMul (the recogniser's SVTR neck and CTC head, the classifier's head): by constant weights,
// one GEMM over every leading row with the fused epilogue (bias, swish, residual) per chunk; between two computed
// tensors (attention), one GEMM per batch entry across the team.
#include <fmt/format.h>

#include "backends/cpu/fusion.h"
#include "backends/cpu/sym_gemm.h"
#include "backends/cpu/sym_ops.h"

namespace steadyocr::cpu {
namespace {

class WeightMatMul : public SymStep {
 public:
  WeightMatMul(int a, int y, int res, int64_t k, ChunkGemm gemm)
      : a_(a), y_(y), res_(res), k_(k), gemm_(std::move(gemm)) {}
  Status run(const SymRun& r) const override {
    const Shape& ys = r.shape(y_);
    GemmArgs g;
    g.m = shape_numel(r.shape(a_)) / k_;
    g.a = r.f32(a_);
    g.lda = k_;
    g.c = r.f32(y_);
    g.ldc = ys.back();
    if (res_ >= 0) {
      g.residual = r.f32(res_);
      g.ldr = ys.back();
    }
    return gemm_.run(g);
  }
  std::string describe() const override { return "matmul " + gemm_.describe(); }
  Status make_kernels() const override { return gemm_.init(); }

 private:
  int a_, y_, res_;
  int64_t k_;
  ChunkGemm gemm_;
};

class BatchedMatMul : public SymStep {
 public:
  BatchedMatMul(int a, int b, int y, RowEpilogue epi) : a_(a), b_(b), y_(y), epi_(std::move(epi)) {}
  Status run(const SymRun& r) const override {
    const Shape& as = r.shape(a_);
    const Shape& bs = r.shape(b_);
    const size_t rank = as.size();
    const int64_t m = as[rank - 2], k = as[rank - 1], n = bs[rank - 1];
    const int64_t batch = shape_numel(as) / (m * k);
    if (bs[rank - 2] != k || shape_numel(bs) / (k * n) != batch) {
      return invalid_argument(
          fmt::format("MatMul of {} and {}: the shapes do not match", shape_str(as), shape_str(bs)));
    }
    const float* a = r.f32(a_);
    const float* b = r.f32(b_);
    float* y = r.f32(y_);
    Status err;
    bool failed = false;
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < batch; ++i) {
      Status s = sgemm_serial(m, n, k, a + i * m * k, k, b + i * k * n, n, false, y + i * m * n, n);
      if (!s.is_ok()) {
#pragma omp critical
        {
          if (!failed) err = s;
          failed = true;
        }
        continue;
      }
      epi_.apply(y + i * m * n, m, n, n, nullptr, 0);
    }
    return failed ? err : Status::ok();
  }
  std::string describe() const override {
    return "matmul batched" + epi_.describe();
  }

 private:
  int a_, b_, y_;
  RowEpilogue epi_;
};

}  // namespace

Status build_sym_matmul(SymBuilder& b, const graph::Node& n) {
  const graph::Value* a = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* y = n.output();
  if (!a || !w || a->dtype != DType::kF32 || w->dtype != DType::kF32) return unsupported("MatMul of f32 only");
  if (a->shape.size() < 2 || w->shape.size() < 2) return unsupported("MatMul of vectors");
  if (a->is_constant()) return unsupported("MatMul of a constant by a computed tensor");
  Epilogue e;
  e.out = y;
  RETURN_IF_ERROR(add_epilogue(e, n));
  const int64_t cols = w->shape.back();  // symbolic between two computed tensors: no per-column stage then
  ASSIGN_OR_RETURN(RowEpilogue epi, RowEpilogue::make(nullptr, cols, e));
  ASSIGN_OR_RETURN(int ab, b.in_layout(a, Layout::kPlain));
  const int yb = b.new_buffer(y, Layout::kPlain);
  if (w->is_constant()) {
    if (w->shape.size() != 2) return unsupported("MatMul by batched constant weights");
    int res = -1;
    if (e.residual) {
      ASSIGN_OR_RETURN(res, b.in_layout(e.residual, Layout::kPlain));
    }
    std::vector<int> reads{ab};
    if (res >= 0) reads.push_back(res);
    const int64_t k = w->shape[0];
    b.add_step(std::make_unique<WeightMatMul>(ab, yb, res, k, ChunkGemm(k, cols, w->constant, {}, std::move(e))), reads,
               {yb}, &n);
  } else {
    if (e.residual) return unsupported("a residual after a MatMul of two computed tensors");
    if (a->shape.size() != w->shape.size()) return unsupported("a broadcasting batched MatMul");
    ASSIGN_OR_RETURN(int wb, b.in_layout(w, Layout::kPlain));
    b.add_step(std::make_unique<BatchedMatMul>(ab, wb, yb, std::move(epi)), {ab, wb}, {yb}, &n);
  }
  b.set_home(y, yb);
  return Status::ok();
}

}  // namespace steadyocr::cpu

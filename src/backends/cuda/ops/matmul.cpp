// MatMul (NumPy semantics) through cuBLAS: one GEMM when B has no batch (A's batch folds into M), one strided
// batched GEMM when batches match or one side broadcasts whole, else one GEMM per broadcast batch pair.
// Row-major C = A*B is computed as column-major C^T = B^T * A^T. Accumulation is fp32 (no TF32).
#include <fmt/format.h>

#include <array>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

class MatMulStep : public Step {
 public:
  DevTensor a, bm, c;
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0;  // strided form (stride_c = m*n)
  std::vector<std::array<int64_t, 3>> pairs;      // explicit (a, b, c) element offsets when not strided

  Status bind(const Bindings& bd) override {
    pa_ = bd.ptr(a.ref);
    pb_ = bd.ptr(bm.ref);
    pc_ = bd.ptr(c.ref);
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t t = c.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
    const size_t es = dtype_size(c.dtype);
    if (pairs.empty()) {
      SO_GPU_CHECK(cublasGemmStridedBatchedEx(
          ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &one,
          pb_, t, static_cast<int>(n), stride_b, pa_, t, static_cast<int>(k), stride_a, &zero, pc_, t,
          static_cast<int>(n), m * n, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      return Status::ok();
    }
    for (const auto& pr : pairs) {
      const char* ap = static_cast<const char*>(pa_) + pr[0] * es;
      const char* bp = static_cast<const char*>(pb_) + pr[1] * es;
      char* cp = static_cast<char*>(pc_) + pr[2] * es;
      SO_GPU_CHECK(cublasGemmEx(ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                                static_cast<int>(k), &one, bp, t, static_cast<int>(n), ap, t, static_cast<int>(k),
                                &zero, cp, t, static_cast<int>(n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(a.ref);
    reads->push_back(bm.ref);
    writes->push_back(c.ref);
  }

  unsigned calls() const override { return kCallsCublas; }

 private:
  const void* pa_ = nullptr;
  const void* pb_ = nullptr;
  void* pc_ = nullptr;
};

}  // namespace

Status build_matmul(PlanBuilder& b, const graph::Node& node) {
  const DType dt = b.compute_type(node);
  auto step = std::make_unique<MatMulStep>();
  ASSIGN_OR_RETURN(step->a, b.input(node.input(0), dt));
  ASSIGN_OR_RETURN(step->bm, b.input(node.input(1), dt));
  Shape sa = step->a.shape, sb = step->bm.shape;
  if (sa.empty() || sb.empty()) return invalid_argument("MatMul of a scalar");
  if (sa.size() == 1) sa.insert(sa.begin(), 1);
  if (sb.size() == 1) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) {
    return invalid_argument(
        fmt::format("MatMul shapes {} and {} do not agree", shape_str(step->a.shape), shape_str(step->bm.shape)));
  }
  Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  const size_t r = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), r - ba.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  Shape bo(r);
  for (size_t d = 0; d < r; ++d) {
    if (ba[d] != bb[d] && ba[d] != 1 && bb[d] != 1) {
      return invalid_argument(
          fmt::format("MatMul batch dims of {} and {} do not broadcast", shape_str(sa), shape_str(sb)));
    }
    bo[d] = std::max(ba[d], bb[d]);
  }
  const int64_t na = shape_numel(ba), nbt = shape_numel(bb), no = shape_numel(bo);
  step->m = m;
  step->n = n;
  step->k = k;
  if (nbt == 1) {  // A's batch folds into M: one GEMM
    step->m = m * na;
    step->batch = 1;
  } else if ((na == no || na == 1) && nbt == no) {
    step->batch = no;
    step->stride_a = na == 1 ? 0 : m * k;
    step->stride_b = k * n;
  } else {
    if (no > 256) return unsupported(fmt::format("MatMul with {} broadcast batch pairs", no));
    std::vector<int64_t> sta = shape_strides(ba), stb = shape_strides(bb);
    for (int64_t i = 0; i < no; ++i) {
      int64_t rem = i, ia = 0, ib = 0;
      for (int d = static_cast<int>(r) - 1; d >= 0; --d) {
        int64_t cidx = rem % bo[d];
        rem /= bo[d];
        if (ba[d] != 1) ia += cidx * sta[d];
        if (bb[d] != 1) ib += cidx * stb[d];
      }
      step->pairs.push_back({ia * m * k, ib * k * n, i * m * n});
    }
  }
  ASSIGN_OR_RETURN(step->c, b.output(node.output(), dt));
  if (step->c.numel() != no * m * n) {
    return invalid_argument(fmt::format("MatMul output {} does not hold {}x{}x{}", shape_str(step->c.shape), no, m, n));
  }
  b.add_step(std::move(step), &node);
  return Status::ok();
}

}  // namespace steadyocr::cuda

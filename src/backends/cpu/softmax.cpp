// Softmax on our own vectorised rows (max, exp, sum with 16 independent lanes so it vectorises without
// fast-math). ONNX opset < 13 semantics (flatten at `axis`) and opset 13 (one axis) both supported.
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/row_kernels.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {

// Softmax over rows of `len` contiguous floats. (omp simd: vectorised reductions without fast-math.)
SO_CPU_CLONES void softmax_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t len) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * len;
    float* __restrict yr = y + r * len;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t i = 0; i < len; ++i) m = vmax(m, xr[i]);
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < len; ++i) {
      const float e = vexp(xr[i] - m);
      yr[i] = e;
      sum += e;
    }
    const float inv = 1.f / sum;
#pragma omp simd
    for (int64_t i = 0; i < len; ++i) yr[i] *= inv;
  }
}

// Softmax over `len` rows of a [len, inner] block, vectorised across `inner`.
SO_CPU_CLONES void softmax_strided(const float* x, float* y, int64_t len, int64_t inner, float* tmp) {
  for (int64_t i = 0; i < inner; ++i) tmp[i] = -INFINITY;
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + j * inner;
    for (int64_t i = 0; i < inner; ++i) tmp[i] = vmax(tmp[i], xr[i]);
  }
  float* sum = tmp + inner;
  for (int64_t i = 0; i < inner; ++i) sum[i] = 0.f;
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + j * inner;
    float* yr = y + j * inner;
    for (int64_t i = 0; i < inner; ++i) {
      float e = vexp(xr[i] - tmp[i]);
      yr[i] = e;
      sum[i] += e;
    }
  }
  for (int64_t i = 0; i < inner; ++i) sum[i] = 1.f / sum[i];
  for (int64_t j = 0; j < len; ++j) {
    float* yr = y + j * inner;
    for (int64_t i = 0; i < inner; ++i) yr[i] *= sum[i];
  }
}

namespace {

class SoftmaxOp : public CpuOp {
 public:
  SoftmaxOp(int in, int out, int64_t outer, int64_t len, int64_t inner)
      : in_(in), out_(out), outer_(outer), len_(len), inner_(inner) {}
  Status run(RunContext& ctx) override {
    const float* x = ctx.f32(in_);
    float* y = ctx.f32(out_);
    if (inner_ == 1) {
      parallel_chunks(
          outer_, [&](int64_t b, int64_t e) { softmax_rows(x + b * len_, y + b * len_, e - b, len_); },
          std::max<int64_t>(1, 4096 / std::max<int64_t>(len_, 1)));
    } else {
      parallel_chunks(outer_, [&](int64_t b, int64_t e) {
        std::vector<float> tmp(static_cast<size_t>(2 * inner_));
        for (int64_t o = b; o < e; ++o) {
          softmax_strided(x + o * len_ * inner_, y + o * len_ * inner_, len_, inner_, tmp.data());
        }
      });
    }
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("softmax rows={} len={} inner={}", outer_, len_, inner_); }

 private:
  int in_, out_;
  int64_t outer_, len_, inner_;
};

}  // namespace

Status build_softmax(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::SoftmaxAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y || x->dtype != DType::kF32 || x->shape != y->shape) {
    return unsupported("Softmax needs an f32 input of the output's shape");
  }
  const int64_t rank = std::max<int64_t>(static_cast<int64_t>(x->shape.size()), 1);
  int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  if (axis < 0 || axis >= rank) return invalid_argument(fmt::format("Softmax axis {} out of range", a.axis));
  const Shape& s = x->shape;
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < axis && d < static_cast<int64_t>(s.size()); ++d) outer *= s[d];
  const int64_t total = shape_numel(s);
  if (a.flatten_trailing || s.empty()) {
    len = outer ? total / outer : 0;
  } else {
    len = s[axis];
    inner = outer * len != 0 ? total / (outer * len) : 0;
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(DType::kF32, y->shape, plain_md(y->shape), y->name);
  if (total > 0) b.add_step(std::make_unique<SoftmaxOp>(in, out, outer, len, inner), {in}, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

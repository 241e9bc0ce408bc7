// LayerNormalization over the trailing axes from `axis`: mean and population variance per row (16 lanes of
// partial sums), scale and optional bias broadcast over the normalised axes (expanded once at prepare).
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include <cmath>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/row_kernels.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {

SO_CPU_CLONES void layernorm_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t cols,
                                  const float* __restrict scale, const float* __restrict bias, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * cols;
    float* __restrict yr = y + r * cols;
    float sum = 0.f;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = 0; i < cols; ++i) sum += xr[i];
    const float mean = sum / static_cast<float>(cols);
    float var = 0.f;
#pragma omp simd reduction(+ : var)
    for (int64_t i = 0; i < cols; ++i) {
      const float d = xr[i] - mean;
      var += d * d;
    }
    var /= static_cast<float>(cols);
    const float inv = 1.f / std::sqrt(var + eps);
    if (bias) {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * inv * scale[j] + bias[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < cols; ++j) yr[j] = (xr[j] - mean) * inv * scale[j];
    }
  }
}

namespace {

class LayerNormOp : public CpuOp {
 public:
  LayerNormOp(int in, int out, int scale, int bias, int64_t rows, int64_t cols, float eps)
      : in_(in), out_(out), scale_(scale), bias_(bias), rows_(rows), cols_(cols), eps_(eps) {}
  Status run(RunContext& ctx) override {
    const float* x = ctx.f32(in_);
    float* y = ctx.f32(out_);
    const float* s = ctx.f32(scale_);
    const float* bb = bias_ >= 0 ? ctx.f32(bias_) : nullptr;
    parallel_chunks(
        rows_, [&](int64_t b, int64_t e) { layernorm_rows(x + b * cols_, y + b * cols_, e - b, cols_, s, bb, eps_); },
        std::max<int64_t>(1, 2048 / std::max<int64_t>(cols_, 1)));
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("layernorm rows={} cols={}", rows_, cols_); }

 private:
  int in_, out_, scale_, bias_;
  int64_t rows_, cols_;
  float eps_;
};

// A parameter broadcast to the trailing shape: a constant expanded here, or a runtime value already that size.
Result<int> parameter(PlanBuilder& b, const graph::Value* p, const Shape& trailing) {
  const int64_t cols = shape_numel(trailing);
  if (p->dtype != DType::kF32) return unsupported("LayerNorm parameters must be f32");
  if (!p->is_constant()) {
    if (shape_numel(p->shape) != cols) return unsupported("a runtime LayerNorm parameter must cover the axes");
    return b.plain(p);
  }
  const Shape& ps = p->shape;
  if (ps.size() > trailing.size()) return invalid_argument("LayerNorm parameter rank exceeds the normalised axes");
  std::vector<float> src = p->constant.to_floats(), out(static_cast<size_t>(cols));
  Shape full(trailing.size(), 1);
  for (size_t i = 0; i < ps.size(); ++i) full[trailing.size() - ps.size() + i] = ps[i];
  std::vector<int64_t> st(trailing.size(), 0);
  int64_t acc = 1;
  for (int i = static_cast<int>(trailing.size()) - 1; i >= 0; --i) {
    if (full[i] != 1 && full[i] != trailing[i]) {
      return invalid_argument(
          fmt::format("LayerNorm parameter {} does not broadcast to {}", shape_str(ps), shape_str(trailing)));
    }
    st[i] = full[i] == 1 ? 0 : acc;
    acc *= full[i];
  }
  for (int64_t j = 0; j < cols; ++j) {
    int64_t rem = j, off = 0;
    for (int i = static_cast<int>(trailing.size()) - 1; i >= 0; --i) {
      off += (rem % trailing[i]) * st[i];
      rem /= trailing[i];
    }
    out[j] = src[off];
  }
  return b.new_constant(Tensor::from_floats({cols}, out), plain_md({cols}), p->name);
}

}  // namespace

Status build_layernorm(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::LayerNormAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y || !n.input(1) || x->dtype != DType::kF32 || x->shape != y->shape || x->shape.empty()) {
    return unsupported("LayerNorm needs an f32 input of the output's shape and a scale");
  }
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  if (axis < 0 || axis >= rank) return invalid_argument(fmt::format("LayerNorm axis {} out of range", a.axis));
  Shape trailing(x->shape.begin() + axis, x->shape.end());
  const int64_t cols = shape_numel(trailing), rows = cols ? shape_numel(x->shape) / cols : 0;
  ASSIGN_OR_RETURN(int scale, parameter(b, n.input(1), trailing));
  int bias = -1;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(bias, parameter(b, n.input(2), trailing));
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(DType::kF32, y->shape, plain_md(y->shape), y->name);
  std::vector<int> reads{in, scale};
  if (bias >= 0) reads.push_back(bias);
  if (rows > 0)
    b.add_step(std::make_unique<LayerNormOp>(in, out, scale, bias, rows, cols, a.epsilon), reads, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

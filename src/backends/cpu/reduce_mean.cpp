// ReduceMean. Reduced axes that form one block (after dropping size-1 axes) run as [outer, reduce, inner]
// with 16-lane partial sums (inner == 1) or vectorised across `inner`; other axis sets use a generic walk.
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

SO_CPU_CLONES void mean_rows(const float* __restrict x, float* __restrict y, int64_t rows, int64_t len) {
  const float inv = 1.f / static_cast<float>(len);
  for (int64_t r = 0; r < rows; ++r) {
    const float* __restrict xr = x + r * len;
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < len; ++i) s += xr[i];
    y[r] = s * inv;
  }
}

SO_CPU_CLONES void mean_block(const float* __restrict x, float* __restrict y, int64_t len, int64_t inner) {
  for (int64_t i = 0; i < inner; ++i) y[i] = 0.f;
  for (int64_t j = 0; j < len; ++j) {
    const float* xr = x + j * inner;
    for (int64_t i = 0; i < inner; ++i) y[i] += xr[i];
  }
  const float inv = 1.f / static_cast<float>(len);
  for (int64_t i = 0; i < inner; ++i) y[i] *= inv;
}

class ReduceMeanOp : public CpuOp {
 public:
  ReduceMeanOp(int in, int out, Shape in_shape, std::vector<bool> reduced, int64_t outer, int64_t len, int64_t inner,
               bool block)
      : in_(in),
        out_(out),
        shape_(std::move(in_shape)),
        reduced_(std::move(reduced)),
        outer_(outer),
        len_(len),
        inner_(inner),
        block_(block) {}
  Status run(RunContext& ctx) override {
    const float* x = ctx.f32(in_);
    float* y = ctx.f32(out_);
    if (block_ && inner_ == 1) {
      parallel_chunks(
          outer_, [&](int64_t b, int64_t e) { mean_rows(x + b * len_, y + b, e - b, len_); },
          std::max<int64_t>(1, 4096 / std::max<int64_t>(len_, 1)));
    } else if (block_) {
      parallel_chunks(outer_, [&](int64_t b, int64_t e) {
        for (int64_t o = b; o < e; ++o) mean_block(x + o * len_ * inner_, y + o * inner_, len_, inner_);
      });
    } else {
      generic(x, y);
    }
    return Status::ok();
  }
  std::string describe() const override {
    return fmt::format("reduce_mean {} outer={} len={} inner={}", shape_str(shape_), outer_, len_, inner_);
  }

 private:
  void generic(const float* x, float* y) const {
    const int rank = static_cast<int>(shape_.size());
    std::vector<int64_t> ys(rank, 0);
    int64_t acc = 1, count = 1, out_n = 1;
    for (int d = rank - 1; d >= 0; --d) {
      if (reduced_[d]) {
        count *= shape_[d];
      } else {
        ys[d] = acc;
        acc *= shape_[d];
        out_n *= shape_[d];
      }
    }
    std::vector<double> sum(static_cast<size_t>(out_n), 0.0);
    const int64_t n = shape_numel(shape_);
    std::vector<int64_t> idx(rank, 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; ++i) {
      sum[off] += x[i];
      for (int d = rank - 1; d >= 0; --d) {
        off += ys[d];
        if (++idx[d] < shape_[d]) break;
        off -= ys[d] * shape_[d];
        idx[d] = 0;
      }
    }
    for (int64_t i = 0; i < out_n; ++i) y[i] = static_cast<float>(sum[i] / static_cast<double>(count));
  }

  int in_, out_;
  Shape shape_;
  std::vector<bool> reduced_;
  int64_t outer_, len_, inner_;
  bool block_;
};

}  // namespace

Status build_reduce_mean(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ReduceAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y || x->dtype != DType::kF32) return unsupported("ReduceMean runs on f32 only");
  const Shape& s = x->shape;
  const int rank = static_cast<int>(s.size());
  std::vector<bool> reduced(rank, a.axes.empty());
  for (int64_t ax : a.axes) {
    int64_t d = ax < 0 ? ax + rank : ax;
    if (d < 0 || d >= rank) return invalid_argument(fmt::format("ReduceMean axis {} out of range", ax));
    reduced[d] = true;
  }
  // One block of reduced axes (ignoring size-1 axes)?
  int first = -1, last = -1;
  bool block = true;
  for (int d = 0; d < rank; ++d) {
    if (s[d] == 1 || !reduced[d]) continue;
    if (first < 0) first = d;
    last = d;
  }
  for (int d = first; block && first >= 0 && d <= last; ++d) block = reduced[d] || s[d] == 1;
  int64_t outer = 1, len = 1, inner = 1;
  if (first < 0) {
    first = last = rank;  // nothing of size > 1 reduced: a copy
  }
  for (int d = 0; d < rank; ++d) {
    if (d < first)
      outer *= s[d];
    else if (d <= last)
      len *= s[d];
    else
      inner *= s[d];
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(DType::kF32, y->shape, plain_md(y->shape), y->name);
  if (shape_numel(s) > 0) {
    b.add_step(std::make_unique<ReduceMeanOp>(in, out, s, reduced, outer, len, inner, block), {in}, {out}, &n);
  }
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

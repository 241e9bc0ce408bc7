// The symbolic plan's row ops: Softmax (over the last axis, or an inner one) and LayerNormalization (over trailing
// axes of static size), on the per-shape plan's row kernels (row_kernels.h), rows counted at run time.
#include <fmt/format.h>

#include <algorithm>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/row_kernels.h"
#include "backends/cpu/sym_ops.h"

namespace steadyocr::cpu {
namespace {

class Softmax : public SymStep {
 public:
  Softmax(int x, int y, int axis) : x_(x), y_(y), axis_(axis) {}
  Status run(const SymRun& r) const override {
    const Shape& s = r.shape(x_);
    int64_t outer = 1, len = s[static_cast<size_t>(axis_)], inner = 1;
    for (int i = 0; i < axis_; ++i) outer *= s[static_cast<size_t>(i)];
    for (size_t i = static_cast<size_t>(axis_) + 1; i < s.size(); ++i) inner *= s[i];
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    if (inner == 1) {
      parallel_chunks(
          outer, [&](int64_t b, int64_t e) { softmax_rows(x + b * len, y + b * len, e - b, len); },
          std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)));
    } else {
      parallel_chunks(outer, [&](int64_t b, int64_t e) {
        std::vector<float> tmp(static_cast<size_t>(2 * inner));
        for (int64_t o = b; o < e; ++o)
          softmax_strided(x + o * len * inner, y + o * len * inner, len, inner, tmp.data());
      });
    }
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("softmax axis {}", axis_); }

 private:
  int x_, y_, axis_;
};

class LayerNorm : public SymStep {
 public:
  LayerNorm(int x, int y, Tensor scale, Tensor bias, int64_t cols, float eps)
      : x_(x), y_(y), scale_(std::move(scale)), bias_(std::move(bias)), cols_(cols), eps_(eps) {}
  Status run(const SymRun& r) const override {
    const int64_t rows = shape_numel(r.shape(x_)) / cols_;
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    const float* s = scale_.data<float>();
    const float* bb = bias_.defined() ? bias_.data<float>() : nullptr;
    parallel_chunks(
        rows, [&](int64_t b, int64_t e) { layernorm_rows(x + b * cols_, y + b * cols_, e - b, cols_, s, bb, eps_); },
        std::max<int64_t>(1, 2048 / std::max<int64_t>(cols_, 1)));
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("layernorm cols={}", cols_); }

 private:
  int x_, y_;
  Tensor scale_, bias_;
  int64_t cols_;
  float eps_;
};

// A LayerNorm parameter broadcast over the normalised trailing shape, expanded once.
Result<Tensor> expand_parameter(const graph::Value* p, const Shape& trailing) {
  if (!p->is_constant() || p->dtype != DType::kF32) return unsupported("LayerNorm parameters computed at run time");
  const Shape& ps = p->shape;
  if (ps.size() > trailing.size()) return invalid_argument("a LayerNorm parameter of higher rank than its axes");
  const int64_t cols = shape_numel(trailing);
  const std::vector<float> v = p->constant.to_floats();
  Tensor out = Tensor::empty(DType::kF32, {cols});
  float* o = out.data<float>();
  Shape full(trailing.size(), 1);
  for (size_t i = 0; i < ps.size(); ++i) full[trailing.size() - ps.size() + i] = ps[i];
  const std::vector<int64_t> src_strides = shape_strides(full);
  for (int64_t i = 0; i < cols; ++i) {
    int64_t rem = i, off = 0;
    for (int d = static_cast<int>(trailing.size()) - 1; d >= 0; --d) {
      const int64_t idx = rem % trailing[static_cast<size_t>(d)];
      rem /= trailing[static_cast<size_t>(d)];
      if (full[static_cast<size_t>(d)] != 1) off += idx * src_strides[static_cast<size_t>(d)];
    }
    o[i] = v[static_cast<size_t>(off)];
  }
  return out;
}

}  // namespace

Status build_sym_rows(SymBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || x->dtype != DType::kF32) return unsupported("f32 only");
  const int64_t rank = static_cast<int64_t>(x->shape.size());
  if (n.op == graph::OpKind::kSoftmax) {
    const auto& a = n.attr<graph::SoftmaxAttrs>();
    int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
    if (axis < 0 || axis >= rank) return invalid_argument(n.describe() + ": axis out of range");
    // Opset < 13 flattens at `axis`: the same as one axis when it is the last.
    if (a.flatten_trailing && axis != rank - 1) return unsupported("a flattening Softmax before the last axis");
    ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kPlain));
    const int yb = b.new_buffer(y, Layout::kPlain);
    b.add_step(std::make_unique<Softmax>(xb, yb, static_cast<int>(axis)), {xb}, {yb}, &n);
    b.set_home(y, yb);
    return Status::ok();
  }
  const auto& a = n.attr<graph::LayerNormAttrs>();
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  if (axis < 0 || axis >= rank) return invalid_argument(n.describe() + ": axis out of range");
  const Shape trailing(x->shape.begin() + axis, x->shape.end());
  if (!std::all_of(trailing.begin(), trailing.end(), [](int64_t d) { return d >= 0; })) {
    return unsupported("LayerNorm over axes of symbolic size");
  }
  ASSIGN_OR_RETURN(Tensor scale, expand_parameter(n.input(1), trailing));
  Tensor bias;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(bias, expand_parameter(n.input(2), trailing));
  }
  ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kPlain));
  const int yb = b.new_buffer(y, Layout::kPlain);
  b.add_step(std::make_unique<LayerNorm>(xb, yb, std::move(scale), std::move(bias), shape_numel(trailing), a.epsilon),
             {xb}, {yb}, &n);
  b.set_home(y, yb);
  return Status::ok();
}

}  // namespace steadyocr::cpu

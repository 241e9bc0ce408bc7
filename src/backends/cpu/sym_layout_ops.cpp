// The symbolic plan's data movement: layout conversions between NCHW and channels-last, views (Reshape, Squeeze,
// Unsqueeze, Identity), Transpose, Slice and Concat, with every extent and offset computed from the run's dims.
#pragma GCC optimize("O3")

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/sym_ops.h"

namespace steadyocr::cpu {
namespace {

// dst (dense over `dims`) = src read with `strides` (elements), f32.
void copy_strided_f32(const float* src, const std::vector<int64_t>& strides, const Shape& dims, float* dst) {
  const int rank = static_cast<int>(dims.size());
  const int64_t total = shape_numel(dims);
  if (total <= 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = dims[rank - 1], rows = total / inner, is = strides[rank - 1];
  parallel_chunks(
      rows,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t rem = r, off = 0;
          for (int d = rank - 2; d >= 0; --d) {
            off += (rem % dims[d]) * strides[d];
            rem /= dims[d];
          }
          const float* s = src + off;
          float* o = dst + r * inner;
          if (is == 1) {
            std::memcpy(o, s, static_cast<size_t>(inner) * sizeof(float));
          } else {
            for (int64_t i = 0; i < inner; ++i) o[i] = s[i * is];
          }
        }
      },
      std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)));
}

// [planes][rows][cols] -> [planes][cols][rows] in 32x32 tiles.
void transpose_planes(const float* x, float* y, int64_t planes, int64_t rows, int64_t cols) {
  constexpr int64_t kT = 32;
  const int64_t rt = (rows + kT - 1) / kT, ct = (cols + kT - 1) / kT;
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t a = 0; a < rt; ++a) {
      for (int64_t c = 0; c < ct; ++c) {
        const float* xp = x + p * rows * cols;
        float* yp = y + p * rows * cols;
        const int64_t r1 = std::min(rows, (a + 1) * kT), c1 = std::min(cols, (c + 1) * kT);
        for (int64_t i = a * kT; i < r1; ++i)
          for (int64_t j = c * kT; j < c1; ++j) yp[j * rows + i] = xp[i * cols + j];
      }
    }
  }
}

class LayoutConversion : public SymStep {
 public:
  LayoutConversion(int from, int to, Layout to_layout) : from_(from), to_(to), to_layout_(to_layout) {}
  Status run(const SymRun& r) const override {
    const Shape& s = r.shape(from_);  // logical [N, C, H, W]
    const int64_t hw = s[2] * s[3];
    if (to_layout_ == Layout::kNhwc) {
      transpose_planes(r.f32(from_), r.f32(to_), s[0], s[1], hw);
    } else {
      transpose_planes(r.f32(from_), r.f32(to_), s[0], hw, s[1]);
    }
    return Status::ok();
  }
  std::string describe() const override { return to_layout_ == Layout::kNhwc ? "to nhwc" : "to nchw"; }

 private:
  int from_, to_;
  Layout to_layout_;
};

class Transpose : public SymStep {
 public:
  Transpose(int x, int y, std::vector<int64_t> perm) : x_(x), y_(y), perm_(std::move(perm)) {}
  Status run(const SymRun& r) const override {
    const Shape& xs = r.shape(x_);
    const std::vector<int64_t> in_strides = shape_strides(xs);
    std::vector<int64_t> st(perm_.size());
    for (size_t i = 0; i < perm_.size(); ++i) st[i] = in_strides[static_cast<size_t>(perm_[i])];
    copy_strided_f32(r.f32(x_), st, r.shape(y_), r.f32(y_));
    return Status::ok();
  }
  std::string describe() const override { return "transpose"; }

 private:
  int x_, y_;
  std::vector<int64_t> perm_;
};

class Slice : public SymStep {
 public:
  Slice(int x, int y, graph::SliceAttrs a) : x_(x), y_(y), a_(std::move(a)) {}
  Status run(const SymRun& r) const override {
    const Shape& xs = r.shape(x_);
    const Shape& ys = r.shape(y_);
    const std::vector<int64_t> in_strides = shape_strides(xs);
    std::vector<int64_t> st = in_strides;
    int64_t offset = 0;
    for (size_t i = 0; i < a_.starts.size(); ++i) {
      const int64_t rank = static_cast<int64_t>(xs.size());
      const int64_t axis = a_.axes[i] < 0 ? a_.axes[i] + rank : a_.axes[i];
      const int64_t dim = xs[static_cast<size_t>(axis)];
      const int64_t step = a_.steps.empty() ? 1 : a_.steps[i];
      int64_t start = a_.starts[i];
      if (start < 0) start += dim;
      start = step > 0 ? std::clamp<int64_t>(start, 0, dim) : std::clamp<int64_t>(start, 0, dim - 1);
      offset += start * in_strides[static_cast<size_t>(axis)];
      st[static_cast<size_t>(axis)] = in_strides[static_cast<size_t>(axis)] * step;
    }
    copy_strided_f32(r.f32(x_) + offset, st, ys, r.f32(y_));
    return Status::ok();
  }
  std::string describe() const override { return "slice"; }

 private:
  int x_, y_;
  graph::SliceAttrs a_;
};

class Concat : public SymStep {
 public:
  Concat(std::vector<int> xs, int y, int axis, bool nhwc) : xs_(std::move(xs)), y_(y), axis_(axis), nhwc_(nhwc) {}
  Status run(const SymRun& r) const override {
    // Channels-last channel concat: pixels are the outer rows, each input's channels a run inside them.
    const Shape ys = nhwc_ ? r.physical(y_) : r.shape(y_);
    const int axis = nhwc_ ? 3 : axis_;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= ys[static_cast<size_t>(i)];
    for (size_t i = static_cast<size_t>(axis) + 1; i < ys.size(); ++i) inner *= ys[i];
    const int64_t out_row = ys[static_cast<size_t>(axis)] * inner;
    float* y = r.f32(y_);
    int64_t at = 0;
    for (int x : xs_) {
      const Shape s = nhwc_ ? r.physical(x) : r.shape(x);
      const int64_t len = s[static_cast<size_t>(axis)] * inner;
      const float* src = r.f32(x);
      const int64_t off = at;
      parallel_chunks(
          outer,
          [&](int64_t b, int64_t e) {
            for (int64_t o = b; o < e; ++o) {
              std::memcpy(y + o * out_row + off, src + o * len, static_cast<size_t>(len) * sizeof(float));
            }
          },
          std::max<int64_t>(1, 4096 / std::max<int64_t>(len, 1)));
      at += len;
    }
    return Status::ok();
  }
  std::string describe() const override { return nhwc_ ? "concat channels nhwc" : "concat"; }

 private:
  std::vector<int> xs_;
  int y_, axis_;
  bool nhwc_;
};

Status check_f32(const graph::Node& n) {
  for (const graph::Value* v : n.inputs) {
    if (v && !v->is_constant() && v->dtype != DType::kF32) return unsupported("data movement of f32 tensors only");
  }
  return Status::ok();
}

}  // namespace

std::unique_ptr<SymStep> make_layout_conversion(int from, int to, Layout to_layout) {
  return std::make_unique<LayoutConversion>(from, to, to_layout);
}

Status build_sym_view(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_f32(n));
  if (n.inputs.size() > 1 && n.input(1)) return unsupported("a Reshape whose target is computed at run time");
  const graph::Value* x = n.input(0);
  if (x->is_constant()) return unsupported("a view of a constant (the passes fold those)");
  ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kPlain));
  const int v = b.new_view(xb, n.output()->shape, n.output()->name);
  b.set_home(n.output(), v);
  return Status::ok();
}

Status build_sym_transpose(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_f32(n));
  const graph::Value* x = n.input(0);
  std::vector<int64_t> perm = n.attr<graph::TransposeAttrs>().perm;
  if (perm.empty()) {
    for (size_t i = x->shape.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kPlain));
  const int y = b.new_buffer(n.output(), Layout::kPlain);
  b.add_step(std::make_unique<Transpose>(xb, y, std::move(perm)), {xb}, {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

Status build_sym_slice(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_f32(n));
  const auto& a = n.attr<graph::SliceAttrs>();
  if (a.axes.size() != a.starts.size()) return unsupported("a Slice without its axes");
  ASSIGN_OR_RETURN(int xb, b.in_layout(n.input(0), Layout::kPlain));
  const int y = b.new_buffer(n.output(), Layout::kPlain);
  b.add_step(std::make_unique<Slice>(xb, y, a), {xb}, {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

Status build_sym_concat(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_f32(n));
  const graph::Value* y = n.output();
  const int64_t rank = static_cast<int64_t>(y->shape.size());
  int64_t axis = n.attr<graph::AxisAttrs>().axis;
  if (axis < 0) axis += rank;
  // Channels-last when it concatenates channels of 4-D values and the first lives so.
  bool nhwc = rank == 4 && axis == 1 && !n.input(0)->is_constant();
  if (nhwc) {
    ASSIGN_OR_RETURN(int h, b.home(n.input(0)));
    nhwc = b.buffer(h).layout == Layout::kNhwc;
  }
  std::vector<int> xs;
  for (const graph::Value* v : n.inputs) {
    if (v->is_constant()) return unsupported("a Concat with a constant (the passes fold those)");
    ASSIGN_OR_RETURN(int xb, b.in_layout(v, nhwc ? Layout::kNhwc : Layout::kPlain));
    xs.push_back(xb);
  }
  const int out = b.new_buffer(y, nhwc ? Layout::kNhwc : Layout::kPlain);
  b.add_step(std::make_unique<Concat>(xs, out, static_cast<int>(axis), nhwc), xs, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

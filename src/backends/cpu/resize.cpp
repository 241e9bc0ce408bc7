// Resize (ONNX opset 11+ coordinate transforms and nearest rounding modes; linear = bilinear on H, W).
// Rank-4 resizes that keep N and C run in the producer's layout (channel-blocked, channels-last or plain)
// so the FPN upsampling between convolutions needs no reorder; other ranks run plain (nearest only).
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include <cmath>

#include "backends/common/resize_axis.h"
#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/resize_kernel.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {

using common::ResizeAxis;

SO_CPU_CLONES void resize_planes(const float* x, float* y, const Geometry& g, const ResizeAxis& ay,
                                 const ResizeAxis& ax, bool linear, int64_t p0, int64_t p1) {
  const int64_t v = g.vec, row_in = g.iw * v, row_out = g.ow * v;
  for (int64_t p = p0; p < p1; ++p) {
    const float* xp = x + p * g.ih * row_in;
    float* yp = y + p * g.oh * row_out;
    for (int64_t r = 0; r < g.oh; ++r) {
      float* yr = yp + r * row_out;
      const float* r0 = xp + ay.i0[r] * row_in;
      if (!linear) {
        for (int64_t c = 0; c < g.ow; ++c) {
          const float* s = r0 + ax.i0[c] * v;
          for (int64_t k = 0; k < v; ++k) yr[c * v + k] = s[k];
        }
        continue;
      }
      const float* r1 = xp + ay.i1[r] * row_in;
      const float ty = ay.t[r];
      for (int64_t c = 0; c < g.ow; ++c) {
        const float tx = ax.t[c];
        const float* a0 = r0 + ax.i0[c] * v;
        const float* a1 = r0 + ax.i1[c] * v;
        const float* b0 = r1 + ax.i0[c] * v;
        const float* b1 = r1 + ax.i1[c] * v;
        for (int64_t k = 0; k < v; ++k) {
          float top = a0[k] + (a1[k] - a0[k]) * tx;
          float bot = b0[k] + (b1[k] - b0[k]) * tx;
          yr[c * v + k] = top + (bot - top) * ty;
        }
      }
    }
  }
}

namespace {

class Resize4dOp : public CpuOp {
 public:
  Resize4dOp(int in, int out, Geometry g, ResizeAxis ay, ResizeAxis ax, bool linear, std::string label)
      : in_(in), out_(out), g_(g), ay_(std::move(ay)), ax_(std::move(ax)), linear_(linear), label_(std::move(label)) {}
  Status run(RunContext& ctx) override {
    const float* x = ctx.f32(in_);
    float* y = ctx.f32(out_);
    parallel_chunks(g_.planes, [&](int64_t b, int64_t e) { resize_planes(x, y, g_, ay_, ax_, linear_, b, e); });
    return Status::ok();
  }
  std::string describe() const override { return label_; }

 private:
  int in_, out_;
  Geometry g_;
  ResizeAxis ay_, ax_;
  bool linear_;
  std::string label_;
};

// Nearest over any axes on plain tensors: per-axis source tables, gather by rows.
class ResizeNearestOp : public CpuOp {
 public:
  ResizeNearestOp(int in, int out, Shape in_shape, Shape out_shape, std::vector<ResizeAxis> axes)
      : in_(in), out_(out), xs_(std::move(in_shape)), ys_(std::move(out_shape)), axes_(std::move(axes)) {}
  Status run(RunContext& ctx) override {
    const float* x = ctx.f32(in_);
    float* y = ctx.f32(out_);
    const int rank = static_cast<int>(ys_.size());
    std::vector<int64_t> st = shape_strides(xs_);
    const int64_t inner = ys_[rank - 1], rows = shape_numel(ys_) / inner;
    parallel_chunks(rows, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        int64_t rem = r, off = 0;
        for (int d = rank - 2; d >= 0; --d) {
          off += axes_[d].i0[rem % ys_[d]] * st[d];
          rem /= ys_[d];
        }
        for (int64_t i = 0; i < inner; ++i) y[r * inner + i] = x[off + axes_[rank - 1].i0[i]];
      }
    });
    return Status::ok();
  }
  std::string describe() const override { return "resize nearest " + shape_str(xs_) + "->" + shape_str(ys_); }

 private:
  int in_, out_;
  Shape xs_, ys_;
  std::vector<ResizeAxis> axes_;
};

}  // namespace

Status build_resize(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ResizeAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y || x->dtype != DType::kF32) return unsupported("Resize runs on f32 only");
  const Shape& xs = x->shape;
  const Shape& ys = y->shape;
  const int rank = static_cast<int>(xs.size());
  if (rank < 1 || static_cast<int>(ys.size()) != rank) return invalid_argument("Resize input and output ranks differ");
  std::vector<float> scales = a.scales;
  if (scales.empty() && a.sizes.empty() && n.input(2) && n.input(2)->is_constant() &&
      n.input(2)->constant.numel() == rank) {
    scales = n.input(2)->constant.to_floats();
  }
  if (!scales.empty() && static_cast<int>(scales.size()) != rank) {
    return invalid_argument(fmt::format("Resize has {} scales for rank {}", scales.size(), rank));
  }
  std::vector<ResizeAxis> axes;
  for (int d = 0; d < rank; ++d) {
    if (xs[d] == 0) return invalid_argument("Resize of an empty axis");
    float sc = !scales.empty() ? scales[d] : static_cast<float>(ys[d]) / static_cast<float>(xs[d]);
    if (!(sc > 0.f)) return invalid_argument(fmt::format("Resize scale {} on axis {} must be positive", sc, d));
    axes.push_back(common::resize_axis(a, sc, xs[d], ys[d]));
  }
  const bool linear = a.mode == graph::ResizeMode::kLinear;
  if (shape_numel(ys) == 0) {
    int out = b.new_buffer(DType::kF32, ys, plain_md(ys), y->name);
    b.set_home(y, out);
    return Status::ok();
  }
  bool lead_kept = true;
  for (int d = 0; d + 2 < rank; ++d) lead_kept = lead_kept && xs[d] == ys[d];
  if (linear && (rank < 2 || !lead_kept)) {
    return unsupported("linear Resize only scales the last two axes");
  }
  if (rank == 4 && lead_kept) {
    ASSIGN_OR_RETURN(int h, b.home(x));
    Md in_md = b.buffer(h).md;
    LayoutKind k = layout_kind(in_md);
    if (k.kind == LayoutKind::kOther) {
      in_md = plain_md(xs);
      k.kind = LayoutKind::kPlain;
    }
    ASSIGN_OR_RETURN(int in, b.in_layout(x, in_md));
    Md out_md = same_layout(in_md, to_dims(ys));
    Geometry g{};
    g.ih = xs[2];
    g.iw = xs[3];
    g.oh = ys[2];
    g.ow = ys[3];
    if (k.kind == LayoutKind::kChannelBlocked) {
      g.planes = xs[0] * ((xs[1] + k.block - 1) / k.block);
      g.vec = k.block;
    } else if (k.kind == LayoutKind::kChannelsLast) {
      g.planes = xs[0];
      g.vec = xs[1];
    } else {
      g.planes = xs[0] * xs[1];
      g.vec = 1;
    }
    int out = b.new_buffer(DType::kF32, ys, out_md, y->name);
    std::string label =
        fmt::format("resize {} {}->{} {}", linear ? "linear" : "nearest", shape_str(xs), shape_str(ys), md_str(out_md));
    b.add_step(std::make_unique<Resize4dOp>(in, out, g, axes[2], axes[3], linear, label), {in}, {out}, &n);
    b.set_home(y, out);
    return Status::ok();
  }
  if (linear) {
    // Linear on plain tensors of other ranks: view as [planes, H, W].
    ASSIGN_OR_RETURN(int in, b.plain(x));
    int out = b.new_buffer(DType::kF32, ys, plain_md(ys), y->name);
    Geometry g{};
    g.ih = rank >= 2 ? xs[rank - 2] : 1;
    g.iw = xs[rank - 1];
    g.oh = rank >= 2 ? ys[rank - 2] : 1;
    g.ow = ys[rank - 1];
    g.planes = shape_numel(xs) / (g.ih * g.iw);
    g.vec = 1;
    b.add_step(std::make_unique<Resize4dOp>(in, out, g, axes[rank - 2], axes[rank - 1], true, "resize linear"), {in},
               {out}, &n);
    b.set_home(y, out);
    return Status::ok();
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(DType::kF32, ys, plain_md(ys), y->name);
  b.add_step(std::make_unique<ResizeNearestOp>(in, out, xs, ys, std::move(axes)), {in}, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

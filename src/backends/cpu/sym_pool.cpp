// The symbolic plan's pooling, channels-last: global average (the squeeze-excite blocks), average and max windows
// with padding and ceil mode, each output pixel a loop over contiguous channel vectors.
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/sym_ops.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

class GlobalAveragePool : public SymStep {
 public:
  GlobalAveragePool(int x, int y) : x_(x), y_(y) {}
  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_);
    const int64_t N = xs[0], P = xs[1] * xs[2], C = xs[3];
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    // Channel blocks of 64 across the team, each summing over every pixel.
    const int64_t blocks = (C + 63) / 64;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t cb = 0; cb < blocks; ++cb) {
        const int64_t c0 = cb * 64, cn = std::min<int64_t>(64, C - c0);
        float acc[64];
        for (int64_t c = 0; c < cn; ++c) acc[c] = 0.f;
        const float* base = x + n * P * C + c0;
        for (int64_t p = 0; p < P; ++p) {
          const float* __restrict xr = base + p * C;
          for (int64_t c = 0; c < cn; ++c) acc[c] += xr[c];
        }
        const float inv = 1.f / static_cast<float>(P);
        for (int64_t c = 0; c < cn; ++c) y[n * C + c0 + c] = acc[c] * inv;
      }
    }
    return Status::ok();
  }
  std::string describe() const override {
    return "global average pool";
  }

 private:
  int x_, y_;
};

SO_CPU_CLONES void pool_pixel(const float* x, float* y, int64_t H, int64_t W, int64_t C, int64_t h0, int64_t w0,
                              int64_t kh, int64_t kw, bool max, bool count_pad, int64_t window_area) {
  const int64_t hs = std::max<int64_t>(h0, 0), he = std::min(h0 + kh, H);
  const int64_t ws = std::max<int64_t>(w0, 0), we = std::min(w0 + kw, W);
  for (int64_t c = 0; c < C; ++c) y[c] = max ? -INFINITY : 0.f;
  for (int64_t ih = hs; ih < he; ++ih) {
    for (int64_t iw = ws; iw < we; ++iw) {
      const float* __restrict xr = x + (ih * W + iw) * C;
      if (max) {
        for (int64_t c = 0; c < C; ++c) y[c] = vmax(y[c], xr[c]);
      } else {
        for (int64_t c = 0; c < C; ++c) y[c] += xr[c];
      }
    }
  }
  if (!max) {
    const int64_t count = count_pad ? window_area : (he - hs) * (we - ws);
    const float inv = 1.f / static_cast<float>(std::max<int64_t>(count, 1));
    for (int64_t c = 0; c < C; ++c) y[c] *= inv;
  }
}

class WindowPool : public SymStep {
 public:
  WindowPool(int x, int y, const graph::PoolAttrs& a, bool max) : x_(x), y_(y), a_(a), max_(max) {}
  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_), ys = r.physical(y_);
    const int64_t N = xs[0], H = xs[1], W = xs[2], C = xs[3], OH = ys[1], OW = ys[2];
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    const auto& a = a_;
    // count_include_pad counts the window clipped to the padded input (ONNX), not past the end in ceil mode.
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          const int64_t h0 = oh * a.strides[0] - a.pads[0], w0 = ow * a.strides[1] - a.pads[1];
          const int64_t area =
              (std::min(h0 + a.kernel[0], H + a.pads[2]) - h0) * (std::min(w0 + a.kernel[1], W + a.pads[3]) - w0);
          pool_pixel(x + n * H * W * C, y + ((n * OH + oh) * OW + ow) * C, H, W, C, h0, w0, a.kernel[0], a.kernel[1],
                     max_, a.count_include_pad, area);
        }
      }
    }
    return Status::ok();
  }
  std::string describe() const override {
    return fmt::format("{} pool {}x{}/{}", max_ ? "max" : "average", a_.kernel[0], a_.kernel[1], a_.strides[0]);
  }

 private:
  int x_, y_;
  graph::PoolAttrs a_;
  bool max_;
};

}  // namespace

Status build_sym_pool(SymBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  if (!x || x->shape.size() != 4 || x->dtype != DType::kF32) return unsupported("pooling of a 4-D f32 tensor only");
  ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kNhwc));
  const int y = b.new_buffer(n.output(), Layout::kNhwc);
  std::unique_ptr<SymStep> step;
  if (n.op == graph::OpKind::kGlobalAveragePool) {
    step = std::make_unique<GlobalAveragePool>(xb, y);
  } else {
    step = std::make_unique<WindowPool>(xb, y, n.attr<graph::PoolAttrs>(), n.op == graph::OpKind::kMaxPool);
  }
  b.add_step(std::move(step), {xb}, {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

}  // namespace steadyocr::cpu

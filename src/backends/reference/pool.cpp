// GlobalAveragePool, AveragePool and MaxPool on NCHW. Windows follow ONNX: pads are outside the input,
// ceil_mode's extra window may run past the pads. AveragePool divides by the valid input pixels, or with
// count_include_pad by the window clipped to the padded input (not past it). MaxPool treats pads as -inf.
#include <algorithm>
#include <limits>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

Status check_nchw(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  const Tensor& y = out[0];
  if (x.rank() != 4 || y.rank() != 4 || x.dim(0) != y.dim(0) || x.dim(1) != y.dim(1)) {
    return unsupported(fmt::format("{}: needs rank-4 NCHW input and output with equal N and C, got {} -> {}",
                                   node.describe(), x.describe(), y.describe()));
  }
  return Status::ok();
}

template <bool kMax>
Status window_pool(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::PoolAttrs>(node));
  RETURN_IF_ERROR(check_nchw(node, in, out));
  const auto& a = node.attr<graph::PoolAttrs>();
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const int64_t h = x.dim(2), w = x.dim(3), oh = y.dim(2), ow = y.dim(3);
  const int64_t kh = a.kernel[0], kw = a.kernel[1], sh = a.strides[0], sw = a.strides[1];
  const int64_t pt = a.pads[0], pl = a.pads[1], pb = a.pads[2], pr = a.pads[3];
  if (kh < 1 || kw < 1 || sh < 1 || sw < 1) {
    return invalid_argument(
        fmt::format("{}: kernel {}x{} and strides {}x{} must be positive", node.describe(), kh, kw, sh, sw));
  }
  // With ceil_mode, PyTorch and recent ONNX Runtime drop a last window that would start in the end padding;
  // older exporters keep it. Accept either length: the extra window then averages/maxes what it covers.
  auto expected = [&](int64_t len, int64_t p0, int64_t p1, int64_t k, int64_t s, bool drop) {
    const int64_t span = len + p0 + p1 - k;
    if (span < 0) return int64_t{0};
    int64_t o = (a.ceil_mode ? (span + s - 1) / s : span / s) + 1;
    if (drop && a.ceil_mode && (o - 1) * s >= len + p0) --o;
    return o;
  };
  auto fits = [&](int64_t o, int64_t len, int64_t p0, int64_t p1, int64_t k, int64_t s) {
    return o == expected(len, p0, p1, k, s, true) || o == expected(len, p0, p1, k, s, false);
  };
  if (!fits(oh, h, pt, pb, kh, sh) || !fits(ow, w, pl, pr, kw, sw)) {
    return invalid_argument(
        fmt::format("{}: output value is {} but input {} with kernel {}x{}, strides {}x{}, pads "
                    "{},{},{},{} and ceil_mode {} gives {}x{}",
                    node.describe(), y.describe(), x.describe(), kh, kw, sh, sw, pt, pl, pb, pr, a.ceil_mode,
                    expected(h, pt, pb, kh, sh, true), expected(w, pl, pr, kw, sw, true)));
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      x.dim(0) * x.dim(1),
      [&](int64_t b, int64_t e) {
        for (int64_t nc = b; nc < e; ++nc) {
          const float* xp = px + nc * h * w;
          float* yp = py + nc * oh * ow;
          for (int64_t oy = 0; oy < oh; ++oy) {
            const int64_t y0 = oy * sh - pt, y1 = std::min(y0 + kh, h + pb);
            const int64_t vy0 = std::max<int64_t>(y0, 0), vy1 = std::min(y1, h);
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t x0 = ox * sw - pl, x1 = std::min(x0 + kw, w + pr);
              const int64_t vx0 = std::max<int64_t>(x0, 0), vx1 = std::min(x1, w);
              if constexpr (kMax) {
                float m = -std::numeric_limits<float>::infinity();
                for (int64_t iy = vy0; iy < vy1; ++iy)
                  for (int64_t ix = vx0; ix < vx1; ++ix) m = std::max(m, xp[iy * w + ix]);
                yp[oy * ow + ox] = m;
              } else {
                double s = 0;
                for (int64_t iy = vy0; iy < vy1; ++iy)
                  for (int64_t ix = vx0; ix < vx1; ++ix) s += xp[iy * w + ix];
                const int64_t count = a.count_include_pad
                                          ? (y1 - y0) * (x1 - x0)
                                          : std::max<int64_t>(vy1 - vy0, 0) * std::max<int64_t>(vx1 - vx0, 0);
                yp[oy * ow + ox] = count > 0 ? static_cast<float>(s / count) : 0.f;
              }
            }
          }
        }
      },
      parallel_grain(oh * ow * kh * kw));
  return Status::ok();
}

}  // namespace

Status global_avg_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.rank() < 3 || y.numel() != x.dim(0) * x.dim(1)) {
    return invalid_argument(fmt::format("{}: input {} must be [N, C, spatial...] and output {} [N, C, 1...]",
                                        node.describe(), x.describe(), y.describe()));
  }
  const int64_t nc = x.dim(0) * x.dim(1), inner = nc ? x.numel() / nc : 0;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      nc,
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          double s = 0;
          const float* xp = px + i * inner;
          for (int64_t j = 0; j < inner; ++j) s += xp[j];
          py[i] = inner ? static_cast<float>(s / inner) : 0.f;
        }
      },
      parallel_grain(inner));
  return Status::ok();
}

Status avg_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  return window_pool<false>(node, in, out);
}

Status max_pool_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  return window_pool<true>(node, in, out);
}

}  // namespace steadyocr::reference

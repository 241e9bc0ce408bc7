// Resize (ONNX opset 11+ semantics). The output shape is the output Value's. The coordinate transform uses
// the scales from the attributes (or from input 2 before folding) and otherwise output/input length.
// Nearest works on every axis; linear is bilinear on the last two axes (leading axes must keep their size).
// Coordinates are computed in float like ONNX Runtime, so tie-breaking at .5 matches it.
#include <algorithm>
#include <cmath>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

using graph::ResizeCoord;
using graph::ResizeNearest;

float source_coord(ResizeCoord mode, int64_t out_i, float scale, int64_t in_len, int64_t out_len) {
  const float o = static_cast<float>(out_i);
  switch (mode) {
    case ResizeCoord::kHalfPixel:
      return (o + 0.5f) / scale - 0.5f;
    case ResizeCoord::kPytorchHalfPixel:
      return out_len > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
    case ResizeCoord::kAlignCorners:
      return out_len == 1 ? 0.f : o * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case ResizeCoord::kAsymmetric:
      return o / scale;
  }
  return o / scale;
}

int64_t nearest_index(ResizeNearest mode, float c, int64_t in_len) {
  float r;
  switch (mode) {
    case ResizeNearest::kFloor:
      r = std::floor(c);
      break;
    case ResizeNearest::kCeil:
      r = std::ceil(c);
      break;
    case ResizeNearest::kRoundPreferFloor:
      r = (c == std::floor(c) + 0.5f) ? std::floor(c) : std::round(c);
      break;
    case ResizeNearest::kRoundPreferCeil:
    default:
      r = std::round(c);  // std::round sends .5 away from zero: up for c >= 0; negatives clamp to 0 below
      if (c < 0 && c == std::floor(c) + 0.5f) r = std::ceil(c);
      break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in_len - 1);
}

}  // namespace

Status resize_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::ResizeAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::ResizeAttrs>();
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const int rank = x.rank();
  if (y.rank() != rank || rank < 1) {
    return invalid_argument(
        fmt::format("{}: input {} and output {} differ in rank", node.describe(), x.describe(), y.describe()));
  }
  std::vector<float> scales = a.scales;
  if (scales.empty() && a.sizes.empty() && in.size() > 2 && in[2] && in[2]->defined() && in[2]->numel() == rank) {
    scales = in[2]->to_floats();
  }
  if (!scales.empty() && static_cast<int>(scales.size()) != rank) {
    return invalid_argument(fmt::format("{}: {} scales for rank {}", node.describe(), scales.size(), rank));
  }
  std::vector<float> scale(rank);
  for (int d = 0; d < rank; ++d) {
    if (x.dim(d) == 0 && y.dim(d) != 0) {
      return invalid_argument(fmt::format("{}: cannot resize an empty axis {} of {} to {}", node.describe(), d,
                                          x.describe(), y.describe()));
    }
    scale[d] =
        !scales.empty() ? scales[d] : (x.dim(d) ? static_cast<float>(y.dim(d)) / static_cast<float>(x.dim(d)) : 1.f);
    if (!(scale[d] > 0.f)) {
      return invalid_argument(fmt::format("{}: scale {} on axis {} must be positive", node.describe(), scale[d], d));
    }
  }
  if (y.numel() == 0) return Status::ok();
  const float* px = x.data<float>();
  float* py = y.data<float>();

  if (a.mode == graph::ResizeMode::kNearest) {
    // Per-axis source index tables, then a gather over the output.
    std::vector<std::vector<int64_t>> src(rank);
    for (int d = 0; d < rank; ++d) {
      src[d].resize(static_cast<size_t>(y.dim(d)));
      for (int64_t i = 0; i < y.dim(d); ++i) {
        src[d][i] = nearest_index(a.nearest, source_coord(a.coord, i, scale[d], x.dim(d), y.dim(d)), x.dim(d));
      }
    }
    std::vector<int64_t> xs = shape_strides(x.shape());
    const int64_t inner = y.dim(rank - 1);
    const int64_t rows = y.numel() / inner;
    parallel_for(
        rows,
        [&](int64_t b, int64_t e) {
          for (int64_t r = b; r < e; ++r) {
            int64_t rem = r, off = 0;
            for (int d = rank - 2; d >= 0; --d) {
              off += src[d][rem % y.dim(d)] * xs[d];
              rem /= y.dim(d);
            }
            float* yr = py + r * inner;
            for (int64_t i = 0; i < inner; ++i) yr[i] = px[off + src[rank - 1][i]];
          }
        },
        parallel_grain(inner));
    return Status::ok();
  }

  if (rank < 2) return unsupported(fmt::format("{}: linear resize needs rank >= 2", node.describe()));
  for (int d = 0; d < rank - 2; ++d) {
    if (x.dim(d) != y.dim(d)) {
      return unsupported(fmt::format("{}: linear resize only scales the last two axes; {} -> {} changes axis {}",
                                     node.describe(), x.describe(), y.describe(), d));
    }
  }
  const int64_t ih = x.dim(rank - 2), iw = x.dim(rank - 1), oh = y.dim(rank - 2), ow = y.dim(rank - 1);
  // Two neighbours and the weight of the second, per output row and column (coordinates clamped to the input).
  struct Tap {
    int64_t i0, i1;
    float t;
  };
  auto taps = [&](int axis, int64_t in_len, int64_t out_len) {
    std::vector<Tap> v(static_cast<size_t>(out_len));
    for (int64_t i = 0; i < out_len; ++i) {
      float c = source_coord(a.coord, i, scale[axis], in_len, out_len);
      c = std::clamp(c, 0.f, static_cast<float>(in_len - 1));
      const auto i0 = static_cast<int64_t>(c);
      v[i] = {i0, std::min(i0 + 1, in_len - 1), c - static_cast<float>(i0)};
    }
    return v;
  };
  const std::vector<Tap> ty = taps(rank - 2, ih, oh), tx = taps(rank - 1, iw, ow);
  const int64_t planes = x.numel() / (ih * iw);
  parallel_for(
      planes,
      [&](int64_t b, int64_t e) {
        for (int64_t p = b; p < e; ++p) {
          const float* xp = px + p * ih * iw;
          float* yp = py + p * oh * ow;
          for (int64_t r = 0; r < oh; ++r) {
            const Tap& vy = ty[r];
            const float* r0 = xp + vy.i0 * iw;
            const float* r1 = xp + vy.i1 * iw;
            for (int64_t c = 0; c < ow; ++c) {
              const Tap& vx = tx[c];
              const double top = r0[vx.i0] + (static_cast<double>(r0[vx.i1]) - r0[vx.i0]) * vx.t;
              const double bot = r1[vx.i0] + (static_cast<double>(r1[vx.i1]) - r1[vx.i0]) * vx.t;
              yp[r * ow + c] = static_cast<float>(top + (bot - top) * vy.t);
            }
          }
        }
      },
      parallel_grain(oh * ow * 4));
  return Status::ok();
}

}  // namespace steadyocr::reference

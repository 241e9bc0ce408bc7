#include "backends/common/resize_axis.h"

#include <algorithm>
#include <cmath>

namespace steadyocr::common {
namespace {

using graph::ResizeCoord;
using graph::ResizeNearest;

float source_coordinate(ResizeCoord mode, int64_t i, float scale, int64_t in_len, int64_t out_len) {
  const float o = static_cast<float>(i);
  switch (mode) {
    case ResizeCoord::kHalfPixel:
      return (o + 0.5f) / scale - 0.5f;
    case ResizeCoord::kPytorchHalfPixel:
      return out_len > 1 ? (o + 0.5f) / scale - 0.5f : 0.f;
    case ResizeCoord::kAlignCorners:
      return out_len == 1 ? 0.f : o * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    case ResizeCoord::kAsymmetric:
    default:
      return o / scale;
  }
}

int64_t round_nearest(ResizeNearest mode, float c, int64_t in_len) {
  float f = std::floor(c), r;
  switch (mode) {
    case ResizeNearest::kFloor:
      r = f;
      break;
    case ResizeNearest::kCeil:
      r = std::ceil(c);
      break;
    case ResizeNearest::kRoundPreferFloor:
      r = c - f == 0.5f ? f : std::round(c);
      break;
    case ResizeNearest::kRoundPreferCeil:
    default:
      r = c - f == 0.5f ? f + 1.f : std::round(c);
      break;
  }
  return std::clamp<int64_t>(static_cast<int64_t>(r), 0, in_len - 1);
}

}  // namespace

ResizeAxis resize_axis(const graph::ResizeAttrs& a, float scale, int64_t in_len, int64_t out_len) {
  ResizeAxis ax;
  for (int64_t i = 0; i < out_len; ++i) {
    float c = source_coordinate(a.coord, i, scale, in_len, out_len);
    if (a.mode == graph::ResizeMode::kNearest) {
      ax.i0.push_back(round_nearest(a.nearest, c, in_len));
      ax.i1.push_back(ax.i0.back());
      ax.t.push_back(0.f);
    } else {
      c = std::clamp(c, 0.f, static_cast<float>(in_len - 1));
      auto i0 = static_cast<int64_t>(c);
      ax.i0.push_back(i0);
      ax.i1.push_back(std::min(i0 + 1, in_len - 1));
      ax.t.push_back(c - static_cast<float>(i0));
    }
  }
  return ax;
}

}  // namespace steadyocr::common

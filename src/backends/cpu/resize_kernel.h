// Internal to the oneDNN CPU backend: the rank-4 resize kernel the per-shape plan and the symbolic plan share.
#pragma once

#include <cstdint>

#include "backends/common/resize_axis.h"

namespace steadyocr::cpu {

struct Geometry {
  int64_t planes, ih, iw, oh, ow, vec;  // planes of [H, W, vec] floats
};

// Planes [p0, p1) of x resized into y along H and W by the per-axis tables (nearest: i0; linear: i0, i1, t).
void resize_planes(const float* x, float* y, const Geometry& g, const common::ResizeAxis& ay,
                   const common::ResizeAxis& ax, bool linear, int64_t p0, int64_t p1);

}  // namespace steadyocr::cpu

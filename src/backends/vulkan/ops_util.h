// Internal to the Vulkan backend's op builders (ops.cpp: compute ops and the op table; ops_layout.cpp: the layout
// ops, which move elements without arithmetic): the parameter-word helpers and the layout builders.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "backends/vulkan/plan.h"

namespace steadyocr::vk {

inline uint32_t fbits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline uint32_t u32(int64_t v) {
  return static_cast<uint32_t>(v);
}
inline bool normalize_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= std::max<int64_t>(rank, 1)) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}
// Row-major element strides.
std::vector<int64_t> strides_of(const Shape& s);
// Casts the cast shader runs: f32, i32, i64, u8, bool.
bool castable(DType t);

Status build_view(PlanBuilder& b, const graph::Node& n);  // Reshape, Squeeze, Unsqueeze, Identity
Status build_cast(PlanBuilder& b, const graph::Node& n);
Status build_shape(PlanBuilder& b, const graph::Node& n);
Status build_concat(PlanBuilder& b, const graph::Node& n);
Status build_transpose(PlanBuilder& b, const graph::Node& n);
Status build_slice(PlanBuilder& b, const graph::Node& n);

}  // namespace steadyocr::vk

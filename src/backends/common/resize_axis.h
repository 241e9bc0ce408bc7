// The per-axis tables of a Resize (ONNX opset 11+ coordinate transforms, computed in float like ONNX Runtime so that
// ties at .5 break the same way): for each output index its source index or linear taps. The cpu and vulkan
// backends build their kernels' tables with it; the reference backend keeps its own, independent copy of the rules.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ir.h"

namespace steadyocr::common {

struct ResizeAxis {
  std::vector<int64_t> i0, i1;  // nearest: i0 == i1, the source index; linear: the two neighbours
  std::vector<float> t;         // linear: the weight of i1; nearest: 0
};

// The table of one axis resized from in_len to out_len by `scale` (the attribute's, or out_len / in_len).
ResizeAxis resize_axis(const graph::ResizeAttrs& a, float scale, int64_t in_len, int64_t out_len);

}  // namespace steadyocr::common

// Concat along one axis (negative counts from the end). Any dtype (bytes are copied).
#include <cstring>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status concat_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::AxisAttrs>(node));
  Tensor& y = out[0];
  int64_t axis;
  if (!normalize_axis(node.attr<graph::AxisAttrs>().axis, y.rank(), &axis)) {
    return invalid_argument(fmt::format("{}: axis {} out of range for output {}", node.describe(),
                                        node.attr<graph::AxisAttrs>().axis, y.describe()));
  }
  if (in.empty()) return invalid_argument(fmt::format("{}: no inputs", node.describe()));
  int64_t total = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    RETURN_IF_ERROR(require_present(node, in, i));
    const Tensor& x = *in[i];
    bool ok = x.dtype() == y.dtype() && x.rank() == y.rank();
    for (int d = 0; ok && d < y.rank(); ++d) ok = d == axis || x.dim(d) == y.dim(d);
    if (!ok) {
      return invalid_argument(fmt::format("{}: input {} {} does not concatenate into {} on axis {}", node.describe(), i,
                                          x.describe(), y.describe(), axis));
    }
    total += x.dim(static_cast<int>(axis));
  }
  if (total != y.dim(static_cast<int>(axis))) {
    return invalid_argument(fmt::format("{}: inputs sum to {} on axis {} but the output is {}", node.describe(), total,
                                        axis, y.describe()));
  }
  int64_t outer = 1, inner = 1;
  for (int d = 0; d < axis; ++d) outer *= y.dim(d);
  for (int d = static_cast<int>(axis) + 1; d < y.rank(); ++d) inner *= y.dim(d);
  const size_t es = dtype_size(y.dtype());
  const size_t out_row = static_cast<size_t>(y.dim(static_cast<int>(axis)) * inner) * es;
  size_t col = 0;
  for (const Tensor* x : in) {
    const size_t row = static_cast<size_t>(x->dim(static_cast<int>(axis)) * inner) * es;
    if (row) {
      auto* dst = static_cast<uint8_t*>(y.raw()) + col;
      const auto* src = static_cast<const uint8_t*>(x->raw());
      for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + o * out_row, src + o * row, row);
    }
    col += row;
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

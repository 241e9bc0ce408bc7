// Slice (ONNX): starts/ends/axes/steps from the attributes, or from inputs 1-4 when the attributes are
// empty (opset >= 10 before folding). Negative indices count from the end, out-of-range ones clamp,
// negative steps walk backwards. Any dtype (bytes are copied).
#include <algorithm>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {
namespace {

std::vector<int64_t> optional_ints(const Inputs& in, size_t i) {
  if (i < in.size() && in[i] != nullptr && in[i]->defined()) return in[i]->to_int64s();
  return {};
}

}  // namespace

Status slice_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_present(node, in, 0));
  RETURN_IF_ERROR(require_attrs<graph::SliceAttrs>(node));
  const auto& a = node.attr<graph::SliceAttrs>();
  std::vector<int64_t> starts = a.starts, ends = a.ends, axes = a.axes, steps = a.steps;
  if (starts.empty() && ends.empty()) {
    starts = optional_ints(in, 1);
    ends = optional_ints(in, 2);
    axes = optional_ints(in, 3);
    steps = optional_ints(in, 4);
  }
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const int64_t rank = x.rank();
  if (starts.size() != ends.size()) {
    return invalid_argument(fmt::format("{}: {} starts but {} ends", node.describe(), starts.size(), ends.size()));
  }
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return invalid_argument(fmt::format("{}: starts/ends/axes/steps lengths differ ({}/{}/{}/{})", node.describe(),
                                        starts.size(), ends.size(), axes.size(), steps.size()));
  }
  if (y.dtype() != x.dtype()) {
    return invalid_argument(
        fmt::format("{}: output {} has another dtype than input {}", node.describe(), y.describe(), x.describe()));
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1);
  Shape count = x.shape();
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax;
    if (!normalize_axis(axes[i], rank, &ax) || seen[ax]) {
      return invalid_argument(
          fmt::format("{}: axis {} is invalid or repeated for rank {}", node.describe(), axes[i], rank));
    }
    seen[ax] = true;
    const int64_t dim = x.dim(static_cast<int>(ax));
    const int64_t st = steps[i];
    if (st == 0) return invalid_argument(fmt::format("{}: step 0 on axis {}", node.describe(), ax));
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t n = st > 0 ? (e - s + st - 1) / st : (s - e + (-st) - 1) / (-st);
    begin[ax] = s;
    step[ax] = st;
    count[ax] = std::max<int64_t>(n, 0);
  }
  if (count != y.shape()) {
    return invalid_argument(fmt::format("{}: the slice of {} has shape {} but the output value is {}", node.describe(),
                                        x.describe(), shape_str(count), y.describe()));
  }
  if (y.numel() == 0) return Status::ok();
  std::vector<int64_t> xs = shape_strides(x.shape());
  std::vector<int64_t> src_strides(rank);
  int64_t offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    offset += begin[d] * xs[d];
    src_strides[d] = xs[d] * step[d];
  }
  const size_t es = dtype_size(x.dtype());
  strided_copy(static_cast<const uint8_t*>(x.raw()) + offset * static_cast<int64_t>(es), src_strides, y.shape(),
               y.raw(), es);
  return Status::ok();
}

}  // namespace steadyocr::reference

// ReduceMean over `axes` (empty = all; negative count from the end), keepdims either way (the output
// Value's shape says which). Sums in double.
#include <algorithm>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status reduce_mean_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::ReduceAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::ReduceAttrs>();
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const int rank = x.rank();
  std::vector<bool> reduced(rank, a.axes.empty());
  for (int64_t ax : a.axes) {
    int64_t d;
    if (!normalize_axis(ax, rank, &d)) {
      return invalid_argument(fmt::format("{}: axis {} out of range for {}", node.describe(), ax, x.describe()));
    }
    reduced[d] = true;
  }
  Shape kept_dims, squeezed;
  int64_t count = 1;
  for (int d = 0; d < rank; ++d) {
    kept_dims.push_back(reduced[d] ? 1 : x.dim(d));
    if (!reduced[d]) squeezed.push_back(x.dim(d));
    if (reduced[d]) count *= x.dim(d);
  }
  if (y.shape() != kept_dims && y.shape() != squeezed) {
    return invalid_argument(fmt::format("{}: reducing {} gives {} (keepdims) or {} but the output value is {}",
                                        node.describe(), x.describe(), shape_str(kept_dims), shape_str(squeezed),
                                        y.describe()));
  }
  // Walk the input once, adding each element into its output slot (strides of the kept-dims output).
  std::vector<int64_t> ys = shape_strides(kept_dims);
  for (int d = 0; d < rank; ++d) {
    if (reduced[d]) ys[d] = 0;
  }
  std::vector<double> acc(static_cast<size_t>(std::max<int64_t>(y.numel(), 0)), 0.0);
  const float* px = x.data<float>();
  const int64_t n = x.numel();
  if (rank == 0) {
    if (n) acc[0] = px[0];
  } else {
    std::vector<int64_t> idx(rank, 0);
    int64_t off = 0;
    const int64_t inner = x.dim(rank - 1), inner_stride = ys[rank - 1];
    for (int64_t i = 0; i < n; i += inner) {
      for (int64_t j = 0; j < inner; ++j) acc[off + j * inner_stride] += px[i + j];
      for (int d = rank - 2; d >= 0; --d) {
        off += ys[d];
        if (++idx[d] < x.dim(d)) break;
        off -= ys[d] * x.dim(d);
        idx[d] = 0;
      }
    }
  }
  float* py = y.data<float>();
  for (size_t i = 0; i < acc.size(); ++i) py[i] = count ? static_cast<float>(acc[i] / count) : NAN;
  return Status::ok();
}

}  // namespace steadyocr::reference

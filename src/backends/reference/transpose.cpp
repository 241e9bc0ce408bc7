// Transpose by `perm` (empty = reverse the axes). Any dtype.
#include <algorithm>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status transpose_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_present(node, in, 0));
  RETURN_IF_ERROR(require_attrs<graph::TransposeAttrs>(node));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  const int rank = x.rank();
  std::vector<int64_t> perm = node.attr<graph::TransposeAttrs>().perm;
  if (perm.empty()) {
    for (int d = rank - 1; d >= 0; --d) perm.push_back(d);
  }
  std::vector<bool> seen(rank, false);
  bool ok = static_cast<int>(perm.size()) == rank && y.rank() == rank && x.dtype() == y.dtype();
  for (int d = 0; ok && d < rank; ++d) {
    int64_t p;
    ok = normalize_axis(perm[d], rank, &p) && !seen[p] && y.dim(d) == x.dim(static_cast<int>(p));
    if (ok) {
      seen[p] = true;
      perm[d] = p;
    }
  }
  if (!ok) {
    return invalid_argument(
        fmt::format("{}: perm {} does not map {} to {}", node.describe(), shape_str(perm), x.describe(), y.describe()));
  }
  std::vector<int64_t> xs = shape_strides(x.shape()), src_strides(rank);
  for (int d = 0; d < rank; ++d) src_strides[d] = xs[perm[d]];
  strided_copy(x.raw(), src_strides, y.shape(), y.raw(), dtype_size(x.dtype()));
  return Status::ok();
}

}  // namespace steadyocr::reference

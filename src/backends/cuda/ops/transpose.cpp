// Transpose as a strided copy (kernels/copy.cu): the source is read through permuted strides.
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_transpose(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::TransposeAttrs>();
  ASSIGN_OR_RETURN(DevTensor x, b.input_any(n.input(0)));
  const DType dt = is_float_type(x.dtype) ? b.compute_type(n) : x.dtype;
  if (dt != x.dtype) {
    ASSIGN_OR_RETURN(x, b.input(n.input(0), dt));
  }
  const size_t rank = x.shape.size();
  std::vector<int64_t> perm = a.perm;
  if (perm.empty()) {
    for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(rank - 1 - d));
  }
  if (perm.size() != rank) return invalid_argument(fmt::format("perm of size {} for rank {}", perm.size(), rank));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  std::vector<int64_t> xs = shape_strides(x.shape);
  CopyStep::View v;
  v.src = x.ref;
  v.dst = y.ref;
  v.shape = y.shape;
  v.dst_strides = shape_strides(y.shape);
  for (size_t d = 0; d < rank; ++d) {
    int64_t p = perm[d] < 0 ? perm[d] + static_cast<int64_t>(rank) : perm[d];
    if (p < 0 || p >= static_cast<int64_t>(rank) || x.shape[p] != y.shape[d]) {
      return invalid_argument(fmt::format("perm {} does not map {} to {}", p, shape_str(x.shape), shape_str(y.shape)));
    }
    v.src_strides.push_back(xs[p]);
  }
  auto step = std::make_unique<CopyStep>(static_cast<int>(dtype_size(dt)));
  step->add(std::move(v));
  b.add_step(std::move(step), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

// Reshape, Squeeze, Unsqueeze and Identity are views: the output shares the input's buffer. Shape (when not
// folded) is a constant of the static input shape.
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_reshape(PlanBuilder& b, const graph::Node& n) {
  ASSIGN_OR_RETURN(DevTensor x, b.input_any(n.input(0)));
  return b.alias(n.output(), x);
}

Status build_shape(PlanBuilder& b, const graph::Node& n) {
  const Shape& s = n.input(0)->shape;
  Tensor t = Tensor::from_int64s({static_cast<int64_t>(s.size())}, s);
  DevTensor d;
  ASSIGN_OR_RETURN(d.ref, b.weight_made(t, DType::kI64));
  d.dtype = DType::kI64;
  d.shape = t.shape();
  return b.alias(n.output(), d);
}

}  // namespace steadyocr::cuda

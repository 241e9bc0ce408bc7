// Shape: the input's dimensions as an i64 vector (the data is never read).
#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status shape_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_output(node, out, DType::kI64));
  Shape shape;
  if (!in.empty() && in[0] != nullptr && in[0]->defined()) {
    shape = in[0]->shape();
  } else if (node.input(0) != nullptr && node.input(0)->has_static_shape()) {
    // The constant folder may ask for the shape of a value whose data it does not hold.
    shape = node.input(0)->shape;
  } else {
    return invalid_argument(fmt::format("{}: input 0 is missing and its shape is not static", node.describe()));
  }
  if (out[0].numel() != static_cast<int64_t>(shape.size())) {
    return invalid_argument(fmt::format("{}: output {} cannot hold the rank-{} shape {}", node.describe(),
                                        out[0].describe(), shape.size(), shape_str(shape)));
  }
  int64_t* y = out[0].data<int64_t>();
  for (size_t i = 0; i < shape.size(); ++i) y[i] = shape[i];
  return Status::ok();
}

}  // namespace steadyocr::reference

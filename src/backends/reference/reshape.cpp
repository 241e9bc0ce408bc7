// Reshape, Squeeze, Unsqueeze, Identity: the data is unchanged, the output Value's static shape is the
// result (shape inference resolved the target). Any dtype.
#include <cstring>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status reshape_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_present(node, in, 0));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.dtype() != y.dtype() || x.numel() != y.numel()) {
    return invalid_argument(fmt::format("{}: cannot reshape {} into {} (element count or dtype differ)",
                                        node.describe(), x.describe(), y.describe()));
  }
  if (x.nbytes()) std::memcpy(y.raw(), x.raw(), x.nbytes());
  return Status::ok();
}

}  // namespace steadyocr::reference

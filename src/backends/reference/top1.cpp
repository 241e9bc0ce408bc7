// Top1 (steadyocr's own op, graph/ir.h): the largest value over the last axis and its index.
#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status top1_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.rank() < 1 || x.dim(-1) < 1 || y.numel() != x.numel() / x.dim(-1) * 2) {
    return invalid_argument(fmt::format("{}: input {} vs output {}", node.describe(), x.describe(), y.describe()));
  }
  const int64_t len = x.dim(-1), rows = x.numel() / len;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = px + r * len;
    int64_t best = 0;
    for (int64_t c = 1; c < len; ++c) {
      if (row[c] > row[best]) best = c;
    }
    py[2 * r] = row[best];
    py[2 * r + 1] = static_cast<float>(best);
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

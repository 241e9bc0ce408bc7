// Sqrt, elementwise f32 (negative inputs give NaN, like std::sqrt).
#include <cmath>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {

Status sqrt_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.numel() != y.numel()) {
    return invalid_argument(fmt::format("{}: input {} vs output {}", node.describe(), x.describe(), y.describe()));
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      x.numel(),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = std::sqrt(px[i]);
      },
      kMinParallelWork);
  return Status::ok();
}

}  // namespace steadyocr::reference

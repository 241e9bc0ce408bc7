// Softmax. flatten_trailing (ONNX opset < 13): one softmax over all axes from `axis` to the end taken as a
// single vector; otherwise over `axis` alone. Max-subtracted, exp and sum in double.
#include <cmath>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {

Status softmax_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::SoftmaxAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::SoftmaxAttrs>();
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (y.shape() != x.shape()) {
    return invalid_argument(fmt::format("{}: input {} vs output {}", node.describe(), x.describe(), y.describe()));
  }
  const int64_t rank = std::max(x.rank(), 1);
  int64_t axis;
  if (!normalize_axis(a.axis, rank, &axis)) {
    return invalid_argument(fmt::format("{}: axis {} out of range for {}", node.describe(), a.axis, x.describe()));
  }
  if (x.numel() == 0) return Status::ok();
  int64_t outer = 1, len = 1, inner = 1;  // softmax over `len` elements spaced `inner` apart
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(static_cast<int>(d));
  if (a.flatten_trailing) {
    len = x.numel() / outer;
  } else {
    len = x.rank() ? x.dim(static_cast<int>(axis)) : 1;
    inner = x.numel() / (outer * len);
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      outer * inner,
      [&](int64_t b, int64_t e) {
        std::vector<double> ex(static_cast<size_t>(len));
        for (int64_t r = b; r < e; ++r) {
          const int64_t o = r / inner, i = r % inner;
          const float* xp = px + o * len * inner + i;
          float* yp = py + o * len * inner + i;
          double mx = -INFINITY;
          for (int64_t j = 0; j < len; ++j) mx = std::max(mx, static_cast<double>(xp[j * inner]));
          double sum = 0;
          for (int64_t j = 0; j < len; ++j) sum += ex[j] = std::exp(xp[j * inner] - mx);
          for (int64_t j = 0; j < len; ++j) yp[j * inner] = static_cast<float>(ex[j] / sum);
        }
      },
      parallel_grain(3 * len));
  return Status::ok();
}

}  // namespace steadyocr::reference

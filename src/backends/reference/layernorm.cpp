// LayerNormalization: mean and (population) variance over the axes from `axis` to the end; scale and
// optional bias broadcast over those trailing axes. Computed in double.
#include <cmath>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

// The parameter expanded to the trailing shape (NumPy broadcasting), or an error.
Status expand(const graph::Node& node, const Tensor& p, const Shape& trailing, std::vector<double>* out) {
  std::vector<int64_t> st;
  if (p.dtype() != DType::kF32 || !broadcast_strides(p.shape(), trailing, &st)) {
    return invalid_argument(fmt::format("{}: parameter {} does not broadcast to the normalised axes {}",
                                        node.describe(), p.describe(), shape_str(trailing)));
  }
  const int64_t n = shape_numel(trailing);
  out->resize(static_cast<size_t>(n));
  std::vector<int64_t> ts = shape_strides(trailing);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < trailing.size(); ++d) off += (i / ts[d]) % trailing[d] * st[d];
    (*out)[i] = p.data<float>()[off];
  }
  return Status::ok();
}

}  // namespace

Status layernorm_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::LayerNormAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::LayerNormAttrs>();
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  int64_t axis;
  if (x.rank() == 0 || !normalize_axis(a.axis, x.rank(), &axis) || y.shape() != x.shape()) {
    return invalid_argument(fmt::format("{}: axis {} invalid for input {} / output {}", node.describe(), a.axis,
                                        x.describe(), y.describe()));
  }
  const Shape trailing(x.shape().begin() + axis, x.shape().end());
  const int64_t cols = shape_numel(trailing), rows = cols ? x.numel() / cols : 0;
  std::vector<double> scale, bias;
  RETURN_IF_ERROR(expand(node, *in[1], trailing, &scale));
  if (in.size() > 2 && in[2] && in[2]->defined()) {
    RETURN_IF_ERROR(expand(node, *in[2], trailing, &bias));
  } else {
    bias.assign(static_cast<size_t>(cols), 0.0);
  }
  const double eps = a.epsilon;
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      rows,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          const float* xr = px + r * cols;
          float* yr = py + r * cols;
          double mean = 0, var = 0;
          for (int64_t j = 0; j < cols; ++j) mean += xr[j];
          mean /= static_cast<double>(cols);
          for (int64_t j = 0; j < cols; ++j) var += (xr[j] - mean) * (xr[j] - mean);
          var /= static_cast<double>(cols);
          const double inv = 1.0 / std::sqrt(var + eps);
          for (int64_t j = 0; j < cols; ++j) yr[j] = static_cast<float>((xr[j] - mean) * inv * scale[j] + bias[j]);
        }
      },
      parallel_grain(3 * cols));
  return Status::ok();
}

}  // namespace steadyocr::reference

// BatchNormalization, inference form: y = (x - mean) / sqrt(var + eps) * scale + bias per channel (axis 1),
// computed in double.
#include <cmath>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {

Status batchnorm_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::BatchNormAttrs>(node));
  for (size_t i = 0; i < 5; ++i) RETURN_IF_ERROR(require_input(node, in, i, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.rank() < 2 || y.shape() != x.shape()) {
    return invalid_argument(fmt::format("{}: input {} must be [N, C, ...] and match the output {}", node.describe(),
                                        x.describe(), y.describe()));
  }
  const int64_t n = x.dim(0), c = x.dim(1), inner = x.numel() / std::max<int64_t>(n * c, 1);
  for (size_t i = 1; i < 5; ++i) {
    if (in[i]->numel() != c) {
      return invalid_argument(fmt::format("{}: parameter input {} is {}, expected {} channel values", node.describe(),
                                          i, in[i]->describe(), c));
    }
  }
  const double eps = node.attr<graph::BatchNormAttrs>().epsilon;
  std::vector<double> mul(c), mean(c), add(c);
  for (int64_t ch = 0; ch < c; ++ch) {
    const double scale = in[1]->data<float>()[ch], bias = in[2]->data<float>()[ch];
    const double var = in[4]->data<float>()[ch];
    mean[ch] = in[3]->data<float>()[ch];
    mul[ch] = scale / std::sqrt(var + eps);
    add[ch] = bias;
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      n * c,
      [&](int64_t b, int64_t e) {
        for (int64_t nc = b; nc < e; ++nc) {
          const int64_t ch = nc % c;
          const float* xp = px + nc * inner;
          float* yp = py + nc * inner;
          for (int64_t i = 0; i < inner; ++i) yp[i] = static_cast<float>((xp[i] - mean[ch]) * mul[ch] + add[ch]);
        }
      },
      parallel_grain(inner));
  return Status::ok();
}

}  // namespace steadyocr::reference

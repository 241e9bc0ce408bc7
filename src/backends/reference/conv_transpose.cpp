// ConvTranspose (NCHW; weights [C, M/group, kH, kW]) with groups, strides, dilations, pads, output_padding,
// bias and a fused activation. Each output channel scatters its inputs into a double-precision plane.
#include <algorithm>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {

Status conv_transpose_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::ConvTransposeAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::ConvTransposeAttrs>();
  const Tensor& x = *in[0];
  const Tensor& wt = *in[1];
  const Tensor* bias = in.size() > 2 && in[2] && in[2]->defined() ? in[2] : nullptr;
  Tensor& y = out[0];
  if (x.rank() != 4 || wt.rank() != 4 || y.rank() != 4) {
    return unsupported(fmt::format("{}: only 2-D transposed convolution (rank-4 NCHW) is supported, got x {} w {}",
                                   node.describe(), x.describe(), wt.describe()));
  }
  const int64_t n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
  const int64_t group = a.group, mg = wt.dim(1), m = mg * group, kh = wt.dim(2), kw = wt.dim(3);
  const int64_t sh = a.strides[0], sw = a.strides[1], dh = a.dilations[0], dw = a.dilations[1];
  const int64_t pt = a.pads[0], pl = a.pads[1];
  if (group < 1 || c % group || wt.dim(0) != c || sh < 1 || sw < 1 || dh < 1 || dw < 1 ||
      (a.kernel[0] && a.kernel[0] != kh) || (a.kernel[1] && a.kernel[1] != kw)) {
    return invalid_argument(fmt::format("{}: x {} and weights {} do not fit group {} / kernel {}x{}", node.describe(),
                                        x.describe(), wt.describe(), group, a.kernel[0], a.kernel[1]));
  }
  const int64_t eh = (h - 1) * sh - pt - a.pads[2] + dh * (kh - 1) + a.output_padding[0] + 1;
  const int64_t ew = (w - 1) * sw - pl - a.pads[3] + dw * (kw - 1) + a.output_padding[1] + 1;
  if (y.dim(0) != n || y.dim(1) != m || y.dim(2) != eh || y.dim(3) != ew) {
    return invalid_argument(fmt::format("{}: output value is {} but x {} with weights {} gives [{},{},{},{}]",
                                        node.describe(), y.describe(), x.describe(), wt.describe(), n, m, eh, ew));
  }
  if (bias && (bias->dtype() != DType::kF32 || bias->numel() != m)) {
    return invalid_argument(
        fmt::format("{}: bias {} must be f32 with {} elements", node.describe(), bias->describe(), m));
  }
  const int64_t oh = eh, ow = ew, cg = c / group, plane = oh * ow;
  const float* px = x.data<float>();
  const float* pw = wt.data<float>();
  const float* pb = bias ? bias->data<float>() : nullptr;
  float* py = y.data<float>();
  parallel_for(
      n * m,
      [&](int64_t begin, int64_t end) {
        std::vector<double> acc(static_cast<size_t>(plane));
        for (int64_t nm = begin; nm < end; ++nm) {
          const int64_t img = nm / m, om = nm % m, gi = om / mg, mm = om % mg;
          std::fill(acc.begin(), acc.end(), pb ? static_cast<double>(pb[om]) : 0.0);
          for (int64_t ci = gi * cg; ci < (gi + 1) * cg; ++ci) {
            const float* xc = px + (img * c + ci) * h * w;
            for (int64_t i = 0; i < kh; ++i) {
              for (int64_t j = 0; j < kw; ++j) {
                const double wv = pw[((ci * mg + mm) * kh + i) * kw + j];
                const int64_t off_w = j * dw - pl;
                // Input columns whose output column lies inside [0, OW).
                int64_t lo = off_w >= 0 ? 0 : (-off_w + sw - 1) / sw;
                int64_t hi = ow - off_w > 0 ? (ow - off_w - 1) / sw + 1 : 0;
                lo = std::min(lo, w);
                hi = std::clamp(hi, lo, w);
                for (int64_t iy = 0; iy < h; ++iy) {
                  const int64_t oy = iy * sh - pt + i * dh;
                  if (oy < 0 || oy >= oh) continue;
                  double* ar = acc.data() + oy * ow + off_w;
                  const float* xr = xc + iy * w;
                  for (int64_t ix = lo; ix < hi; ++ix) ar[ix * sw] += wv * xr[ix];
                }
              }
            }
          }
          float* yp = py + nm * plane;
          for (int64_t q = 0; q < plane; ++q) yp[q] = a.act.apply(static_cast<float>(acc[q]));
        }
      },
      parallel_grain(cg * h * w * kh * kw));
  return Status::ok();
}

}  // namespace steadyocr::reference

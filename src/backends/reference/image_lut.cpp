// ImageLut (steadyocr's own op, graph/ir.h): a u8 NHWC picture through a per-channel table into f32 NCHW.
#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status image_lut_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kU8));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  const Tensor& lut = *in[1];
  Tensor& y = out[0];
  if (x.rank() != 4 || lut.rank() != 2 || lut.dim(0) != x.dim(3) || lut.dim(1) != 256 || y.rank() != 4 ||
      y.dim(0) != x.dim(0) || y.dim(1) != x.dim(3) || y.dim(2) != x.dim(1) || y.dim(3) != x.dim(2)) {
    return invalid_argument(fmt::format("{}: picture {}, table {}, output {}", node.describe(), x.describe(),
                                        lut.describe(), y.describe()));
  }
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), c = x.dim(3);
  const uint8_t* px = x.data<uint8_t>();
  const float* t = lut.data<float>();
  float* py = y.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      float* plane = py + (b * c + ch) * h * w;
      const float* row_t = t + ch * 256;
      const uint8_t* src = px + b * h * w * c + ch;
      for (int64_t i = 0; i < h * w; ++i) plane[i] = row_t[src[i * c]];
    }
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

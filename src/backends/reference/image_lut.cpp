// ImageLut (steadyocr's own op, graph/ir.h): a u8 NHWC picture through a per-channel table into f32 NCHW; a picture
// with one channel more than the table is masked (0 in the last channel: the pixel's values are 0).
#include "backends/reference/kernels.h"

namespace steadyocr::reference {

Status image_lut_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kU8));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& x = *in[0];
  const Tensor& lut = *in[1];
  Tensor& y = out[0];
  if (x.rank() != 4 || lut.rank() != 2 || (lut.dim(0) != x.dim(3) && lut.dim(0) + 1 != x.dim(3)) || lut.dim(1) != 256 ||
      y.rank() != 4 || y.dim(0) != x.dim(0) || y.dim(1) != lut.dim(0) || y.dim(2) != x.dim(1) || y.dim(3) != x.dim(2)) {
    return invalid_argument(fmt::format("{}: picture {}, table {}, output {}", node.describe(), x.describe(),
                                        lut.describe(), y.describe()));
  }
  const int64_t n = x.dim(0), h = x.dim(1), w = x.dim(2), cx = x.dim(3), c = lut.dim(0);
  const bool masked = cx > c;
  const uint8_t* px = x.data<uint8_t>();
  const float* t = lut.data<float>();
  float* py = y.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t ch = 0; ch < c; ++ch) {
      float* plane = py + (b * c + ch) * h * w;
      const float* row_t = t + ch * 256;
      const uint8_t* pixel = px + b * h * w * cx;
      for (int64_t i = 0; i < h * w; ++i) {
        plane[i] = masked && pixel[i * cx + c] == 0 ? 0.f : row_t[pixel[i * cx + ch]];
      }
    }
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

// ImageLut (steadyocr's own op, graph/ir.h; kernels/image.cu): the detector's input as the picture's bytes,
// normalised on the device through the host's table; a masked picture (one channel more than the table) zeroes the
// pixels whose last byte is 0.
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_image_lut(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* lut_v = n.input(1);
  if (!lut_v || !lut_v->is_constant()) return unsupported("ImageLut needs its table as a constant");
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), DType::kU8));
  ASSIGN_OR_RETURN(BufRef lut, b.weight(lut_v->constant, DType::kF32));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), DType::kF32));
  const Shape& table = lut_v->constant.shape();
  if (x.shape.size() != 4 || table.size() != 2 || table[0] < 1 || table[0] > 4 ||
      (x.shape[3] != table[0] && x.shape[3] != table[0] + 1)) {
    return invalid_argument(
        fmt::format("ImageLut needs a u8 [N, H, W, C<=4] picture (C + 1: masked) and an f32 [C, "
                    "256] table, got {} and {}",
                    shape_str(x.shape), shape_str(table)));
  }
  const int64_t batch = x.shape[0], c = table[0], hw = x.shape[1] * x.shape[2];
  const bool masked = x.shape[3] > c;
  struct Ptrs {
    const void* x = nullptr;
    const void* lut = nullptr;
    void* y = nullptr;
  };
  auto ptrs = std::make_shared<Ptrs>();
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref, lut}, std::vector<BufRef>{y.ref},
                 [ptrs, x, lut, y](const Bindings& bd) {
                   *ptrs = {bd.ptr(x.ref), bd.ptr(lut), bd.ptr(y.ref)};
                 },
                 [ptrs, batch, c, hw, masked](cudaStream_t s) {
                   return k::launch_image_lut(static_cast<const uint8_t*>(ptrs->x),
                                              static_cast<const float*>(ptrs->lut), static_cast<float*>(ptrs->y), batch,
                                              c, hw, masked, s);
                 }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

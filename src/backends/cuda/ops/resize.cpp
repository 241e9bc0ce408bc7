// Resize of the two trailing axes of NCHW (kernels/resize.cu), with the scales of the attributes when given
// (they drive the coordinate transform) and output/input otherwise.
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_resize(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ResizeAttrs>();
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  auto p = std::make_shared<k::ResizeParams>();
  p->dt = to_kdt(dt);
  p->nc = x.shape[0] * x.shape[1];
  p->in_h = static_cast<int>(x.shape[2]);
  p->in_w = static_cast<int>(x.shape[3]);
  p->out_h = static_cast<int>(y.shape[2]);
  p->out_w = static_cast<int>(y.shape[3]);
  if (a.scales.size() == 4) {
    p->scale_h = a.scales[2];
    p->scale_w = a.scales[3];
  } else {
    p->scale_h = static_cast<float>(p->out_h) / static_cast<float>(p->in_h);
    p->scale_w = static_cast<float>(p->out_w) / static_cast<float>(p->in_w);
  }
  if (!(p->scale_h > 0.f) || !(p->scale_w > 0.f)) return invalid_argument("Resize with non-positive scale");
  p->mode = a.mode == graph::ResizeMode::kLinear ? 1 : 0;
  switch (a.coord) {
    case graph::ResizeCoord::kHalfPixel:
      p->coord = 0;
      break;
    case graph::ResizeCoord::kAsymmetric:
      p->coord = 1;
      break;
    case graph::ResizeCoord::kAlignCorners:
      p->coord = 2;
      break;
    case graph::ResizeCoord::kPytorchHalfPixel:
      p->coord = 3;
      break;
  }
  p->nearest = static_cast<int>(a.nearest);
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [p, x, y](const Bindings& bd) {
                   p->x = bd.ptr(x.ref);
                   p->y = bd.ptr(y.ref);
                 },
                 [p](cudaStream_t s) { return k::launch_resize(*p, s); }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

// GlobalAveragePool, AveragePool and MaxPool on NCHW (kernels/pool.cu); the output size is the output Value's,
// so ceil_mode needs no handling here.
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_pool(PlanBuilder& b, const graph::Node& n) {
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  const int64_t nc = x.shape[0] * x.shape[1];
  if (n.op == graph::OpKind::kGlobalAveragePool) {
    const int64_t hw = x.shape[2] * x.shape[3];
    auto ptrs = std::make_shared<std::pair<const void*, void*>>();
    b.add_step(std::make_unique<KernelStep>(
                   std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                   [ptrs, x, y](const Bindings& bd) {
                     *ptrs = {bd.ptr(x.ref), bd.ptr(y.ref)};
                   },
                   [ptrs, dt, nc, hw](cudaStream_t s) {
                     return k::launch_global_avg_pool(ptrs->first, ptrs->second, to_kdt(dt), nc, hw, s);
                   }),
               &n);
    return Status::ok();
  }
  const auto& a = n.attr<graph::PoolAttrs>();
  auto p = std::make_shared<k::PoolParams>();
  p->dt = to_kdt(dt);
  p->nc = nc;
  p->in_h = static_cast<int>(x.shape[2]);
  p->in_w = static_cast<int>(x.shape[3]);
  p->out_h = static_cast<int>(y.shape[2]);
  p->out_w = static_cast<int>(y.shape[3]);
  p->kh = static_cast<int>(a.kernel[0]);
  p->kw = static_cast<int>(a.kernel[1]);
  p->sh = static_cast<int>(a.strides[0]);
  p->sw = static_cast<int>(a.strides[1]);
  p->pad_t = static_cast<int>(a.pads[0]);
  p->pad_l = static_cast<int>(a.pads[1]);
  p->pad_b = static_cast<int>(a.pads[2]);
  p->pad_r = static_cast<int>(a.pads[3]);
  p->is_max = n.op == graph::OpKind::kMaxPool;
  p->count_include_pad = a.count_include_pad;
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [p, x, y](const Bindings& bd) {
                   p->x = bd.ptr(x.ref);
                   p->y = bd.ptr(y.ref);
                 },
                 [p](cudaStream_t s) { return k::launch_pool(*p, s); }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

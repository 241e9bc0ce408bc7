// Cast: between float types it is a view (the plan's precision decides how floats are stored); to or from
// integers/bool it runs kernels/cast.cu.
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_cast(PlanBuilder& b, const graph::Node& n) {
  const DType to = n.attr<graph::CastAttrs>().to;
  ASSIGN_OR_RETURN(DevTensor x, b.input_any(n.input(0)));
  if (is_float_type(to) && is_float_type(x.dtype)) return b.alias(n.output(), x);
  if (to == x.dtype) return b.alias(n.output(), x);
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), to));
  const int64_t count = x.numel();
  auto ptrs = std::make_shared<std::pair<const void*, void*>>();
  const k::Dt sdt = to_kdt(x.dtype), ddt = to_kdt(to);
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [ptrs, x, y](const Bindings& bd) {
                   *ptrs = {bd.ptr(x.ref), bd.ptr(y.ref)};
                 },
                 [ptrs, sdt, ddt, count](cudaStream_t s) {
                   return k::launch_cast(ptrs->first, sdt, ptrs->second, ddt, count, s);
                 }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

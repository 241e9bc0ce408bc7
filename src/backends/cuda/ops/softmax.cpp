// Softmax (kernels/softmax.cu; opset < 13 flattens at `axis` and normalises over all trailing elements) and Top1
// (steadyocr's own op, graph/ir.h).
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_softmax(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::SoftmaxAttrs>();
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = 0;
  if (rank == 0 || !normalize_axis(a.axis, rank, &axis)) {
    return invalid_argument(fmt::format("axis {} out of range for {}", a.axis, shape_str(x.shape)));
  }
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[d];
  if (a.flatten_trailing) {
    for (int64_t d = axis; d < rank; ++d) len *= x.shape[d];
  } else {
    len = x.shape[axis];
    for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[d];
  }
  auto ptrs = std::make_shared<std::pair<const void*, void*>>();
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [ptrs, x, y](const Bindings& bd) {
                   *ptrs = {bd.ptr(x.ref), bd.ptr(y.ref)};
                 },
                 [ptrs, dt, outer, len, inner](cudaStream_t s) {
                   return k::launch_softmax(ptrs->first, ptrs->second, to_kdt(dt), outer, len, inner, s);
                 }),
             &n);
  return Status::ok();
}

Status build_top1(PlanBuilder& b, const graph::Node& n) {
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), DType::kF32));
  if (x.shape.empty() || x.shape.back() <= 0) return invalid_argument("Top1 needs a non-empty last axis");
  const int64_t len = x.shape.back();
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < x.shape.size(); ++d) rows *= x.shape[d];
  auto ptrs = std::make_shared<std::pair<const void*, void*>>();
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [ptrs, x, y](const Bindings& bd) {
                   *ptrs = {bd.ptr(x.ref), bd.ptr(y.ref)};
                 },
                 [ptrs, dt, rows, len](cudaStream_t s) {
                   return k::launch_top1(ptrs->first, static_cast<float*>(ptrs->second), to_kdt(dt), rows, len, s);
                 }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

// Slice as a strided copy (ONNX semantics: negative indices count from the end, clamped per step direction).
#include <fmt/format.h>

#include <algorithm>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_slice(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::SliceAttrs>();
  ASSIGN_OR_RETURN(DevTensor x, b.input_any(n.input(0)));
  const DType dt = is_float_type(x.dtype) ? b.compute_type(n) : x.dtype;
  if (dt != x.dtype) {
    ASSIGN_OR_RETURN(x, b.input(n.input(0), dt));
  }
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  for (size_t i = 0; i < a.starts.size(); ++i) {
    int64_t ax = a.axes.empty() ? static_cast<int64_t>(i) : a.axes[i];
    if (!normalize_axis(ax, rank, &ax)) return invalid_argument(fmt::format("Slice axis {} out of range", ax));
    const int64_t dim = x.shape[ax];
    const int64_t st = a.steps.empty() ? 1 : a.steps[i];
    if (st == 0) return invalid_argument("Slice step 0");
    int64_t s = a.starts[i];
    if (s < 0) s += dim;
    s = st > 0 ? std::clamp<int64_t>(s, 0, dim) : std::clamp<int64_t>(s, 0, dim - 1);
    start[ax] = s;
    step[ax] = st;
  }
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  std::vector<int64_t> xs = shape_strides(x.shape);
  CopyStep::View v;
  v.src = x.ref;
  v.dst = y.ref;
  v.shape = y.shape;
  v.dst_strides = shape_strides(y.shape);
  int64_t off = 0;
  for (int64_t d = 0; d < rank; ++d) {
    off += start[d] * xs[d];
    v.src_strides.push_back(step[d] * xs[d]);
  }
  v.src_offset_elems = static_cast<size_t>(off);
  auto s = std::make_unique<CopyStep>(static_cast<int>(dtype_size(dt)));
  s->add(std::move(v));
  b.add_step(std::move(s), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

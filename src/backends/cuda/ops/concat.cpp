// Concat: each input is copied into its slab of the output (kernels/copy.cu), in one step.
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_concat(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::AxisAttrs>();
  const graph::Value* yv = n.output();
  const int64_t rank = static_cast<int64_t>(yv->shape.size());
  int64_t axis = 0;
  if (rank == 0 || !normalize_axis(a.axis, rank, &axis)) return invalid_argument("Concat axis out of range");
  DType dt = yv->dtype;
  if (is_float_type(dt)) dt = b.compute_type(n);
  std::vector<DevTensor> ins;
  for (const graph::Value* v : n.inputs) {
    if (!v) continue;
    ASSIGN_OR_RETURN(DevTensor t, b.input(v, dt));
    ins.push_back(t);
  }
  ASSIGN_OR_RETURN(DevTensor y, b.output(yv, dt));
  std::vector<int64_t> ys = shape_strides(y.shape);
  auto step = std::make_unique<CopyStep>(static_cast<int>(dtype_size(dt)));
  int64_t at = 0;
  for (const DevTensor& t : ins) {
    if (static_cast<int64_t>(t.shape.size()) != rank) return invalid_argument("Concat inputs differ in rank");
    CopyStep::View v;
    v.src = t.ref;
    v.dst = y.ref;
    v.shape = t.shape;
    v.src_strides = shape_strides(t.shape);
    v.dst_strides = ys;
    v.dst_offset_elems = static_cast<size_t>(at * ys[axis]);
    at += t.shape[axis];
    step->add(std::move(v));
  }
  if (at != y.shape[axis]) {
    return invalid_argument(fmt::format("Concat inputs give {} along axis {}, output has {}", at, axis, y.shape[axis]));
  }
  b.add_step(std::move(step), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

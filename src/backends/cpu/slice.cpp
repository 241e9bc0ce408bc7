// Slice (ONNX semantics: negative indices, clamping, negative steps; bounds from the attributes or from
// constant inputs 1-4) as a strided copy of any dtype.
#include <fmt/format.h>

#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

Result<std::vector<int64_t>> optional_ints(const graph::Node& n, size_t i) {
  const graph::Value* v = n.input(i);
  if (!v) return std::vector<int64_t>{};
  if (!v->is_constant()) return unsupported(fmt::format("Slice input {} must be constant", i));
  return v->constant.to_int64s();
}

}  // namespace

Status build_slice(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y) return invalid_argument("Slice needs an input");
  const auto& a = n.attr<graph::SliceAttrs>();
  std::vector<int64_t> starts = a.starts, ends = a.ends, axes = a.axes, steps = a.steps;
  if (starts.empty() && ends.empty()) {
    ASSIGN_OR_RETURN(starts, optional_ints(n, 1));
    ASSIGN_OR_RETURN(ends, optional_ints(n, 2));
    ASSIGN_OR_RETURN(axes, optional_ints(n, 3));
    ASSIGN_OR_RETURN(steps, optional_ints(n, 4));
  }
  const Shape& xs = x->shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  if (starts.size() != ends.size()) return invalid_argument("Slice starts and ends differ in length");
  if (axes.empty()) {
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (axes.size() != starts.size() || steps.size() != starts.size()) {
    return invalid_argument("Slice starts/ends/axes/steps lengths differ");
  }
  std::vector<int64_t> begin(rank, 0), step(rank, 1);
  Shape count = xs;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t ax = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (ax < 0 || ax >= rank) return invalid_argument(fmt::format("Slice axis {} out of range", axes[i]));
    const int64_t dim = xs[ax], st = steps[i];
    if (st == 0) return invalid_argument("Slice step 0");
    int64_t s = starts[i] < 0 ? starts[i] + dim : starts[i];
    int64_t e = ends[i] < 0 ? ends[i] + dim : ends[i];
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
    }
    int64_t cnt = st > 0 ? (e - s + st - 1) / st : (s - e - st - 1) / (-st);
    begin[ax] = s;
    step[ax] = st;
    count[ax] = std::max<int64_t>(cnt, 0);
  }
  if (count != y->shape) {
    return invalid_argument(
        fmt::format("Slice of {} gives {} but the output is {}", shape_str(xs), shape_str(count), shape_str(y->shape)));
  }
  std::vector<int64_t> st = shape_strides(xs), src_strides(rank);
  int64_t offset = 0;
  for (int64_t d = 0; d < rank; ++d) {
    offset += begin[d] * st[d];
    src_strides[d] = st[d] * step[d];
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(x->dtype, y->shape, x->dtype == DType::kF32 ? plain_md(y->shape) : Md(), y->name);
  if (shape_numel(y->shape) > 0) {
    b.add_step(make_strided_copy_op(in, out, src_strides, std::vector<int64_t>(count.begin(), count.end()), offset,
                                    dtype_size(x->dtype), "slice " + shape_str(xs) + "->" + shape_str(count)),
               {in}, {out}, &n);
  }
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

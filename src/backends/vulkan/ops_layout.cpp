// The Vulkan backend's layout ops: strided copies (copy.comp) for Concat, Transpose and Slice, views for Reshape-like
// ops, Cast (cast.comp) and Shape (a constant of the plan).
#include <fmt/format.h>

#include <algorithm>

#include "backends/vulkan/ops_util.h"

namespace steadyocr::vk {

std::vector<int64_t> strides_of(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int d = static_cast<int>(s.size()) - 2; d >= 0; --d) st[d] = st[d + 1] * s[d + 1];
  return st;
}

namespace {

// A strided copy (copy.comp) of elements of `dt`: dims, source strides and destination strides in elements. The
// shader moves 32-bit words (8-byte elements are two), or 16-bit ones for the fp16 values of a vulkan-fp16 plan.
void add_copy(PlanBuilder& b, const graph::Node& n, int src, int dst, Shape dims, std::vector<int64_t> in_strides,
              std::vector<int64_t> out_strides, int64_t in_base, int64_t out_base, DType dt) {
  const size_t bytes = b.element_bytes(dt);
  const bool words = bytes != 2;
  const size_t elem_words = bytes == 8 ? 2 : 1;
  if (elem_words == 2) {  // 8-byte elements: one more axis of two words
    for (auto& s : in_strides) s *= 2;
    for (auto& s : out_strides) s *= 2;
    dims.push_back(2);
    in_strides.push_back(1);
    out_strides.push_back(1);
    in_base *= 2;
    out_base *= 2;
  }
  // Merge axes that are contiguous in both (fewer index divisions), keeping at most 8.
  Shape md;
  std::vector<int64_t> mi, mo;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 1) continue;
    if (!md.empty() && mi.back() == in_strides[d] * dims[d] && mo.back() == out_strides[d] * dims[d]) {
      md.back() *= dims[d];
      mi.back() = in_strides[d];
      mo.back() = out_strides[d];
    } else {
      md.push_back(dims[d]);
      mi.push_back(in_strides[d]);
      mo.push_back(out_strides[d]);
    }
  }
  if (md.empty()) {
    md = {1};
    mi = {1};
    mo = {1};
  }
  const int64_t count = shape_numel(md);
  std::vector<uint32_t> p(28, 0);
  p[0] = u32(count);
  p[1] = u32(md.size());
  p[2] = u32(in_base);
  p[3] = u32(out_base);
  for (size_t d = 0; d < md.size(); ++d) {
    p[4 + d] = u32(md[d]);
    p[12 + d] = static_cast<uint32_t>(static_cast<int32_t>(mi[d]));
    p[20 + d] = u32(mo[d]);
  }
  b.add_1d(Shader::kCopy, std::move(p), {src, dst}, static_cast<uint64_t>(count), n, words);
}

}  // namespace

Status build_view(PlanBuilder& b, const graph::Node& n) {
  ASSIGN_OR_RETURN(int x, b.in(n.input(0)));
  b.view(n.output(), x);
  return Status::ok();
}

namespace {
uint32_t cast_type(DType t) {
  switch (t) {
    case DType::kF32:
      return 0;
    case DType::kI32:
      return 1;
    case DType::kI64:
      return 2;
    case DType::kU8:
      return 3;
    default:
      return 4;  // kBool
  }
}

}  // namespace

bool castable(DType t) {
  return t == DType::kF32 || t == DType::kI32 || t == DType::kI64 || t == DType::kU8 || t == DType::kBool;
}

Status build_cast(PlanBuilder& b, const graph::Node& n) {
  const DType from = n.input(0)->dtype, to = n.output()->dtype;
  if (from == to) return build_view(b, n);
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  const int64_t count = shape_numel(n.output()->shape);
  const bool bytes_out = to == DType::kU8 || to == DType::kBool;
  const uint64_t invocations = bytes_out ? static_cast<uint64_t>((count + 3) / 4) : static_cast<uint64_t>(count);
  b.add_1d(Shader::kCast, {u32(count), cast_type(from), cast_type(to)}, {xi, yi}, invocations, n, true);
  return Status::ok();
}

// Shape: the input's shape is known when planning, so the output is a constant of the plan.
Status build_shape(PlanBuilder& b, const graph::Node& n) {
  const Shape& xs = n.input(0)->shape;
  const graph::Value* y = n.output();
  if (y->dtype != DType::kI64 || shape_numel(y->shape) != static_cast<int64_t>(xs.size())) {
    return invalid_argument(
        fmt::format("output {} {} for an input of rank {}", dtype_name(y->dtype), shape_str(y->shape), xs.size()));
  }
  Tensor t = Tensor::empty(DType::kI64, y->shape);
  for (size_t d = 0; d < xs.size(); ++d) t.data<int64_t>()[d] = xs[d];
  return b.constant(y, t);
}

Status build_concat(PlanBuilder& b, const graph::Node& n) {
  const Shape& ys = n.output()->shape;
  int64_t axis;
  if (!normalize_axis(n.attr<graph::AxisAttrs>().axis, static_cast<int64_t>(ys.size()), &axis)) {
    return invalid_argument("axis out of range");
  }
  const int yi = b.out(n.output());
  const std::vector<int64_t> ost = strides_of(ys);
  int64_t at = 0;
  for (const graph::Value* v : n.inputs) {
    if (!v) continue;
    ASSIGN_OR_RETURN(int xi, b.in(v));
    if (shape_numel(v->shape) > 0) {
      add_copy(b, n, xi, yi, v->shape, strides_of(v->shape), ost, 0, at * ost[static_cast<size_t>(axis)],
               n.output()->dtype);
    }
    at += v->shape[static_cast<size_t>(axis)];
  }
  return Status::ok();
}

Status build_transpose(PlanBuilder& b, const graph::Node& n) {
  const Shape& xs = n.input(0)->shape;
  std::vector<int64_t> perm = n.attr<graph::TransposeAttrs>().perm;
  if (perm.empty()) {
    for (int64_t d = static_cast<int64_t>(xs.size()) - 1; d >= 0; --d) perm.push_back(d);
  }
  if (perm.size() != xs.size()) return invalid_argument("perm of another rank");
  const std::vector<int64_t> ist = strides_of(xs);
  Shape dims;
  std::vector<int64_t> in_st;
  for (int64_t p : perm) {
    if (p < 0 || p >= static_cast<int64_t>(xs.size())) return invalid_argument("perm out of range");
    dims.push_back(xs[static_cast<size_t>(p)]);
    in_st.push_back(ist[static_cast<size_t>(p)]);
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  add_copy(b, n, xi, yi, dims, in_st, strides_of(dims), 0, 0, n.output()->dtype);
  return Status::ok();
}

Status build_slice(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::SliceAttrs>();
  const Shape& xs = n.input(0)->shape;
  const Shape& ys = n.output()->shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<int64_t> start(xs.size(), 0), step(xs.size(), 1);
  for (size_t i = 0; i < a.starts.size(); ++i) {
    int64_t axis = a.axes.empty() ? static_cast<int64_t>(i) : a.axes[i];
    if (!normalize_axis(axis, rank, &axis)) return invalid_argument("slice axis out of range");
    const int64_t len = xs[static_cast<size_t>(axis)];
    const int64_t st = i < a.steps.size() ? a.steps[i] : 1;
    if (st == 0) return invalid_argument("slice step 0");
    int64_t s = a.starts[i];
    if (s < 0) s += len;
    s = st > 0 ? std::clamp<int64_t>(s, 0, len) : std::clamp<int64_t>(s, 0, len - 1);
    start[static_cast<size_t>(axis)] = s;
    step[static_cast<size_t>(axis)] = st;
  }
  const std::vector<int64_t> ist = strides_of(xs);
  std::vector<int64_t> in_st(xs.size());
  int64_t base = 0;
  for (size_t d = 0; d < xs.size(); ++d) {
    in_st[d] = ist[d] * step[d];
    base += start[d] * ist[d];
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  if (shape_numel(ys) > 0) add_copy(b, n, xi, yi, ys, in_st, strides_of(ys), base, 0, n.output()->dtype);
  return Status::ok();
}

}  // namespace steadyocr::vk

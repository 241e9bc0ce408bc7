#include "graph/shape_inference.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace steadyocr::graph {
namespace {

template <typename... A>
Status fail(const Node& n, fmt::format_string<A...> f, A&&... a) {
  return invalid_argument(fmt::format("{}: {}", n.describe(), fmt::format(f, std::forward<A>(a)...)));
}

Status need_inputs(const Node& n, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (!n.input(i)) return fail(n, "input {} is missing", i);
  }
  if (n.outputs.empty() || !n.output(0)) return fail(n, "has no output");
  return Status::ok();
}

void set_out(Node& n, Shape shape, DType dtype) {
  n.output(0)->shape = std::move(shape);
  n.output(0)->dtype = dtype;
}

// Normalises an axis into [0, rank); false when out of range.
bool norm_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return false;
  *out = axis;
  return true;
}

// Arithmetic on dims for the rules below: static dims fold; with a symbol table, symbols give symbols (and what the
// rule needs of them is recorded as an assumption); without one a symbol counts as unknown.
struct DimMath {
  SymbolTable* t = nullptr;

  bool any_unknown(std::initializer_list<int64_t> ds) const {
    for (int64_t d : ds) {
      if (d == kUnknownDim || (is_symbolic(d) && !t)) return true;
    }
    return false;
  }
  int64_t add_const(int64_t a, int64_t c) const {
    return any_unknown({a}) ? kUnknownDim : (t ? t->add_const(a, c) : a + c);
  }
  int64_t add(int64_t a, int64_t b) const { return any_unknown({a, b}) ? kUnknownDim : (t ? t->add(a, b) : a + b); }
  int64_t mul(int64_t a, int64_t b) const { return any_unknown({a, b}) ? kUnknownDim : (t ? t->mul(a, b) : a * b); }
  int64_t mul_const(int64_t a, int64_t c) const {
    return any_unknown({a}) ? kUnknownDim : (t ? t->mul_const(a, c) : a * c);
  }
  int64_t floor_div_const(int64_t a, int64_t c) const {
    return any_unknown({a}) ? kUnknownDim : (t ? t->floor_div_const(a, c) : a / c);
  }
  int64_t floor_div(int64_t a, int64_t b) const {
    return any_unknown({a, b}) ? kUnknownDim : (t ? t->floor_div(a, b) : a / b);
  }
  int64_t min(int64_t a, int64_t b) const {
    return any_unknown({a, b}) ? kUnknownDim : (t ? t->min(a, b) : std::min(a, b));
  }
  int64_t max(int64_t a, int64_t b) const {
    return any_unknown({a, b}) ? kUnknownDim : (t ? t->max(a, b) : std::max(a, b));
  }
  int64_t sub(int64_t a, int64_t b) const { return any_unknown({a, b}) ? kUnknownDim : (t ? t->sub(a, b) : a - b); }
  // Two dims that must be equal: false when both are static and differ. The known one wins (a static one over a
  // symbol, which is then assumed equal to it).
  bool merge(int64_t a, int64_t b, int64_t* out) const {
    if (a == b || b == kUnknownDim) {
      *out = a;
      return true;
    }
    if (a == kUnknownDim) {
      *out = b;
      return true;
    }
    if (a >= 0 && b >= 0) return false;
    if (!t) {
      *out = a >= 0 ? a : (b >= 0 ? b : kUnknownDim);
      return true;
    }
    t->assume_equal(a, b);
    *out = a >= 0 ? a : (b >= 0 ? b : a);
    return true;
  }
};

Status broadcast(const Node& n, const Shape& a, const Shape& b, Shape* out, const DimMath& m) {
  size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    int64_t r;
    if (da == 1) {
      r = db;
    } else if (db == 1) {
      r = da;
    } else if (da == db) {
      r = da;
    } else if (da == kUnknownDim || db == kUnknownDim) {
      // An unknown dim must be 1 or the other's size: the other's when static, else unknown.
      r = da >= 0 ? da : (db >= 0 ? db : kUnknownDim);
    } else if (da < 0 || db < 0) {
      // A symbol against another dim: the two are equal for the shapes the model takes (a symbol of size 1 at run
      // time would broadcast instead; the assumption sends such a shape down the plain path).
      m.merge(da, db, &r);
    } else {
      return fail(n, "cannot broadcast {} with {}", shape_str(a), shape_str(b));
    }
    (*out)[i] = r;
  }
  return Status::ok();
}

Status infer_binary(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 2));
  const Value* a = n.input(0);
  const Value* b = n.input(1);
  if (n.op != OpKind::kPow && a->dtype != b->dtype) {
    return fail(n, "operand types differ: '{}' is {}, '{}' is {}", a->name, dtype_name(a->dtype), b->name,
                dtype_name(b->dtype));
  }
  Shape s;
  RETURN_IF_ERROR(broadcast(n, a->shape, b->shape, &s, m));
  set_out(n, std::move(s), a->dtype);
  return Status::ok();
}

// One spatial output size for a window of `eff` (dilated kernel) with the given padding and stride.
Status window_out(const Node& n, const Shape& x, int i, int64_t eff, int64_t pad_total, int64_t stride, bool ceil_mode,
                  int64_t pad_begin, int64_t* out, const DimMath& m) {
  int64_t in = x[2 + i];
  if (in < 0) {
    // (in + pads - eff) / stride + 1; in ceil mode also no window starting in the end padding (below), which is
    // the smaller of the two counts.
    const int64_t span = m.add_const(in, pad_total - eff);
    if (m.t) m.t->assume_at_least(span, 0);  // the static rule's "input too small"
    if (!ceil_mode) {
      *out = m.add_const(m.floor_div_const(span, stride), 1);
    } else {
      *out = m.min(m.add_const(m.floor_div_const(m.add_const(span, stride - 1), stride), 1),
                   m.add_const(m.floor_div_const(m.add_const(in, pad_begin - 1), stride), 1));
    }
    return Status::ok();
  }
  int64_t span = in + pad_total - eff;
  if (span < 0) {
    return fail(n, "input {} is too small in dimension {} for a window of {} with padding {}", shape_str(x), 2 + i, eff,
                pad_total);
  }
  int64_t o = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  // A ceil-mode window that starts inside the end padding is dropped (ONNX Runtime / PyTorch rule).
  if (ceil_mode && (o - 1) * stride >= in + pad_begin) --o;
  *out = o;
  return Status::ok();
}

Status infer_conv(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 2));
  const auto& a = n.attr<ConvAttrs>();
  const Shape& x = n.input(0)->shape;
  const Shape& w = n.input(1)->shape;
  if (x.size() != 4) return fail(n, "expects a 4-D input [N,C,H,W], got {}", shape_str(x));
  if (w.size() != 4) return fail(n, "expects a 4-D weight [M,C/group,kH,kW], got {}", shape_str(w));
  if (a.group < 1) return fail(n, "group {} must be at least 1", a.group);
  if (x[1] >= 0 && w[1] >= 0 && x[1] != w[1] * a.group) {
    return fail(n, "input {} has {} channels but the weight {} with group {} expects {}", shape_str(x), x[1],
                shape_str(w), a.group, w[1] * a.group);
  }
  if (w[0] >= 0 && w[0] % a.group != 0) {
    return fail(n, "weight {} has {} output channels, not divisible by group {}", shape_str(w), w[0], a.group);
  }
  for (int i = 0; i < 2; ++i) {
    if (w[2 + i] >= 0 && w[2 + i] != a.kernel[i]) {
      return fail(n, "kernel [{},{}] disagrees with the weight {}", a.kernel[0], a.kernel[1], shape_str(w));
    }
  }
  if (const Value* b = n.input(2)) {
    if (b->shape.size() != 1 || (b->shape[0] >= 0 && w[0] >= 0 && b->shape[0] != w[0])) {
      return fail(n, "bias {} does not match {} output channels", shape_str(b->shape), w[0]);
    }
  }
  Shape out = {x[0], w[0], -1, -1};
  for (int i = 0; i < 2; ++i) {
    int64_t eff = a.dilations[i] * (a.kernel[i] - 1) + 1;
    RETURN_IF_ERROR(
        window_out(n, x, i, eff, a.pads[i] + a.pads[i + 2], a.strides[i], false, a.pads[i], &out[2 + i], m));
  }
  if (const Value* r = n.input(3)) {
    if (r->shape.size() != 4)
      return fail(n, "residual {} must match the output {}", shape_str(r->shape), shape_str(out));
    for (size_t i = 0; i < 4; ++i) {
      if (!m.merge(out[i], r->shape[i], &out[i])) {
        return fail(n, "residual {} does not match the output {}", shape_str(r->shape), shape_str(out));
      }
    }
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_conv_transpose(Node& n, const DimMath& dm) {
  RETURN_IF_ERROR(need_inputs(n, 2));
  const auto& a = n.attr<ConvTransposeAttrs>();
  const Shape& x = n.input(0)->shape;
  const Shape& w = n.input(1)->shape;
  if (x.size() != 4) return fail(n, "expects a 4-D input [N,C,H,W], got {}", shape_str(x));
  if (w.size() != 4) return fail(n, "expects a 4-D weight [C,M/group,kH,kW], got {}", shape_str(w));
  if (a.group < 1) return fail(n, "group {} must be at least 1", a.group);
  if (x[1] >= 0 && w[0] >= 0 && x[1] != w[0]) {
    return fail(n, "input {} has {} channels but the weight {} expects {}", shape_str(x), x[1], shape_str(w), w[0]);
  }
  int64_t m = w[1] >= 0 ? w[1] * a.group : -1;
  if (const Value* b = n.input(2)) {
    if (b->shape.size() != 1 || (b->shape[0] >= 0 && m >= 0 && b->shape[0] != m)) {
      return fail(n, "bias {} does not match {} output channels", shape_str(b->shape), m);
    }
  }
  Shape out = {x[0], m, -1, -1};
  for (int i = 0; i < 2; ++i) {
    int64_t eff = a.dilations[i] * (a.kernel[i] - 1) + 1;
    if (x[2 + i] < 0) {  // stride * (x - 1) + output padding + eff - pads
      out[2 + i] = dm.add_const(dm.mul_const(x[2 + i], a.strides[i]),
                                a.output_padding[i] + eff - a.pads[i] - a.pads[i + 2] - a.strides[i]);
      continue;
    }
    int64_t o = a.strides[i] * (x[2 + i] - 1) + a.output_padding[i] + eff - a.pads[i] - a.pads[i + 2];
    if (o <= 0) return fail(n, "output size {} in dimension {} is not positive for input {}", o, 2 + i, shape_str(x));
    out[2 + i] = o;
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_batchnorm(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 5));
  const Shape& x = n.input(0)->shape;
  if (x.size() < 2) return fail(n, "expects an input of rank >= 2, got {}", shape_str(x));
  for (size_t i = 1; i < 5; ++i) {
    const Shape& p = n.input(i)->shape;
    int64_t c = shape_numel(p);
    if (p.size() != 1 || (c >= 0 && x[1] >= 0 && c != x[1])) {
      return fail(n, "parameter '{}' {} does not match {} channels of input {}", n.input(i)->name, shape_str(p), x[1],
                  shape_str(x));
    }
  }
  set_out(n, x, n.input(0)->dtype);
  return Status::ok();
}

Status infer_same(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  set_out(n, n.input(0)->shape, n.input(0)->dtype);
  return Status::ok();
}

Status infer_global_pool(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  Shape s = n.input(0)->shape;
  if (s.size() < 3) return fail(n, "expects an input of rank >= 3, got {}", shape_str(s));
  for (size_t i = 2; i < s.size(); ++i) s[i] = 1;
  set_out(n, std::move(s), n.input(0)->dtype);
  return Status::ok();
}

Status infer_pool(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const auto& a = n.attr<PoolAttrs>();
  const Shape& x = n.input(0)->shape;
  if (x.size() != 4) return fail(n, "expects a 4-D input [N,C,H,W], got {}", shape_str(x));
  Shape out = {x[0], x[1], -1, -1};
  for (int i = 0; i < 2; ++i) {
    if (a.pads[i] >= a.kernel[i] || a.pads[i + 2] >= a.kernel[i]) {
      return fail(n, "padding {} is not smaller than the kernel {}", a.pads[i], a.kernel[i]);
    }
    RETURN_IF_ERROR(window_out(n, x, i, a.kernel[i], a.pads[i] + a.pads[i + 2], a.strides[i], a.ceil_mode, a.pads[i],
                               &out[2 + i], m));
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_resize(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const auto& a = n.attr<ResizeAttrs>();
  const Shape& x = n.input(0)->shape;
  Shape out(x.size(), -1);
  if (!a.sizes.empty()) {
    if (a.sizes.size() != x.size()) return fail(n, "sizes has {} values for input {}", a.sizes.size(), shape_str(x));
    out = a.sizes;
  } else {
    if (a.scales.size() != x.size()) {
      return fail(n, "scales has {} values for input {}", a.scales.size(), shape_str(x));
    }
    for (size_t i = 0; i < x.size(); ++i) {
      if (!(a.scales[i] > 0.f)) return fail(n, "scale {} on axis {} is not positive", a.scales[i], i);
      if (x[i] < 0) {
        out[i] = is_symbolic(x[i]) && m.t ? m.t->floor_scale(x[i], a.scales[i]) : kUnknownDim;
        continue;
      }
      // A scale from the file can ask for any size; past 2^40 the float-to-integer conversion would be undefined
      // long before (found by fuzz_onnx).
      const double scaled = std::floor(static_cast<double>(x[i]) * a.scales[i]);
      if (!(scaled <= static_cast<double>(int64_t{1} << 40))) {
        return fail(n, "scale {} on axis {} makes the output {} elements long", a.scales[i], i, scaled);
      }
      out[i] = static_cast<int64_t>(scaled);
    }
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == 0 && (x[i] != 0)) return fail(n, "output {} is empty for input {}", shape_str(out), shape_str(x));
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_concat(Node& n, const DimMath& m) {
  if (n.inputs.empty()) return fail(n, "has no inputs");
  RETURN_IF_ERROR(need_inputs(n, n.inputs.size()));
  const Shape& first = n.input(0)->shape;
  int64_t rank = static_cast<int64_t>(first.size()), axis;
  if (!norm_axis(n.attr<AxisAttrs>().axis, rank, &axis)) {
    return fail(n, "axis {} is out of range for rank {}", n.attr<AxisAttrs>().axis, rank);
  }
  Shape out = first;
  for (size_t k = 1; k < n.inputs.size(); ++k) {
    const Value* v = n.input(k);
    if (v->dtype != n.input(0)->dtype) {
      return fail(n, "input '{}' is {} but input '{}' is {}", v->name, dtype_name(v->dtype), n.input(0)->name,
                  dtype_name(n.input(0)->dtype));
    }
    if (static_cast<int64_t>(v->shape.size()) != rank) {
      return fail(n, "inputs have different ranks: {} and {}", shape_str(first), shape_str(v->shape));
    }
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = v->shape[static_cast<size_t>(i)];
      if (i == axis) {
        out[static_cast<size_t>(i)] = m.add(out[static_cast<size_t>(i)], d);
      } else if (!m.merge(out[static_cast<size_t>(i)], d, &out[static_cast<size_t>(i)])) {
        return fail(n, "inputs {} and {} differ outside axis {}", shape_str(first), shape_str(v->shape), axis);
      }
    }
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

// The product of `ds` as a constant and the symbols that multiply it (a symbol's own products decomposed), or false
// when one is unknown.
bool product_factors(const std::vector<int64_t>& ds, const DimMath& m, int64_t* constant, std::vector<int64_t>* syms) {
  *constant = 1;
  for (int64_t d : ds) {
    if (d == kUnknownDim || (is_symbolic(d) && !m.t)) return false;
    if (!is_symbolic(d)) {
      *constant *= d;
    } else {
      int64_t c = 1;
      m.t->factors(d, &c, syms);
      *constant *= c;
    }
  }
  return true;
}

int64_t product_dim(int64_t constant, const std::vector<int64_t>& syms, const DimMath& m) {
  int64_t p = constant;
  for (int64_t s : syms) p = m.mul(p, s);
  return p;
}

Status infer_reshape(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const auto& a = n.attr<ReshapeAttrs>();
  const Shape& x = n.input(0)->shape;
  std::vector<int64_t> target;
  // Symbols come from symbolic specialisation (shape data, or the attribute it wrote); a file's constant cannot hold
  // one (the import rejects attributes below -1, since it infers without a symbol table).
  bool symbols_allowed = n.input(1) == nullptr || n.input(1)->has_shape_data;
  if (const Value* s = n.input(1)) {
    if (s->has_shape_data) {
      target = s->shape_data;  // its symbols are dims; a -1 there is the literal "infer this one"
    } else if (!s->is_constant()) {
      // Rank is known from the shape tensor's length; sizes only once specialisation folds it.
      if (s->shape.size() != 1 || s->shape[0] < 0) {
        return fail(n, "shape input '{}' {} must be a 1-D tensor of known length", s->name, shape_str(s->shape));
      }
      set_out(n, Shape(static_cast<size_t>(s->shape[0]), -1), n.input(0)->dtype);
      return Status::ok();
    } else {
      target = s->constant.to_int64s();
    }
  } else {
    target = a.shape;
  }
  Shape out(target.size(), -1);
  int infer_at = -1;
  // What is not copied (0) and not inferred (-1), on both sides: its element counts must agree.
  std::vector<int64_t> rest_in, rest_out;
  std::vector<bool> copied(x.size(), false);
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == 0 && !a.allowzero) {
      if (i >= x.size()) return fail(n, "target {} copies dim {} of the rank-{} input", shape_str(target), i, x.size());
      out[i] = x[i];
      copied[i] = true;
    } else if (t == -1) {
      if (infer_at >= 0) return fail(n, "target {} has more than one -1", shape_str(target));
      infer_at = static_cast<int>(i);
    } else if (is_symbolic(t) && m.t && symbols_allowed && m.t->contains(t)) {
      out[i] = t;
      rest_out.push_back(t);
    } else if (t < 0) {
      return fail(n, "target {} has an invalid dimension {}", shape_str(target), t);
    } else {
      out[i] = t;
      rest_out.push_back(t);
    }
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (!copied[i]) rest_in.push_back(x[i]);
  }
  int64_t c_in = 1, c_out = 1;
  std::vector<int64_t> s_in, s_out;
  const bool in_known = product_factors(rest_in, m, &c_in, &s_in);
  if (!in_known || !product_factors(rest_out, m, &c_out, &s_out)) {
    set_out(n, std::move(out), n.input(0)->dtype);  // the inferred dim (if any) stays unknown
    return Status::ok();
  }
  for (auto it = s_out.begin(); it != s_out.end();) {  // a symbol on both sides cancels
    auto found = std::find(s_in.begin(), s_in.end(), *it);
    if (found == s_in.end()) {
      ++it;
    } else {
      s_in.erase(found);
      it = s_out.erase(it);
    }
  }
  if (infer_at >= 0) {
    int64_t d;
    if (s_in.empty() && s_out.empty()) {
      if (c_out == 0 || c_in % c_out != 0) return fail(n, "cannot reshape {} into {}", shape_str(x), shape_str(target));
      d = c_in / c_out;
    } else if (s_out.empty() && c_out != 0 && c_in % c_out == 0) {
      d = product_dim(c_in / c_out, s_in, m);
    } else {
      const int64_t num = product_dim(c_in, s_in, m), den = product_dim(c_out, s_out, m);
      m.t->assume_divisible(num, den);
      d = m.floor_div(num, den);
    }
    out[static_cast<size_t>(infer_at)] = d;
  } else if (s_in.empty() && s_out.empty()) {
    if (c_in != c_out) {
      return fail(n, "cannot reshape {} ({} elements) into {}", shape_str(x), shape_numel(x), shape_str(target));
    }
  } else {
    m.t->assume_equal(product_dim(c_in, s_in, m), product_dim(c_out, s_out, m));
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_transpose(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const Shape& x = n.input(0)->shape;
  std::vector<int64_t> perm = n.attr<TransposeAttrs>().perm;
  if (perm.empty()) {
    for (size_t i = x.size(); i-- > 0;) perm.push_back(static_cast<int64_t>(i));
  }
  if (perm.size() != x.size()) return fail(n, "perm has {} entries for input {}", perm.size(), shape_str(x));
  std::vector<bool> seen(x.size(), false);
  Shape out(x.size());
  for (size_t i = 0; i < perm.size(); ++i) {
    int64_t p = perm[i];
    if (p < 0 || p >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(p)]) {
      return fail(n, "perm [{}] is not a permutation of {} axes", fmt::join(perm, ","), x.size());
    }
    seen[static_cast<size_t>(p)] = true;
    out[i] = x[static_cast<size_t>(p)];
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_matmul(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 2));
  Shape a = n.input(0)->shape, b = n.input(1)->shape;
  if (n.input(0)->dtype != n.input(1)->dtype) {
    return fail(n, "operand types differ: {} and {}", dtype_name(n.input(0)->dtype), dtype_name(n.input(1)->dtype));
  }
  if (a.empty() || b.empty()) return fail(n, "operands {} and {} must have rank >= 1", shape_str(a), shape_str(b));
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  int64_t k;
  if (!m.merge(a.back(), b[b.size() - 2], &k)) {
    return fail(n, "inner dimensions differ: {} x {}", shape_str(n.input(0)->shape), shape_str(n.input(1)->shape));
  }
  Shape batch;
  RETURN_IF_ERROR(broadcast(n, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2), &batch, m));
  Shape out = batch;
  if (!a_vec) out.push_back(a[a.size() - 2]);
  if (!b_vec) out.push_back(b.back());
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_softmax(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  int64_t axis;
  const Shape& x = n.input(0)->shape;
  if (!norm_axis(n.attr<SoftmaxAttrs>().axis, static_cast<int64_t>(x.size()), &axis)) {
    return fail(n, "axis {} is out of range for input {}", n.attr<SoftmaxAttrs>().axis, shape_str(x));
  }
  return infer_same(n);
}

Status infer_reduce_mean(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const auto& a = n.attr<ReduceAttrs>();
  const Shape& x = n.input(0)->shape;
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<bool> reduce(x.size(), a.axes.empty());
  for (int64_t ax : a.axes) {
    int64_t k;
    if (!norm_axis(ax, rank, &k)) return fail(n, "axis {} is out of range for input {}", ax, shape_str(x));
    reduce[static_cast<size_t>(k)] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduce[i]) {
      out.push_back(x[i]);
    } else if (a.keepdims) {
      out.push_back(1);
    }
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_squeeze(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const Shape& x = n.input(0)->shape;
  const auto& axes = n.attr<AxesAttrs>().axes;
  std::vector<bool> drop(x.size(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.size(); ++i) {
      if (x[i] < 0) return fail(n, "has no axes and input {} has unknown dims", shape_str(x));
      drop[i] = x[i] == 1;
    }
  }
  for (int64_t ax : axes) {
    int64_t k;
    if (!norm_axis(ax, static_cast<int64_t>(x.size()), &k)) {
      return fail(n, "axis {} is out of range for input {}", ax, shape_str(x));
    }
    if (x[static_cast<size_t>(k)] > 1 || x[static_cast<size_t>(k)] == 0) {
      return fail(n, "cannot squeeze axis {} of size {} in {}", ax, x[static_cast<size_t>(k)], shape_str(x));
    }
    if (is_symbolic(x[static_cast<size_t>(k)]) && m.t) m.t->assume_equal(x[static_cast<size_t>(k)], 1);
    drop[static_cast<size_t>(k)] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!drop[i]) out.push_back(x[i]);
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_unsqueeze(Node& n) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const Shape& x = n.input(0)->shape;
  const auto& axes = n.attr<AxesAttrs>().axes;
  const int64_t rank = static_cast<int64_t>(x.size() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(rank), false);
  for (int64_t ax : axes) {
    int64_t k;
    if (!norm_axis(ax, rank, &k) || inserted[static_cast<size_t>(k)]) {
      return fail(n, "axes [{}] are invalid for input {}", fmt::join(axes, ","), shape_str(x));
    }
    inserted[static_cast<size_t>(k)] = true;
  }
  Shape out;
  size_t j = 0;
  for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : x[j++]);
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

// ONNX Slice clamping for one axis of known size.
int64_t slice_len(int64_t dim, int64_t start, int64_t end, int64_t step) {
  auto clamp = [](int64_t v, int64_t lo, int64_t hi) { return std::min(std::max(v, lo), hi); };
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  if (step > 0) {
    start = clamp(start, 0, dim);
    end = clamp(end, 0, dim);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = clamp(start, 0, dim - 1);
  end = clamp(end, -1, dim - 1);
  return start > end ? (start - end + (-step) - 1) / (-step) : 0;
}

// The length of a slice of a symbolic dim: start and end clamped as ONNX does, with the dim an expression.
int64_t slice_len_symbolic(int64_t dim, int64_t start, int64_t end, int64_t step, const DimMath& m) {
  if (step <= 0 || !m.t) return kUnknownDim;    // reversed slices of symbolic dims: not needed by any model seen
  constexpr int64_t kToEnd = int64_t{1} << 40;  // exporters write INT64_MAX or INT32_MAX for "to the end"
  auto bound = [&](int64_t v) {
    if (v >= kToEnd) return dim;
    if (v >= 0) return m.min(v, dim);
    return m.max(m.add_const(dim, v), 0);  // dim + v, clamped at 0
  };
  const int64_t b = bound(start), e = bound(end);
  const int64_t span = m.max(m.sub(e, b), 0);
  return step == 1 ? span : m.floor_div_const(m.add_const(span, step - 1), step);
}

Status infer_slice(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 1));
  const auto& a = n.attr<SliceAttrs>();
  const Shape& x = n.input(0)->shape;
  if (a.starts.size() != a.ends.size() || a.axes.size() != a.starts.size() ||
      (!a.steps.empty() && a.steps.size() != a.starts.size())) {
    return fail(n, "starts/ends/axes/steps differ in length");
  }
  Shape out = x;
  std::vector<bool> seen(x.size(), false);
  for (size_t i = 0; i < a.starts.size(); ++i) {
    int64_t axis;
    if (!norm_axis(a.axes[i], static_cast<int64_t>(x.size()), &axis) || seen[static_cast<size_t>(axis)]) {
      return fail(n, "axis {} is out of range or repeated for input {}", a.axes[i], shape_str(x));
    }
    seen[static_cast<size_t>(axis)] = true;
    int64_t step = a.steps.empty() ? 1 : a.steps[i];
    if (step == 0) return fail(n, "step 0 on axis {}", a.axes[i]);
    int64_t d = x[static_cast<size_t>(axis)];
    if (is_symbolic(d)) {
      out[static_cast<size_t>(axis)] = slice_len_symbolic(d, a.starts[i], a.ends[i], step, m);
    } else {
      out[static_cast<size_t>(axis)] = d < 0 ? -1 : slice_len(d, a.starts[i], a.ends[i], step);
    }
  }
  set_out(n, std::move(out), n.input(0)->dtype);
  return Status::ok();
}

Status infer_layer_norm(Node& n, const DimMath& m) {
  RETURN_IF_ERROR(need_inputs(n, 2));
  const Shape& x = n.input(0)->shape;
  int64_t axis;
  if (!norm_axis(n.attr<LayerNormAttrs>().axis, static_cast<int64_t>(x.size()), &axis)) {
    return fail(n, "axis {} is out of range for input {}", n.attr<LayerNormAttrs>().axis, shape_str(x));
  }
  Shape norm(x.begin() + axis, x.end());
  for (size_t k = 1; k < 3; ++k) {
    const Value* p = n.input(k);
    if (!p) continue;
    int64_t want = shape_numel(norm), have = shape_numel(p->shape);
    if (want >= 0 && have >= 0 && want != have) {
      return fail(n, "'{}' {} does not match the normalised dims {} of input {}", p->name, shape_str(p->shape),
                  shape_str(norm), shape_str(x));
    }
    // On symbols: a normalised dim a scale or bias spans (not 1) must be that size, or the scale does not broadcast
    // to it (an input shape that breaks this then fails the symbols' evaluation, and the plain path names it).
    if (m.t && want < 0 && p->shape.size() <= norm.size()) {
      for (size_t d = 0; d < p->shape.size(); ++d) {
        const int64_t pd = p->shape[d], nd = norm[norm.size() - p->shape.size() + d];
        if (pd > 1 && is_symbolic(nd)) m.t->assume_equal(nd, pd);
      }
    }
  }
  return infer_same(n);
}

}  // namespace

Status infer_node(Node& node, SymbolTable* symbols) {
  if (node.outputs.empty() || !node.output(0)) return fail(node, "has no output");
  const DimMath m{symbols};
  try {
    switch (node.op) {
      case OpKind::kConv:
        return infer_conv(node, m);
      case OpKind::kConvTranspose:
        return infer_conv_transpose(node, m);
      case OpKind::kBatchNorm:
        return infer_batchnorm(node);
      case OpKind::kAdd:
      case OpKind::kSub:
      case OpKind::kMul:
      case OpKind::kDiv:
      case OpKind::kPow:
        return infer_binary(node, m);
      case OpKind::kSqrt:
      case OpKind::kRelu:
      case OpKind::kSigmoid:
      case OpKind::kHardSigmoid:
      case OpKind::kHardSwish:
      case OpKind::kClip:
      case OpKind::kIdentity:
        return infer_same(node);
      case OpKind::kGlobalAveragePool:
        return infer_global_pool(node);
      case OpKind::kAveragePool:
      case OpKind::kMaxPool:
        return infer_pool(node, m);
      case OpKind::kResize:
        return infer_resize(node, m);
      case OpKind::kConcat:
        return infer_concat(node, m);
      case OpKind::kReshape:
        return infer_reshape(node, m);
      case OpKind::kTranspose:
        return infer_transpose(node);
      case OpKind::kMatMul:
        return infer_matmul(node, m);
      case OpKind::kSoftmax:
        return infer_softmax(node);
      case OpKind::kReduceMean:
        return infer_reduce_mean(node);
      case OpKind::kSqueeze:
        return infer_squeeze(node, m);
      case OpKind::kUnsqueeze:
        return infer_unsqueeze(node);
      case OpKind::kShape:
        RETURN_IF_ERROR(need_inputs(node, 1));
        set_out(node, {static_cast<int64_t>(node.input(0)->shape.size())}, DType::kI64);
        return Status::ok();
      case OpKind::kCast:
        RETURN_IF_ERROR(need_inputs(node, 1));
        set_out(node, node.input(0)->shape, node.attr<CastAttrs>().to);
        return Status::ok();
      case OpKind::kSlice:
        return infer_slice(node, m);
      case OpKind::kLayerNorm:
        return infer_layer_norm(node, m);
      case OpKind::kTop1: {
        RETURN_IF_ERROR(need_inputs(node, 1));
        Shape s = node.input(0)->shape;
        if (s.empty()) return fail(node, "needs an input of rank >= 1");
        if (s.back() == 0) return fail(node, "has an empty last axis (no largest value)");
        s.back() = 2;
        set_out(node, std::move(s), DType::kF32);
        return Status::ok();
      }
      case OpKind::kImageLut: {
        RETURN_IF_ERROR(need_inputs(node, 2));
        const Value* x = node.input(0);
        const Value* lut = node.input(1);
        if (x->dtype != DType::kU8 || x->shape.size() != 4) return fail(node, "needs a u8 [N, H, W, C] picture");
        if (lut->dtype != DType::kF32 || lut->shape.size() != 2 || lut->shape[1] != 256 ||
            (x->shape[3] >= 0 && lut->shape[0] != x->shape[3] && lut->shape[0] + 1 != x->shape[3])) {
          return fail(node,
                      "needs an f32 [C, 256] table, one row per channel of the picture (C + 1 channels: the last a "
                      "mask)");
        }
        set_out(node, {x->shape[0], lut->shape[0], x->shape[1], x->shape[2]}, DType::kF32);
        return Status::ok();
      }
      case OpKind::kCount:
        break;
    }
  } catch (const std::bad_variant_access&) {
    return fail(node, "carries attributes of the wrong kind for its op");
  }
  return fail(node, "has no shape inference rule");
}

Status infer_shapes(Graph& graph) {
  RETURN_IF_ERROR(graph.toposort());
  for (const auto& n : graph.nodes()) RETURN_IF_ERROR(infer_node(*n, graph.symbols()));
  return Status::ok();
}

}  // namespace steadyocr::graph

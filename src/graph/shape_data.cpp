#include "graph/shape_data.h"

#include <algorithm>
#include <optional>

namespace steadyocr::graph {
namespace {

using Data = std::vector<int64_t>;

bool is_integer(DType t) {
  return t == DType::kI64 || t == DType::kI32;
}

// The elements of `v` as dims, when known: its shape data, or a small integer constant (of values >= -1).
std::optional<Data> data_of(const Value* v) {
  if (!v) return std::nullopt;
  if (v->has_shape_data) return v->shape_data;
  if (!v->is_constant() || !is_integer(v->dtype) || v->constant.rank() > 1 || v->constant.numel() > 64) {
    return std::nullopt;
  }
  Data d = v->constant.to_int64s();
  if (std::any_of(d.begin(), d.end(), [](int64_t x) { return x < -1; })) return std::nullopt;
  return d;
}

std::optional<Data> slice(const Node& n, const Data& x) {
  const auto& a = n.attr<SliceAttrs>();
  if (a.starts.size() != 1 || (!a.axes.empty() && a.axes[0] != 0 && a.axes[0] != -1)) return std::nullopt;
  const int64_t dim = static_cast<int64_t>(x.size());
  int64_t start = a.starts[0], end = a.ends[0], step = a.steps.empty() ? 1 : a.steps[0];
  if (step <= 0) return std::nullopt;
  if (start < 0) start += dim;
  if (end < 0) end += dim;
  start = std::clamp<int64_t>(start, 0, dim);
  end = std::clamp<int64_t>(end, 0, dim);
  Data out;
  for (int64_t i = start; i < end; i += step) out.push_back(x[static_cast<size_t>(i)]);
  return out;
}

std::optional<Data> arithmetic(OpKind op, const Data& a, const Data& b, SymbolTable& t) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1) return std::nullopt;
  const size_t n = std::max(a.size(), b.size());
  Data out(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t x = a[a.size() == 1 ? 0 : i], y = b[b.size() == 1 ? 0 : i];
    if (x == kUnknownDim || y == kUnknownDim) return std::nullopt;  // the literal -1 of a Reshape target
    int64_t r = kUnknownDim;
    switch (op) {
      case OpKind::kAdd:
        r = t.add(x, y);
        break;
      case OpKind::kSub:
        r = t.sub(x, y);
        break;
      case OpKind::kMul:
        r = t.mul(x, y);
        break;
      case OpKind::kDiv:
        r = t.floor_div(x, y);  // dims are not negative: ONNX's truncation is the floor
        break;
      default:
        return std::nullopt;
    }
    if (r == kUnknownDim) return std::nullopt;
    out[i] = r;
  }
  return out;
}

}  // namespace

bool propagate_shape_data(Node& n, SymbolTable& t) {
  Value* out = n.output();
  if (!out || out->is_constant() || n.outputs.size() != 1) return false;
  std::optional<Data> d;
  switch (n.op) {
    case OpKind::kShape: {
      const Value* x = n.input(0);
      if (x && is_resolved(x->shape)) d = x->shape;
      break;
    }
    case OpKind::kCast:
      if (is_integer(n.attr<CastAttrs>().to)) d = data_of(n.input(0));
      break;
    case OpKind::kIdentity:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      if (out->shape.size() <= 1) d = data_of(n.input(0));
      break;
    case OpKind::kReshape:
      if (out->shape.size() <= 1 && n.inputs.size() == 1) d = data_of(n.input(0));
      break;
    case OpKind::kSlice:
      if (auto x = data_of(n.input(0)); x && n.input(0)->shape.size() == 1) d = slice(n, *x);
      break;
    case OpKind::kConcat: {
      if (out->shape.size() != 1) break;
      Data all;
      bool ok = true;
      for (const Value* in : n.inputs) {
        auto x = data_of(in);
        if (!x) {
          ok = false;
          break;
        }
        all.insert(all.end(), x->begin(), x->end());
      }
      if (ok) d = std::move(all);
      break;
    }
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv: {
      if (!is_integer(out->dtype) || out->shape.size() > 1) break;
      auto a = data_of(n.input(0)), b = data_of(n.input(1));
      if (a && b && (n.input(0)->has_shape_data || n.input(1)->has_shape_data)) d = arithmetic(n.op, *a, *b, t);
      break;
    }
    default:
      break;
  }
  if (!d || (out->has_shape_data && out->shape_data == *d)) return false;
  // A tensor whose length disagrees with its inferred shape is left alone (inference reports it).
  if (!out->shape.empty() && out->shape[0] >= 0 && static_cast<size_t>(out->shape[0]) != d->size()) return false;
  if (out->shape.empty() && d->size() != 1) return false;
  out->shape_data = std::move(*d);
  out->has_shape_data = true;
  return true;
}

}  // namespace steadyocr::graph

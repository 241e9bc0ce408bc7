// Reshape/Squeeze/Unsqueeze/Identity as views of a plain buffer (no copy), Shape, and Cast.
#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

class WriteConstantOp : public CpuOp {
 public:
  WriteConstantOp(int out, std::vector<int64_t> values) : out_(out), values_(std::move(values)) {}
  Status run(RunContext& ctx) override {
    std::memcpy(ctx.ptr(out_), values_.data(), values_.size() * sizeof(int64_t));
    return Status::ok();
  }
  std::string describe() const override { return "shape"; }

 private:
  int out_;
  std::vector<int64_t> values_;
};

template <typename To, typename From>
To convert(From v) {
  if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (std::is_floating_point_v<From> && !std::is_floating_point_v<To>) {
    // Truncate toward zero; NaN and out-of-range values saturate instead of being undefined.
    if (std::isnan(v)) return To(0);
    double d = std::trunc(static_cast<double>(v));
    if (d <= static_cast<double>(std::numeric_limits<To>::lowest())) return std::numeric_limits<To>::lowest();
    if (d >= static_cast<double>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
    return static_cast<To>(d);
  } else {
    return static_cast<To>(v);
  }
}

template <typename To>
void cast_from(DType from, const void* src, To* dst, int64_t n) {
  switch (from) {
    case DType::kF32:
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(static_cast<const float*>(src)[i]);
      break;
    case DType::kI64:
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(static_cast<const int64_t*>(src)[i]);
      break;
    case DType::kI32:
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(static_cast<const int32_t*>(src)[i]);
      break;
    case DType::kU8:
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(static_cast<const uint8_t*>(src)[i]);
      break;
    case DType::kBool:
      for (int64_t i = 0; i < n; ++i) dst[i] = convert<To>(static_cast<const bool*>(src)[i]);
      break;
    default:
      break;
  }
}

bool castable(DType t) {
  return t == DType::kF32 || t == DType::kI64 || t == DType::kI32 || t == DType::kU8 || t == DType::kBool;
}

class CastOp : public CpuOp {
 public:
  CastOp(int in, int out, DType from, DType to, int64_t n) : in_(in), out_(out), from_(from), to_(to), n_(n) {}
  Status run(RunContext& ctx) override {
    const void* s = ctx.ptr(in_);
    void* d = ctx.ptr(out_);
    if (from_ == to_) {
      std::memcpy(d, s, static_cast<size_t>(n_) * dtype_size(from_));
      return Status::ok();
    }
    switch (to_) {
      case DType::kF32:
        cast_from(from_, s, static_cast<float*>(d), n_);
        break;
      case DType::kI64:
        cast_from(from_, s, static_cast<int64_t*>(d), n_);
        break;
      case DType::kI32:
        cast_from(from_, s, static_cast<int32_t*>(d), n_);
        break;
      case DType::kU8:
        cast_from(from_, s, static_cast<uint8_t*>(d), n_);
        break;
      case DType::kBool:
        cast_from(from_, s, static_cast<bool*>(d), n_);
        break;
      default:
        return unsupported("Cast target type");
    }
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("cast {}->{}", dtype_name(from_), dtype_name(to_)); }

 private:
  int in_, out_;
  DType from_, to_;
  int64_t n_;
};

}  // namespace

Status build_view(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y) return invalid_argument("reshape-like op needs an input");
  if (shape_numel(x->shape) != shape_numel(y->shape) || x->dtype != y->dtype) {
    return invalid_argument(fmt::format("cannot view {} as {}", shape_str(x->shape), shape_str(y->shape)));
  }
  ASSIGN_OR_RETURN(int h, b.home(x));
  // Identity keeps whatever layout the input has; the others need row-major bytes.
  if (n.op == graph::OpKind::kIdentity && x->shape == y->shape) {
    b.set_home(y, h);
    return Status::ok();
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int view = b.new_view(in, y->shape, y->name);
  b.set_home(y, view);
  return Status::ok();
}

Status build_shape(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y || y->dtype != DType::kI64) return invalid_argument("Shape needs an input and an i64 output");
  std::vector<int64_t> values(x->shape.begin(), x->shape.end());
  if (static_cast<int64_t>(values.size()) != shape_numel(y->shape)) {
    // opset 15 start/end attributes are not in the IR; the output value's length says which part.
    return unsupported("Shape with start/end is not supported");
  }
  int out = b.new_buffer(DType::kI64, y->shape, Md(), y->name);
  b.add_step(std::make_unique<WriteConstantOp>(out, values), {}, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

Status build_cast(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y) return invalid_argument("Cast needs an input");
  const DType to = n.attr<graph::CastAttrs>().to;
  if (!castable(x->dtype) || !castable(to)) {
    return unsupported(fmt::format("Cast {} -> {} is not supported", dtype_name(x->dtype), dtype_name(to)));
  }
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(to, y->shape, to == DType::kF32 ? plain_md(y->shape) : Md(), y->name);
  if (shape_numel(y->shape) > 0) {
    b.add_step(std::make_unique<CastOp>(in, out, x->dtype, to, shape_numel(y->shape)), {in}, {out}, &n);
  }
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

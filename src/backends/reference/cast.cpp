// Cast between f32, i64, i32, u8 and bool (ONNX semantics: float -> int truncates toward zero,
// anything -> bool is `!= 0`). Out-of-range and NaN floats saturate instead of invoking UB.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "backends/reference/kernels.h"

namespace steadyocr::reference {
namespace {

bool castable(DType t) {
  return t == DType::kF32 || t == DType::kI64 || t == DType::kI32 || t == DType::kU8 || t == DType::kBool;
}

// Reads element i of `t` as double (exact for every castable type except i64 beyond 2^53).
double read_f(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.data<float>()[i];
    case DType::kI32:
      return t.data<int32_t>()[i];
    case DType::kU8:
    case DType::kBool:
      return t.data<uint8_t>()[i];
    case DType::kI64:
      return static_cast<double>(t.data<int64_t>()[i]);
    default:
      return 0;
  }
}

template <typename I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (v >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(v);
}

}  // namespace

Status cast_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_present(node, in, 0));
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (!castable(x.dtype()) || !castable(y.dtype())) {
    return unsupported(fmt::format("{}: cast {} -> {} is not supported (f32, i64, i32, u8, bool only)", node.describe(),
                                   dtype_name(x.dtype()), dtype_name(y.dtype())));
  }
  if (x.numel() != y.numel()) {
    return invalid_argument(
        fmt::format("{}: input {} and output {} differ in size", node.describe(), x.describe(), y.describe()));
  }
  const int64_t n = x.numel();
  if (x.dtype() == y.dtype()) {
    if (n) std::memcpy(y.raw(), x.raw(), x.nbytes());
    return Status::ok();
  }
  // i64 -> i32 is the only integer path where going through double could lose bits we care about.
  if (x.dtype() == DType::kI64) {
    const int64_t* src = x.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = src[i];
      switch (y.dtype()) {
        case DType::kF32:
          y.data<float>()[i] = static_cast<float>(v);
          break;
        case DType::kI32:
          y.data<int32_t>()[i] = static_cast<int32_t>(
              std::clamp<int64_t>(v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
          break;
        case DType::kU8:
          y.data<uint8_t>()[i] = static_cast<uint8_t>(std::clamp<int64_t>(v, 0, 255));
          break;
        case DType::kBool:
          y.data<uint8_t>()[i] = v != 0;
          break;
        default:
          break;
      }
    }
    return Status::ok();
  }
  for (int64_t i = 0; i < n; ++i) {
    double v = read_f(x, i);
    switch (y.dtype()) {
      case DType::kF32:
        y.data<float>()[i] = static_cast<float>(v);
        break;
      case DType::kI64:
        y.data<int64_t>()[i] = saturate<int64_t>(v);
        break;
      case DType::kI32:
        y.data<int32_t>()[i] = saturate<int32_t>(v);
        break;
      case DType::kU8:
        y.data<uint8_t>()[i] = saturate<uint8_t>(v);
        break;
      case DType::kBool:
        y.data<uint8_t>()[i] = v != 0;
        break;
      default:
        break;
    }
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

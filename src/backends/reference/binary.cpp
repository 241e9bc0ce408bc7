// Add, Sub, Mul, Div, Pow with NumPy broadcasting. f32 for all; i64 and i32 for Add/Sub/Mul/Div (shape
// arithmetic; Div truncates toward zero like C, division by zero is an error). Pow accepts an integer
// exponent tensor with an f32 base.
#include <cmath>
#include <type_traits>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

using graph::OpKind;

// Axes merged where both operands walk them the same way, so the innermost loop is as long as possible.
struct Plan {
  std::vector<int64_t> size, sa, sb;  // outer axes first; the last entry is the inner loop
};

Plan coalesce(const Shape& out, const std::vector<int64_t>& sa, const std::vector<int64_t>& sb) {
  Plan p;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    if (!p.size.empty()) {
      int64_t n = out[d];
      if (p.sa.back() == sa[d] * n && p.sb.back() == sb[d] * n) {
        p.size.back() *= n;
        p.sa.back() = sa[d];
        p.sb.back() = sb[d];
        continue;
      }
    }
    p.size.push_back(out[d]);
    p.sa.push_back(sa[d]);
    p.sb.push_back(sb[d]);
  }
  if (p.size.empty()) {
    p.size = {1};
    p.sa = {0};
    p.sb = {0};
  }
  return p;
}

template <typename T, typename F>
void run_plan(const Plan& p, const T* a, const T* b, T* y, F f) {
  const int outer_rank = static_cast<int>(p.size.size()) - 1;
  const int64_t inner = p.size.back(), ia = p.sa.back(), ib = p.sb.back();
  int64_t outer = 1;
  for (int d = 0; d < outer_rank; ++d) outer *= p.size[d];
  auto rows = [&](int64_t begin, int64_t end) {
    // Offsets of row `begin`, then advanced like an odometer.
    std::vector<int64_t> idx(outer_rank);
    int64_t oa = 0, ob = 0, rem = begin;
    for (int d = outer_rank - 1; d >= 0; --d) {
      idx[d] = rem % p.size[d];
      rem /= p.size[d];
      oa += idx[d] * p.sa[d];
      ob += idx[d] * p.sb[d];
    }
    for (int64_t r = begin; r < end; ++r) {
      const T* pa = a + oa;
      const T* pb = b + ob;
      T* py = y + r * inner;
      if (ia == 1 && ib == 1) {
        for (int64_t j = 0; j < inner; ++j) py[j] = f(pa[j], pb[j]);
      } else if (ia == 1 && ib == 0) {
        const T vb = pb[0];
        for (int64_t j = 0; j < inner; ++j) py[j] = f(pa[j], vb);
      } else if (ia == 0 && ib == 1) {
        const T va = pa[0];
        for (int64_t j = 0; j < inner; ++j) py[j] = f(va, pb[j]);
      } else {
        for (int64_t j = 0; j < inner; ++j) py[j] = f(pa[j * ia], pb[j * ib]);
      }
      for (int d = outer_rank - 1; d >= 0; --d) {
        oa += p.sa[d];
        ob += p.sb[d];
        if (++idx[d] < p.size[d]) break;
        oa -= p.sa[d] * p.size[d];
        ob -= p.sb[d] * p.size[d];
        idx[d] = 0;
      }
    }
  };
  parallel_for(outer, rows, parallel_grain(inner));
}

template <typename T>
Status run_typed(const graph::Node& node, const Plan& p, const Tensor& a, const Tensor& b, Tensor& y) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* py = y.data<T>();
  switch (node.op) {
    case OpKind::kAdd:
      if constexpr (std::is_integral_v<T>) {
        // Wrapping arithmetic: signed overflow would be undefined behaviour.
        run_plan(p, pa, pb, py, [](T u, T v) { return static_cast<T>(static_cast<uint64_t>(u) + v); });
      } else {
        run_plan(p, pa, pb, py, [](T u, T v) { return u + v; });
      }
      return Status::ok();
    case OpKind::kSub:
      if constexpr (std::is_integral_v<T>) {
        run_plan(p, pa, pb, py, [](T u, T v) { return static_cast<T>(static_cast<uint64_t>(u) - v); });
      } else {
        run_plan(p, pa, pb, py, [](T u, T v) { return u - v; });
      }
      return Status::ok();
    case OpKind::kMul:
      if constexpr (std::is_integral_v<T>) {
        run_plan(p, pa, pb, py, [](T u, T v) { return static_cast<T>(static_cast<uint64_t>(u) * v); });
      } else {
        run_plan(p, pa, pb, py, [](T u, T v) { return u * v; });
      }
      return Status::ok();
    case OpKind::kDiv:
      if constexpr (std::is_integral_v<T>) {
        for (int64_t i = 0; i < b.numel(); ++i) {
          if (pb[i] == 0) return invalid_argument(fmt::format("{}: integer division by zero", node.describe()));
        }
        run_plan(p, pa, pb, py, [](T u, T v) {
          // INT_MIN / -1 overflows; wrap it like the other integer ops.
          return v == -1 ? static_cast<T>(0 - static_cast<uint64_t>(u)) : static_cast<T>(u / v);
        });
      } else {
        run_plan(p, pa, pb, py, [](T u, T v) { return u / v; });
      }
      return Status::ok();
    case OpKind::kPow:
      if constexpr (std::is_floating_point_v<T>) {
        run_plan(p, pa, pb, py, [](T u, T v) { return v == T(2) ? u * u : std::pow(u, v); });
        return Status::ok();
      }
      break;
    default:
      break;
  }
  return unsupported(
      fmt::format("{}: not supported for {} in the reference backend", node.describe(), dtype_name(y.dtype())));
}

}  // namespace

Status binary_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_present(node, in, 0));
  RETURN_IF_ERROR(require_present(node, in, 1));
  const Tensor& a = *in[0];
  Tensor b_conv;
  const Tensor* b = in[1];
  Tensor& y = out[0];
  if (node.op == OpKind::kPow && a.dtype() == DType::kF32 && b->dtype() != DType::kF32) {
    b_conv = Tensor::from_floats(b->shape(), b->to_floats());
    b = &b_conv;
  }
  if (a.dtype() != b->dtype() || a.dtype() != y.dtype()) {
    return invalid_argument(fmt::format("{}: operand dtypes differ ({} and {} into {})", node.describe(), a.describe(),
                                        b->describe(), y.describe()));
  }
  std::vector<int64_t> sa, sb;
  if (!broadcast_strides(a.shape(), y.shape(), &sa) || !broadcast_strides(b->shape(), y.shape(), &sb)) {
    return invalid_argument(fmt::format("{}: {} and {} do not broadcast to the output {}", node.describe(),
                                        a.describe(), b->describe(), y.describe()));
  }
  if (y.numel() == 0) return Status::ok();
  Plan p = coalesce(y.shape(), sa, sb);
  switch (y.dtype()) {
    case DType::kF32:
      return run_typed<float>(node, p, a, *b, y);
    case DType::kI64:
      return run_typed<int64_t>(node, p, a, *b, y);
    case DType::kI32:
      return run_typed<int32_t>(node, p, a, *b, y);
    default:
      return unsupported(fmt::format("{}: dtype {} is not supported by the reference backend", node.describe(),
                                     dtype_name(y.dtype())));
  }
}

}  // namespace steadyocr::reference

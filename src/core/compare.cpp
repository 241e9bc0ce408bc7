#include "core/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace steadyocr {

std::string Comparison::describe() const {
  return fmt::format("nmse={:.3g} max_abs_diff={:.3g} non_finite={} shape_match={}", nmse, max_abs_diff, non_finite,
                     shape_match);
}

Comparison compare_tensors(const Tensor& actual, const Tensor& expected) {
  if (actual.shape() != expected.shape()) {
    Comparison c;
    c.shape_match = false;
    c.nmse = INFINITY;
    return c;
  }
  return compare_floats(actual.to_floats(), expected.to_floats());
}

Comparison compare_floats(const std::vector<float>& a, const std::vector<float>& b) {
  Comparison c;
  if (a.size() != b.size()) {
    c.shape_match = false;
    c.nmse = INFINITY;
    return c;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    c.max_abs_expected = std::max(c.max_abs_expected, std::abs(static_cast<double>(b[i])));
    if (!std::isfinite(a[i])) {
      ++c.non_finite;
      continue;
    }
    double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
    c.max_abs_diff = std::max(c.max_abs_diff, std::abs(d));
  }
  c.nmse = c.non_finite ? INFINITY : nmse_from_sums(num, den);
  return c;
}

double nmse_from_sums(double sum_sq_diff, double sum_sq_expected) {
  return sum_sq_diff / std::max(sum_sq_expected, 1e-30);
}

}  // namespace steadyocr

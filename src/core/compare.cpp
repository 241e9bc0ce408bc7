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
  Comparison c;
  if (actual.shape() != expected.shape()) {
    c.shape_match = false;
    c.nmse = INFINITY;
    return c;
  }
  std::vector<float> a = actual.to_floats(), b = expected.to_floats();
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
  c.nmse = c.non_finite ? INFINITY : num / std::max(den, 1e-30);
  return c;
}

}  // namespace steadyocr

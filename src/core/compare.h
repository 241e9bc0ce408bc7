// Numerical comparison of a tensor with an expected one: the one definition of NMSE used by the tests, the
// engine's self-test, the doctor and `run-model --compare`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace steadyocr {

struct Comparison {
  double nmse = 0;  // sum((a-b)^2) / max(sum(b^2), 1e-30); infinite on a shape mismatch or a non-finite value
  double max_abs_diff = 0;
  double max_abs_expected = 0;  // how large the expected values are (NMSE means little when they are all ~0)
  int64_t non_finite = 0;       // NaN/Inf in `actual`
  bool shape_match = true;
  // Same shape, all finite and NMSE at most `limit`.
  bool within(double limit) const { return shape_match && non_finite == 0 && nmse <= limit; }
  std::string describe() const;
};

// Compares any numeric tensors (converted to float); `expected` is the reference.
Comparison compare_tensors(const Tensor& actual, const Tensor& expected);
// The same for float arrays; a length mismatch counts as a shape mismatch.
Comparison compare_floats(const std::vector<float>& actual, const std::vector<float>& expected);
// NMSE from its two sums (for callers that accumulate them elsewhere, e.g. on a device):
// sum_sq_diff / max(sum_sq_expected, 1e-30).
double nmse_from_sums(double sum_sq_diff, double sum_sq_expected);

}  // namespace steadyocr

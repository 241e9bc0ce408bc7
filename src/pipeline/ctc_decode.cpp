#include "pipeline/ctc_decode.h"

#include <utility>

namespace steadyocr::pipeline {
namespace {

// Greedy CTC over `steps` steps, `top(t)` giving step t's most likely class and its probability.
template <typename Top>
RecText decode_steps(int steps, const Dictionary& dict, Top top) {
  RecText out;
  double sum = 0;
  int kept = 0;
  int prev = -1;
  for (int t = 0; t < steps; ++t) {
    const auto [best, p] = top(t);
    if (best != 0 && best != prev) {
      if (best > 0 && best < dict.num_classes()) out.text += dict.text_of(best);
      sum += p;
      ++kept;
    }
    prev = best;
  }
  out.score = kept > 0 ? static_cast<float>(sum / kept) : 0.f;
  return out;
}

}  // namespace

RecText ctc_greedy_decode(const float* probs, int steps, int classes, const Dictionary& dict) {
  return decode_steps(steps, dict, [&](int t) {
    const float* row = probs + static_cast<size_t>(t) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    return std::pair<int, float>{best, row[best]};
  });
}

RecText ctc_greedy_decode_top1(const float* pairs, int steps, const Dictionary& dict) {
  return decode_steps(steps, dict, [&](int t) {
    return std::pair<int, float>{static_cast<int>(pairs[2 * t + 1]), pairs[2 * t]};
  });
}

}  // namespace steadyocr::pipeline

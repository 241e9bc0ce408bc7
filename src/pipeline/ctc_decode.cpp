#include "pipeline/ctc_decode.h"

namespace steadyocr::pipeline {

RecText ctc_greedy_decode(const float* probs, int steps, int classes, const Dictionary& dict) {
  RecText out;
  double sum = 0;
  int kept = 0;
  int prev = -1;
  for (int t = 0; t < steps; ++t) {
    const float* row = probs + static_cast<size_t>(t) * classes;
    int best = 0;
    for (int c = 1; c < classes; ++c) {
      if (row[c] > row[best]) best = c;
    }
    if (best != 0 && best != prev) {
      if (best < dict.num_classes()) out.text += dict.text_of(best);
      sum += row[best];
      ++kept;
    }
    prev = best;
  }
  out.score = kept > 0 ? static_cast<float>(sum / kept) : 0.f;
  return out;
}

}  // namespace steadyocr::pipeline

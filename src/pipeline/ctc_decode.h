// Greedy CTC decoding of the recogniser's per-step class probabilities.
#pragma once

#include <string>

#include "pipeline/dictionary.h"

namespace steadyocr::pipeline {

struct RecText {
  std::string text;
  float score = 0;  // mean of the kept steps' top probabilities; 0 when nothing was kept
};

// Decodes one sequence of `steps` rows of `classes` probabilities: per step the most likely class (first on
// ties); repeats of the previous step's class and blanks (class 0) are dropped. Classes outside the
// dictionary decode to nothing.
RecText ctc_greedy_decode(const float* probs, int steps, int classes, const Dictionary& dict);

// The same decoding from each step's top-1 pair (probability, class as a float), as a Top1 output gives it: the
// result equals ctc_greedy_decode on the full probabilities.
RecText ctc_greedy_decode_top1(const float* pairs, int steps, const Dictionary& dict);

}  // namespace steadyocr::pipeline

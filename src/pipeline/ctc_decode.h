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

}  // namespace steadyocr::pipeline

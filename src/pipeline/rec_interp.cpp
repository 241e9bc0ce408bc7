// The recognition resize's names (--rec-interp, the server's rec_interp option): apart from recognizer.cpp so the
// request parsing links it without the recogniser (fuzz/CMakeLists.txt).
#include <string>

#include "pipeline/recognizer.h"

namespace steadyocr::pipeline {

bool parse_rec_interp(const std::string& name, RecInterp* out) {
  for (RecInterp i : {RecInterp::kLinear, RecInterp::kCubic, RecInterp::kLanczos}) {
    if (name == rec_interp_name(i)) {
      *out = i;
      return true;
    }
  }
  return false;
}

const char* rec_interp_name(RecInterp interp) {
  switch (interp) {
    case RecInterp::kLinear:
      return "linear";
    case RecInterp::kCubic:
      return "cubic";
    case RecInterp::kLanczos:
      return "lanczos";
  }
  return "?";
}

}  // namespace steadyocr::pipeline

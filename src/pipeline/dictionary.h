// The recogniser's character set: class 0 is the CTC blank, then one class per dictionary line, then ' '
// (PaddleOCR's use_space_char), so a dictionary of N lines serves a model with N + 2 output classes.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace steadyocr::pipeline {

class Dictionary {
 public:
  Dictionary() = default;
  // Reads one character (UTF-8 string) per line; a missing final newline and '\r' line ends are accepted.
  static Result<Dictionary> load(const std::string& path);
  // Builds from the dictionary lines (blank and space are added).
  static Dictionary from_lines(std::vector<std::string> lines);

  // Number of model output classes this dictionary serves (lines + blank + space).
  int num_classes() const { return static_cast<int>(classes_.size()); }
  // Text of class `index` (index 0, the blank, is the empty string).
  const std::string& text_of(int index) const { return classes_[index]; }
  const std::string& path() const { return path_; }

 private:
  std::vector<std::string> classes_;
  std::string path_;
};

}  // namespace steadyocr::pipeline

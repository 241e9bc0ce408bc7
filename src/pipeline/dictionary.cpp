#include "pipeline/dictionary.h"

#include <fstream>

namespace steadyocr::pipeline {

Dictionary Dictionary::from_lines(std::vector<std::string> lines) {
  Dictionary d;
  d.classes_.reserve(lines.size() + 2);
  d.classes_.emplace_back();
  for (auto& l : lines) d.classes_.push_back(std::move(l));
  d.classes_.emplace_back(" ");
  return d;
}

Result<Dictionary> Dictionary::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return not_found("dictionary " + path + " not found or not readable");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
  }
  if (lines.empty()) return invalid_argument("dictionary " + path + " is empty (one character per line expected)");
  Dictionary d = from_lines(std::move(lines));
  d.path_ = path;
  return d;
}

}  // namespace steadyocr::pipeline

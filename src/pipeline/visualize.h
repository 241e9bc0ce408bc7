// Pictures a person can check at a glance: the input with every box tinted on the left, and on the right
// each box outlined with its text written inside (PaddleOCR's draw_ocr_box_txt layout).
#pragma once

#include <opencv2/core.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/pipeline.h"

namespace cv::freetype {
class FreeType2;
}

namespace steadyocr::pipeline {

class Visualizer {
 public:
  // Loads the first usable font: $STEADYOCR_FONT, WenQuanYi Micro/Zen Hei (CJK), DejaVu Sans. Without one,
  // text is drawn with OpenCV's built-in Latin font and other characters show as '?'.
  Visualizer();
  ~Visualizer();

  // The side-by-side picture (2 * width x height, 8-bit BGR). Thread-safe.
  cv::Mat draw(const cv::Mat& bgr, const std::vector<TextLine>& lines) const;
  // Draws and encodes in `format` (a file extension: ".jpg", ".png", ...).
  Result<std::vector<uint8_t>> encode(const std::string& format, const cv::Mat& bgr,
                                      const std::vector<TextLine>& lines) const;
  // Draws and writes to `path` (format from its extension). The error names the path.
  Status write(const std::string& path, const cv::Mat& bgr, const std::vector<TextLine>& lines) const;

  // The font file in use, empty when none was found.
  const std::string& font_path() const { return font_path_; }

 private:
  void put_text(cv::Mat& canvas, const std::string& text, const Quad& box) const;

  cv::Ptr<cv::freetype::FreeType2> font_;
  std::string font_path_;
  mutable std::mutex font_mu_;  // FreeType2 keeps per-call state
};

}  // namespace steadyocr::pipeline

#include "pipeline/visualize.h"

#include <opencv2/freetype.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>

namespace steadyocr::pipeline {
namespace {

cv::Scalar colour_of(size_t i) {
  // Well-spread hues from the golden ratio, dark enough to read on white.
  double hue = std::fmod(static_cast<double>(i) * 0.618033988749895, 1.0) * 180.0;
  cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(hue, 200, 200)), bgr;
  cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
  cv::Vec3b c = bgr.at<cv::Vec3b>(0, 0);
  return {static_cast<double>(c[0]), static_cast<double>(c[1]), static_cast<double>(c[2])};
}

std::vector<cv::Point> int_points(const Quad& q, int dx = 0) {
  std::vector<cv::Point> pts;
  for (const auto& p : q) pts.emplace_back(static_cast<int>(std::lround(p.x)) + dx, static_cast<int>(std::lround(p.y)));
  return pts;
}

float side(const cv::Point2f& a, const cv::Point2f& b) {
  return std::hypot(a.x - b.x, a.y - b.y);
}

}  // namespace

Visualizer::Visualizer() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("STEADYOCR_FONT")) candidates.emplace_back(env);
  candidates.insert(candidates.end(),
                    {"/usr/share/fonts/truetype/wqy/wqy-microhei.ttc", "/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc",
                     "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"});
  for (const auto& path : candidates) {
    if (!std::filesystem::exists(path)) continue;
    try {
      auto ft = cv::freetype::createFreeType2();
      ft->loadFontData(path, 0);
      font_ = ft;
      font_path_ = path;
      break;
    } catch (const cv::Exception&) {
      continue;
    }
  }
}

Visualizer::~Visualizer() = default;

void Visualizer::put_text(cv::Mat& canvas, const std::string& text, const Quad& q) const {
  if (text.empty()) return;
  const float box_w = std::max(side(q[0], q[1]), 1.f);
  const float box_h = std::max(side(q[0], q[3]), 1.f);
  const cv::Point origin(static_cast<int>(q[0].x) + 2, static_cast<int>(q[0].y));
  if (font_) {
    std::lock_guard<std::mutex> lock(font_mu_);
    int height = std::max(8, static_cast<int>(box_h * 0.8f));
    int baseline = 0;
    cv::Size size = font_->getTextSize(text, height, -1, &baseline);
    if (size.width > box_w && size.width > 0) {
      height = std::max(8, static_cast<int>(height * box_w / size.width));
      size = font_->getTextSize(text, height, -1, &baseline);
    }
    cv::Point bottom_left(origin.x, origin.y + static_cast<int>((box_h + size.height) / 2));
    font_->putText(canvas, text, bottom_left, height, cv::Scalar(0, 0, 0), -1, cv::LINE_AA, true);
    return;
  }
  std::string ascii;
  for (unsigned char c : text) {
    if (c < 0x80)
      ascii += static_cast<char>(c);
    else if ((c & 0xC0) != 0x80)
      ascii += '?';  // one '?' per UTF-8 character
  }
  double scale = std::max(0.3, box_h * 0.8 / 22.0);
  int baseline = 0;
  cv::Size size = cv::getTextSize(ascii, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &baseline);
  if (size.width > box_w && size.width > 0) scale *= box_w / size.width;
  size = cv::getTextSize(ascii, cv::FONT_HERSHEY_SIMPLEX, scale, 1, &baseline);
  cv::Point bottom_left(origin.x, origin.y + static_cast<int>((box_h + size.height) / 2));
  cv::putText(canvas, ascii, bottom_left, cv::FONT_HERSHEY_SIMPLEX, scale, cv::Scalar(0, 0, 0), 1, cv::LINE_AA);
}

cv::Mat Visualizer::draw(const cv::Mat& bgr, const std::vector<TextLine>& lines) const {
  const int w = bgr.cols, h = bgr.rows;
  cv::Mat canvas(h, 2 * w, CV_8UC3, cv::Scalar(255, 255, 255));
  cv::Mat left = canvas(cv::Rect(0, 0, w, h));
  cv::Mat tint = bgr.clone();
  for (size_t i = 0; i < lines.size(); ++i) {
    cv::fillPoly(tint, std::vector<std::vector<cv::Point>>{int_points(lines[i].box)}, colour_of(i));
  }
  cv::addWeighted(bgr, 0.5, tint, 0.5, 0, left);
  cv::Mat right = canvas(cv::Rect(w, 0, w, h));
  for (size_t i = 0; i < lines.size(); ++i) {
    cv::polylines(canvas, std::vector<std::vector<cv::Point>>{int_points(lines[i].box, w)}, true, colour_of(i), 1,
                  cv::LINE_AA);
    put_text(right, lines[i].text, lines[i].box);
  }
  cv::line(canvas, {w, 0}, {w, h - 1}, cv::Scalar(160, 160, 160), 1);
  return canvas;
}

Result<std::vector<uint8_t>> Visualizer::encode(const std::string& format, const cv::Mat& bgr,
                                                const std::vector<TextLine>& lines) const {
  cv::Mat picture = draw(bgr, lines);
  std::vector<uint8_t> out;
  try {
    if (!cv::imencode(format, picture, out)) return invalid_argument("cannot encode the visualisation as " + format);
  } catch (const cv::Exception& e) {
    return invalid_argument("cannot encode the visualisation as " + format + ": " + e.err);
  }
  return out;
}

Status Visualizer::write(const std::string& path, const cv::Mat& bgr, const std::vector<TextLine>& lines) const {
  cv::Mat picture = draw(bgr, lines);
  try {
    if (!cv::imwrite(path, picture)) return invalid_argument("cannot write visualisation " + path);
  } catch (const cv::Exception& e) {
    return invalid_argument("cannot write visualisation " + path + ": " + e.err);
  }
  return Status::ok();
}

}  // namespace steadyocr::pipeline

#include "pipeline/crop.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

#include "pipeline/warp.h"

namespace steadyocr::pipeline {

namespace {

float dist(const cv::Point2f& a, const cv::Point2f& b) {
  float dx = a.x - b.x, dy = a.y - b.y;
  return std::sqrt(dx * dx + dy * dy);
}

bool integral(float v) {
  return v == std::floor(v);
}

// The quad is an upright rectangle with whole-pixel corners inside the picture: the warp is then a whole-pixel
// translation, whose bicubic weights are (0, 1, 0, 0), so the crop is the region's pixels as they are.
bool whole_pixel_rectangle(const cv::Mat& image, const Quad& q) {
  for (const auto& p : q) {
    if (!integral(p.x) || !integral(p.y)) return false;
  }
  return q[0].y == q[1].y && q[2].y == q[3].y && q[0].x == q[3].x && q[1].x == q[2].x && q[1].x > q[0].x &&
         q[3].y > q[0].y && q[0].x >= 0 && q[0].y >= 0 && q[1].x <= image.cols && q[3].y <= image.rows;
}

cv::Mat turn_if_tall(cv::Mat out) {
  if (out.rows * 1.0 / std::max(out.cols, 1) >= 1.5) cv::rotate(out, out, cv::ROTATE_90_COUNTERCLOCKWISE);
  return out;
}

}  // namespace

double crop_cost(const cv::Mat& image, const Quad& q) {
  const double pixels = static_cast<double>(std::max(dist(q[0], q[1]), dist(q[2], q[3]))) *
                        static_cast<double>(std::max(dist(q[0], q[3]), dist(q[1], q[2])));
  return whole_pixel_rectangle(image, q) ? pixels : 30 * pixels;
}

cv::Mat warp_text_region(const cv::Mat& image, const Quad& q) {
  int w = static_cast<int>(std::max(dist(q[0], q[1]), dist(q[2], q[3])));
  int h = static_cast<int>(std::max(dist(q[0], q[3]), dist(q[1], q[2])));
  if (w <= 0 || h <= 0) return {};
  const cv::Point2f src[4] = {q[0], q[1], q[2], q[3]};
  const cv::Point2f dst[4] = {{0.f, 0.f},
                              {static_cast<float>(w), 0.f},
                              {static_cast<float>(w), static_cast<float>(h)},
                              {0.f, static_cast<float>(h)}};
  cv::Mat m = cv::getPerspectiveTransform(src, dst);
  // OpenCV's warpPerspective(INTER_CUBIC, BORDER_REPLICATE) bytes, ~2.4 times faster on three channels (warp.h).
  return turn_if_tall(warp_perspective_cubic(image, m, cv::Size(w, h)));
}

cv::Mat crop_text_region(const cv::Mat& image, const Quad& q) {
  if (!whole_pixel_rectangle(image, q)) return warp_text_region(image, q);
  const int x = static_cast<int>(q[0].x), y = static_cast<int>(q[0].y);
  const int w = static_cast<int>(q[1].x) - x, h = static_cast<int>(q[3].y) - y;
  return turn_if_tall(image(cv::Rect(x, y, w, h)).clone());
}

}  // namespace steadyocr::pipeline

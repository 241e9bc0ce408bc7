#include "pipeline/crop.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>

namespace steadyocr::pipeline {

cv::Mat crop_text_region(const cv::Mat& image, const Quad& q) {
  auto dist = [](const cv::Point2f& a, const cv::Point2f& b) {
    float dx = a.x - b.x, dy = a.y - b.y;
    return std::sqrt(dx * dx + dy * dy);
  };
  int w = static_cast<int>(std::max(dist(q[0], q[1]), dist(q[2], q[3])));
  int h = static_cast<int>(std::max(dist(q[0], q[3]), dist(q[1], q[2])));
  if (w <= 0 || h <= 0) return {};
  const cv::Point2f src[4] = {q[0], q[1], q[2], q[3]};
  const cv::Point2f dst[4] = {{0.f, 0.f},
                              {static_cast<float>(w), 0.f},
                              {static_cast<float>(w), static_cast<float>(h)},
                              {0.f, static_cast<float>(h)}};
  cv::Mat m = cv::getPerspectiveTransform(src, dst);
  cv::Mat out;
  cv::warpPerspective(image, out, m, cv::Size(w, h), cv::INTER_CUBIC, cv::BORDER_REPLICATE);
  if (out.rows * 1.0 / std::max(out.cols, 1) >= 1.5) cv::rotate(out, out, cv::ROTATE_90_COUNTERCLOCKWISE);
  return out;
}

}  // namespace steadyocr::pipeline

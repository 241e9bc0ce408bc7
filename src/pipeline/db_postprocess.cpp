#include "pipeline/db_postprocess.h"

#include <polyclipping/clipper.hpp>

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/parallel.h"

namespace steadyocr::pipeline {
namespace {

// Clipper works on integers: coordinates are scaled so the offset keeps sub-pixel precision.
constexpr double kClipperScale = 65536.0;

float corner_distance(const cv::Point2f& a, const cv::Point2f& b) {
  float dx = a.x - b.x, dy = a.y - b.y;
  return std::sqrt(dx * dx + dy * dy);
}

}  // namespace

Quad mini_box(cv::InputArray points, float* short_side) {
  cv::RotatedRect rect = cv::minAreaRect(points);
  cv::Point2f p[4];
  rect.points(p);
  std::array<cv::Point2f, 4> s = {p[0], p[1], p[2], p[3]};
  std::stable_sort(s.begin(), s.end(), [](const cv::Point2f& a, const cv::Point2f& b) { return a.x < b.x; });
  // Of the two left-most corners the upper one is top-left; of the two right-most the upper one is top-right.
  int tl = 0, bl = 1, tr = 2, br = 3;
  if (!(s[1].y > s[0].y)) std::swap(tl, bl);
  if (!(s[3].y > s[2].y)) std::swap(tr, br);
  if (short_side) *short_side = std::min(rect.size.width, rect.size.height);
  return {s[tl], s[tr], s[br], s[bl]};
}

double box_score_fast(const cv::Mat& prob, const Quad& quad) {
  const int h = prob.rows, w = prob.cols;
  float min_x = quad[0].x, max_x = quad[0].x, min_y = quad[0].y, max_y = quad[0].y;
  for (const auto& p : quad) {
    min_x = std::min(min_x, p.x);
    max_x = std::max(max_x, p.x);
    min_y = std::min(min_y, p.y);
    max_y = std::max(max_y, p.y);
  }
  int x0 = std::clamp(static_cast<int>(std::floor(min_x)), 0, w - 1);
  int x1 = std::clamp(static_cast<int>(std::ceil(max_x)), 0, w - 1);
  int y0 = std::clamp(static_cast<int>(std::floor(min_y)), 0, h - 1);
  int y1 = std::clamp(static_cast<int>(std::ceil(max_y)), 0, h - 1);
  cv::Mat mask = cv::Mat::zeros(y1 - y0 + 1, x1 - x0 + 1, CV_8U);
  std::vector<cv::Point> poly;
  for (const auto& p : quad) {
    poly.emplace_back(static_cast<int>(p.x - static_cast<float>(x0)), static_cast<int>(p.y - static_cast<float>(y0)));
  }
  cv::fillPoly(mask, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(1));
  return cv::mean(prob(cv::Rect(x0, y0, x1 - x0 + 1, y1 - y0 + 1)), mask)[0];
}

std::vector<cv::Point2f> unclip(const Quad& quad, double ratio) {
  double area = 0, length = 0;
  for (int i = 0; i < 4; ++i) {
    const cv::Point2f& a = quad[i];
    const cv::Point2f& b = quad[(i + 1) % 4];
    area += static_cast<double>(a.x) * b.y - static_cast<double>(b.x) * a.y;
    length += std::hypot(static_cast<double>(b.x) - a.x, static_cast<double>(b.y) - a.y);
  }
  area = std::abs(area) / 2;
  if (length <= 0) return {};
  double distance = area * ratio / length;

  ClipperLib::Path path;
  for (const auto& p : quad) {
    path.emplace_back(static_cast<ClipperLib::cInt>(std::llround(p.x * kClipperScale)),
                      static_cast<ClipperLib::cInt>(std::llround(p.y * kClipperScale)));
  }
  ClipperLib::ClipperOffset offset(2.0, 0.25 * kClipperScale);
  offset.AddPath(path, ClipperLib::jtRound, ClipperLib::etClosedPolygon);
  ClipperLib::Paths grown;
  offset.Execute(grown, distance * kClipperScale);
  if (grown.size() != 1) return {};  // a degenerate quad: nothing, or pieces we cannot box
  std::vector<cv::Point2f> out;
  out.reserve(grown[0].size());
  for (const auto& p : grown[0]) {
    out.emplace_back(static_cast<float>(p.X / kClipperScale), static_cast<float>(p.Y / kClipperScale));
  }
  return out;
}

Quad order_clockwise(const Quad& quad) {
  int imin = 0, imax = 0;
  for (int i = 1; i < 4; ++i) {
    if (quad[i].x + quad[i].y < quad[imin].x + quad[imin].y) imin = i;
    if (quad[i].x + quad[i].y > quad[imax].x + quad[imax].y) imax = i;
  }
  std::vector<cv::Point2f> rest;
  for (int i = 0; i < 4; ++i) {
    if (i != imin && i != imax) rest.push_back(quad[i]);
  }
  size_t dmin = 0, dmax = 0;
  for (size_t i = 1; i < rest.size(); ++i) {
    if (rest[i].y - rest[i].x < rest[dmin].y - rest[dmin].x) dmin = i;
    if (rest[i].y - rest[i].x > rest[dmax].y - rest[dmax].x) dmax = i;
  }
  return {quad[imin], rest[dmin], quad[imax], rest[dmax]};
}

void sort_reading_order(std::vector<DetBox>& boxes) {
  std::stable_sort(boxes.begin(), boxes.end(), [](const DetBox& a, const DetBox& b) {
    if (a.quad[0].y != b.quad[0].y) return a.quad[0].y < b.quad[0].y;
    return a.quad[0].x < b.quad[0].x;
  });
  // Boxes whose tops are within 10 px count as one line: bubble each left of its neighbours.
  for (size_t i = 0; i + 1 < boxes.size(); ++i) {
    for (size_t j = i + 1; j-- > 0;) {
      const Quad& upper = boxes[j].quad;
      const Quad& lower = boxes[j + 1].quad;
      if (std::abs(lower[0].y - upper[0].y) < 10 && lower[0].x < upper[0].x) {
        std::swap(boxes[j], boxes[j + 1]);
      } else {
        break;
      }
    }
  }
}

std::vector<DetBox> db_postprocess(const float* prob, int map_h, int map_w, int src_h, int src_w,
                                   const DbOptions& options) {
  cv::Mat pred(map_h, map_w, CV_32F, const_cast<float*>(prob));
  cv::Mat bitmap(map_h, map_w, CV_8U);
  for (int y = 0; y < map_h; ++y) {
    const float* p = pred.ptr<float>(y);
    uint8_t* b = bitmap.ptr<uint8_t>(y);
    for (int x = 0; x < map_w; ++x) b[x] = p[x] > options.thresh ? 255 : 0;
  }
  std::vector<std::vector<cv::Point>> contours;
  cv::findContours(bitmap, contours, cv::RETR_LIST, cv::CHAIN_APPROX_SIMPLE);

  // Each candidate (rectangle, score, unclip, rectangle again) depends on its contour alone: they are made in
  // parallel, into slots in contour order, and kept in that order, so the boxes are those of a serial loop. A page
  // of many lines spent most of its post-processing here (sroie-dev: ~2 ms of 2.3, docs/BENCHMARKS.md).
  const size_t n = std::min(contours.size(), static_cast<size_t>(std::max(options.max_candidates, 0)));
  const float fw = static_cast<float>(map_w), fh = static_cast<float>(map_h);
  const float sw = static_cast<float>(src_w), sh = static_cast<float>(src_h);
  std::vector<std::optional<DetBox>> found(n);
  auto candidate = [&](size_t i) -> std::optional<DetBox> {
    float short_side = 0;
    Quad quad = mini_box(contours[i], &short_side);
    if (short_side < options.min_size) return std::nullopt;
    double score = box_score_fast(pred, quad);
    if (score < options.box_thresh) return std::nullopt;
    std::vector<cv::Point2f> grown = unclip(quad, options.unclip_ratio);
    if (grown.size() < 3) return std::nullopt;
    Quad box = mini_box(grown, &short_side);
    if (short_side < options.min_size + 2) return std::nullopt;
    for (auto& p : box) {
      // Round half to even (NumPy's round) in float, as the reference does.
      p.x = std::clamp(std::nearbyint(p.x / fw * sw), 0.f, sw);
      p.y = std::clamp(std::nearbyint(p.y / fh * sh), 0.f, sh);
    }
    return DetBox{box, static_cast<float>(score)};
  };
  // Dynamic scheduling: a contour's cost follows its box's area (the score's mask and mean).
  parallel_for_each(static_cast<int64_t>(n), [&](int64_t i) { found[i] = candidate(static_cast<size_t>(i)); });
  std::vector<DetBox> boxes;
  for (auto& f : found) {
    if (f) boxes.push_back(*f);
  }

  std::vector<DetBox> kept;
  for (auto& b : boxes) {
    Quad q = order_clockwise(b.quad);
    for (auto& p : q) {
      p.x = std::clamp(p.x, 0.f, sw - 1);
      p.y = std::clamp(p.y, 0.f, sh - 1);
    }
    if (static_cast<int>(corner_distance(q[0], q[1])) <= 3 || static_cast<int>(corner_distance(q[0], q[3])) <= 3) {
      continue;
    }
    kept.push_back({q, b.score});
  }
  sort_reading_order(kept);
  return kept;
}

}  // namespace steadyocr::pipeline

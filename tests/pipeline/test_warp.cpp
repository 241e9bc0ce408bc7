// Our bicubic perspective warp against OpenCV's cv::warpPerspective(INTER_CUBIC, BORDER_REPLICATE), byte for byte:
// the text-line crops must be the same whichever of the two cut them.
#include <gtest/gtest.h>

#include <cmath>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>

#include "pipeline/warp.h"

namespace steadyocr::pipeline {
namespace {

cv::Mat opencv_warp(const cv::Mat& src, const cv::Mat& m, cv::Size size) {
  cv::Mat out;
  cv::warpPerspective(src, out, m, size, cv::INTER_CUBIC, cv::BORDER_REPLICATE);
  return out;
}

// How many bytes differ (0: the same picture).
int differing_bytes(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return -1;
  cv::Mat d;
  cv::compare(a.reshape(1), b.reshape(1), d, cv::CMP_NE);
  return cv::countNonZero(d);
}

// A text line's quad: a rotated rectangle with its corners moved by up to a pixel, sometimes partly off the page.
struct Line {
  cv::Point2f q[4];
  int w, h;
};

Line random_line(std::mt19937& rng, int page_w, int page_h) {
  std::uniform_real_distribution<float> u(0.f, 1.f);
  const float cx = u(rng) * page_w, cy = u(rng) * page_h, angle = (u(rng) - 0.5f) * 0.6f;
  const float lw = 5 + u(rng) * page_w * 0.8f, lh = 3 + u(rng) * 40;
  const float c = std::cos(angle), s = std::sin(angle);
  const float px[4] = {-lw / 2, lw / 2, lw / 2, -lw / 2}, py[4] = {-lh / 2, -lh / 2, lh / 2, lh / 2};
  Line l{};
  for (int i = 0; i < 4; ++i) {
    l.q[i] = {cx + c * px[i] - s * py[i] + (u(rng) - 0.5f) * 2, cy + s * px[i] + c * py[i] + (u(rng) - 0.5f) * 2};
  }
  l.w = std::max(1, static_cast<int>(lw));
  l.h = std::max(1, static_cast<int>(lh));
  return l;
}

cv::Mat to_rectangle(const Line& l) {
  const cv::Point2f d[4] = {{0.f, 0.f},
                            {static_cast<float>(l.w), 0.f},
                            {static_cast<float>(l.w), static_cast<float>(l.h)},
                            {0.f, static_cast<float>(l.h)}};
  return cv::getPerspectiveTransform(l.q, d);
}

TEST(Warp, SameBytesAsOpenCvOverManyLinesSizesAndChannels) {
  std::mt19937 rng(20261207);
  int lines = 0;
  for (int t = 0; t < 400; ++t) {
    const int cn = 1 + static_cast<int>(rng() % 4);
    const int page_w = 20 + static_cast<int>(rng() % 400), page_h = 20 + static_cast<int>(rng() % 300);
    cv::Mat page(page_h, page_w, CV_8UC(cn));
    cv::randu(page, 0, 256);
    const Line l = random_line(rng, page_w, page_h);
    const cv::Mat m = to_rectangle(l);
    ASSERT_EQ(differing_bytes(opencv_warp(page, m, {l.w, l.h}), warp_perspective_cubic(page, m, {l.w, l.h})), 0)
        << "page " << page_w << "x" << page_h << "x" << cn << ", line " << l.w << "x" << l.h << " (case " << t << ")";
    ++lines;
  }
  EXPECT_EQ(lines, 400);
}

TEST(Warp, SameBytesOnEdgeCases) {
  std::mt19937 rng(11);
  cv::Mat page(60, 90, CV_8UC3);
  cv::randu(page, 0, 256);
  const cv::Point2f square[4] = {{0, 0}, {10, 0}, {10, 10}, {0, 10}};
  struct Case {
    const char* name;
    cv::Mat m;
    cv::Size size;
  };
  const std::vector<Case> cases = {
      {"identity", cv::Mat::eye(3, 3, CV_64F), {90, 60}},
      {"whole-pixel shift", (cv::Mat_<double>(3, 3) << 1, 0, -7, 0, 1, -3, 0, 0, 1), {40, 20}},
      {"all outside the page", (cv::Mat_<double>(3, 3) << 1, 0, -500, 0, 1, -400, 0, 0, 1), {16, 8}},
      {"a strong perspective",
       cv::getPerspectiveTransform(std::vector<cv::Point2f>{{5, 5}, {80, 12}, {70, 55}, {9, 40}},
                                   std::vector<cv::Point2f>{{0, 0}, {64, 0}, {64, 32}, {0, 32}}),
       {64, 32}},
      {"singular (a line)", cv::getPerspectiveTransform(square, square) * 0, {8, 8}},
      {"float matrix", cv::Mat(cv::Mat::eye(3, 3, CV_64F) * 1.5).clone(), {30, 20}},
      {"one pixel", cv::Mat::eye(3, 3, CV_64F), {1, 1}},
      {"two blocks across (64 + 26 columns)",
       (cv::Mat_<double>(3, 3) << 0.9, 0.1, 2, -0.1, 0.8, 5, 0.001, 0, 1),
       {90, 60}},
  };
  for (const Case& c : cases) {
    cv::Mat m = c.m;
    if (std::string(c.name) == "float matrix") m.convertTo(m, CV_32F);
    EXPECT_EQ(differing_bytes(opencv_warp(page, m, c.size), warp_perspective_cubic(page, m, c.size)), 0) << c.name;
  }
  // A tiny page: every tap is near an edge.
  cv::Mat tiny(2, 3, CV_8UC3);
  cv::randu(tiny, 0, 256);
  const cv::Mat stretch = (cv::Mat_<double>(3, 3) << 5, 0.3, 0, 0.2, 7, 0, 0, 0, 1);
  EXPECT_EQ(differing_bytes(opencv_warp(tiny, stretch, {17, 13}), warp_perspective_cubic(tiny, stretch, {17, 13})), 0);
}

TEST(Warp, ReadsThroughARoiWithItsStride) {
  std::mt19937 rng(3);
  cv::Mat big(120, 200, CV_8UC3);
  cv::randu(big, 0, 256);
  const cv::Mat roi = big(cv::Rect(13, 7, 150, 90));
  ASSERT_FALSE(roi.isContinuous());
  const Line l = random_line(rng, 150, 90);
  const cv::Mat m = to_rectangle(l);
  EXPECT_EQ(differing_bytes(opencv_warp(roi.clone(), m, {l.w, l.h}), warp_perspective_cubic(roi, m, {l.w, l.h})), 0);
}

TEST(Warp, BadInputIsAnErrorNamingIt) {
  const cv::Mat eye = cv::Mat::eye(3, 3, CV_64F);
  try {
    warp_perspective_cubic(cv::Mat(4, 4, CV_32FC3, cv::Scalar::all(0)), eye, {8, 8});
    FAIL() << "float input accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("8-bit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(warp_perspective_cubic(cv::Mat(), eye, {8, 8}), std::invalid_argument);
  EXPECT_THROW(warp_perspective_cubic(cv::Mat(4, 4, CV_8UC3), cv::Mat::eye(2, 3, CV_64F), {8, 8}),
               std::invalid_argument);
  EXPECT_THROW(warp_perspective_cubic(cv::Mat(4, 4, CV_8UC3), eye, {0, 8}), std::invalid_argument);
}

}  // namespace
}  // namespace steadyocr::pipeline

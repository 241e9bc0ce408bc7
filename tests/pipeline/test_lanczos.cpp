// Our Lanczos-4 resize against OpenCV's cv::resize(INTER_LANCZOS4), byte for byte: the recogniser's lines must read
// the same whichever of the two made their rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>

#include "pipeline/lanczos.h"

namespace steadyocr::pipeline {
namespace {

cv::Mat opencv_lanczos(const cv::Mat& src, cv::Size size) {
  cv::Mat out;
  cv::resize(src, out, size, 0, 0, cv::INTER_LANCZOS4);
  return out;
}

// Where the two differ: "" when every byte is equal, else the first differing pixel.
std::string first_difference(const cv::Mat& a, const cv::Mat& b) {
  if (a.size() != b.size() || a.type() != b.type()) return "size or type";
  for (int y = 0; y < a.rows; ++y) {
    const uint8_t *pa = a.ptr<uint8_t>(y), *pb = b.ptr<uint8_t>(y);
    for (int x = 0; x < a.cols * a.channels(); ++x) {
      if (pa[x] != pb[x]) {
        return "row " + std::to_string(y) + " byte " + std::to_string(x) + ": opencv " + std::to_string(pa[x]) +
               ", ours " + std::to_string(pb[x]);
      }
    }
  }
  return "";
}

cv::Mat random_picture(std::mt19937& rng, int w, int h, int cn, int kind) {
  cv::Mat m(h, w, CV_8UC(cn));
  if (kind == 0) {
    cv::randu(m, 0, 256);  // noise: every weight matters
  } else if (kind == 1) {
    cv::Mat bits(h, w, CV_8UC(cn));
    cv::randu(bits, 0, 2);
    m = bits * 255;  // hard edges: the clamp to 0..255 at the ringing
  } else {
    // A smooth ramp with text-like strokes, as a crop looks.
    for (int y = 0; y < h; ++y) {
      for (int x = 0; x < w * cn; ++x) m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>((x * 7 + y * 3) % 200 + 20);
    }
    for (int k = 0; k < 3; ++k) {
      cv::line(m, {static_cast<int>(rng() % w), 0}, {static_cast<int>(rng() % w), h - 1}, cv::Scalar::all(0), 1);
    }
  }
  return m;
}

TEST(Lanczos, SameBytesAsOpenCvOverManySizesBothWaysAndChannels) {
  std::mt19937 rng(20261207);
  int cases = 0;
  for (int t = 0; t < 600; ++t) {
    const int cn = 1 + static_cast<int>(rng() % 4);
    const int sw = 1 + static_cast<int>(rng() % 160), sh = 1 + static_cast<int>(rng() % 64);
    const int dw = 1 + static_cast<int>(rng() % 320), dh = 1 + static_cast<int>(rng() % 96);
    const cv::Mat src = random_picture(rng, sw, sh, cn, t % 3);
    cv::Mat ours;
    lanczos4_resize(src, ours, {dw, dh});
    ASSERT_EQ(first_difference(opencv_lanczos(src, {dw, dh}), ours), "")
        << sw << "x" << sh << "x" << cn << " -> " << dw << "x" << dh << " (case " << t << ")";
    ++cases;
  }
  EXPECT_EQ(cases, 600);
}

TEST(Lanczos, SameBytesOnTheRecognisersShapesAndTheEdgeCases) {
  std::mt19937 rng(7);
  struct Shape {
    int sw, sh, dw, dh;
  };
  const Shape shapes[] = {
      {300, 25, 576, 48},    // a receipt line, enlarged
      {800, 60, 640, 48},    // a long line, shrunk
      {1, 1, 7, 48},         // one pixel
      {206, 1, 287, 49},     // one row: an output row's centre lands on 1.0 after rounding (the 1e30 weight)
      {5, 2, 5, 49},         // outputs at exact source centres
      {64, 48, 64, 48},      // the same size: a copy
      {2000, 400, 240, 48},  // shrunk 8 times and more: only some source rows are read
      {37, 13, 1, 1},        // to one pixel
  };
  for (const Shape& s : shapes) {
    for (int cn = 1; cn <= 4; ++cn) {
      for (int kind = 0; kind < 3; ++kind) {
        const cv::Mat src = random_picture(rng, s.sw, s.sh, cn, kind);
        cv::Mat ours;
        lanczos4_resize(src, ours, {s.dw, s.dh});
        EXPECT_EQ(first_difference(opencv_lanczos(src, {s.dw, s.dh}), ours), "")
            << s.sw << "x" << s.sh << "x" << cn << " -> " << s.dw << "x" << s.dh << " kind " << kind;
      }
    }
  }
}

// The largest sum the weights allow: light and dark pixels following the signs of the weights in both directions,
// shrunk by 2 (every output's centre at a half pixel), 255 * (2780^2 + 732^2) + 2^21 = 2.11e9, just below 2^31. The
// bytes are OpenCV's, and the centre output is white, not a wrapped sum's black.
TEST(Lanczos, TheLargestSumStaysBelow2To31) {
  // At a half-pixel centre the 8 taps' weights have the signs - + - + + - + -.
  const int sign[8] = {-1, 1, -1, 1, 1, -1, 1, -1};
  cv::Mat src(16, 16, CV_8UC3);
  for (int y = 0; y < 16; ++y) {
    for (int x = 0; x < 16; ++x) {
      // Output (4, 4) reads rows and columns 5..12 (centre 8.5): light where both weights share a sign.
      const int ty = std::clamp(y - 5, 0, 7), tx = std::clamp(x - 5, 0, 7);
      src.at<cv::Vec3b>(y, x) = cv::Vec3b::all(sign[ty] * sign[tx] > 0 ? 255 : 0);
    }
  }
  cv::Mat ours;
  lanczos4_resize(src, ours, {8, 8});
  EXPECT_EQ(first_difference(opencv_lanczos(src, {8, 8}), ours), "");
  EXPECT_EQ(ours.at<cv::Vec3b>(4, 4), cv::Vec3b::all(255));
}

TEST(Lanczos, ReadsThroughARoiWithItsStride) {
  std::mt19937 rng(3);
  const cv::Mat page = random_picture(rng, 200, 100, 3, 0);
  const cv::Mat roi = page(cv::Rect(17, 9, 120, 31));  // not continuous: the page's step
  ASSERT_FALSE(roi.isContinuous());
  cv::Mat ours;
  lanczos4_resize(roi, ours, {186, 48});
  EXPECT_EQ(first_difference(opencv_lanczos(roi.clone(), {186, 48}), ours), "");
}

TEST(Lanczos, BadInputIsAnErrorNamingIt) {
  cv::Mat out;
  try {
    lanczos4_resize(cv::Mat(4, 4, CV_32FC3, cv::Scalar::all(0)), out, {8, 8});
    FAIL() << "float input accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("8-bit"), std::string::npos) << e.what();
  }
  EXPECT_THROW(lanczos4_resize(cv::Mat(), out, {8, 8}), std::invalid_argument);
  EXPECT_THROW(lanczos4_resize(cv::Mat(4, 4, CV_8UC3, cv::Scalar::all(0)), out, {0, 8}), std::invalid_argument);
}

}  // namespace
}  // namespace steadyocr::pipeline

// DB post-processing on synthetic probability maps, with boxes worked out by hand.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "core/parallel.h"
#include "pipeline/db_postprocess.h"

namespace steadyocr::pipeline {
namespace {

// A map of `bg` with filled rectangles of probability `p` (inclusive pixel ranges).
struct Blob {
  int x0, y0, x1, y1;
  float p = 0.9f;
};
cv::Mat make_map(int h, int w, const std::vector<Blob>& blobs, float bg = 0.02f) {
  cv::Mat m(h, w, CV_32F, cv::Scalar(bg));
  for (const auto& b : blobs) m(cv::Rect(b.x0, b.y0, b.x1 - b.x0 + 1, b.y1 - b.y0 + 1)).setTo(b.p);
  return m;
}

std::vector<DetBox> run(const cv::Mat& map, int src_h, int src_w, const DbOptions& o = {}) {
  return db_postprocess(map.ptr<float>(), map.rows, map.cols, src_h, src_w, o);
}

void expect_quad(const Quad& q, std::array<std::array<float, 2>, 4> want) {
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(q[i].x, want[i][0]) << "corner " << i;
    EXPECT_FLOAT_EQ(q[i].y, want[i][1]) << "corner " << i;
  }
}

TEST(DbPostprocess, AxisAlignedBlobGrowsByAreaTimesRatioOverPerimeter) {
  // Pixels 50..149 x 60..79: the contour runs through pixel centres, a 99 x 19 rectangle.
  // d = 99 * 19 * 1.5 / (2 * (99 + 19)) = 11.9555 -> x 38.04..160.96, y 48.04..90.96, rounded.
  auto boxes = run(make_map(200, 300, {{50, 60, 149, 79}}), 200, 300);
  ASSERT_EQ(boxes.size(), 1u);
  expect_quad(boxes[0].quad, {{{38, 48}, {161, 48}, {161, 91}, {38, 91}}});
  EXPECT_NEAR(boxes[0].score, 0.9, 1e-6);
}

TEST(DbPostprocess, ScalesToTheSourcePictureWithRoundingAndClipping) {
  // Same blob, source picture twice as large in x and 1.5x in y; a blob at the edge is clipped.
  auto boxes = run(make_map(200, 300, {{50, 60, 149, 79}, {0, 150, 60, 170}}), 300, 600);
  ASSERT_EQ(boxes.size(), 2u);
  // 38.0445 * 2 = 76.09 -> 76; 160.9555 * 2 = 321.9 -> 322; 48.0445 * 1.5 = 72.07 -> 72; 90.9555 * 1.5 = 136.4 -> 136.
  expect_quad(boxes[0].quad, {{{76, 72}, {322, 72}, {322, 136}, {76, 136}}});
  EXPECT_FLOAT_EQ(boxes[1].quad[0].x, 0.f);  // grown past the left edge: clipped to 0
}

TEST(DbPostprocess, DropsWeakThinAndTinyCandidates) {
  std::vector<Blob> blobs = {
      {10, 10, 100, 30, 0.5f},  // above thresh 0.3 but mean 0.5 < box_thresh 0.6
      {10, 50, 100, 51},        // 2 px tall: short side 1 < 3
      {10, 80, 12, 82},         // 3x3 pixels: short side 2
      {10, 120, 100, 140},      // kept
  };
  auto boxes = run(make_map(200, 200, blobs), 200, 200);
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_NEAR(boxes[0].quad[0].y, 120 - 20 * 90 * 1.5 / (2 * 110.0), 0.5);
  DbOptions lenient;
  lenient.box_thresh = 0.4;
  EXPECT_EQ(run(make_map(200, 200, blobs), 200, 200, lenient).size(), 2u);
}

TEST(DbPostprocess, ThresholdIsStrictlyAbove) {
  cv::Mat m = make_map(100, 100, {{20, 20, 80, 40, 0.3f}});
  EXPECT_TRUE(run(m, 100, 100).empty());  // 0.3 is not > 0.3
  DbOptions o;
  o.thresh = 0.29f;
  o.box_thresh = 0.29;
  EXPECT_EQ(run(m, 100, 100, o).size(), 1u);
}

TEST(DbPostprocess, RotatedBlobGivesARotatedQuadClockwiseFromTopLeft) {
  cv::Mat m(300, 300, CV_32F, cv::Scalar(0.f));
  cv::RotatedRect r({150, 150}, {160, 30}, 20);
  cv::Point2f pts[4];
  r.points(pts);
  std::vector<cv::Point> poly;
  for (auto& p : pts) poly.emplace_back(cvRound(p.x), cvRound(p.y));
  cv::fillPoly(m, std::vector<std::vector<cv::Point>>{poly}, cv::Scalar(0.95));
  auto boxes = run(m, 300, 300);
  ASSERT_EQ(boxes.size(), 1u);
  const Quad& q = boxes[0].quad;
  // Top edge goes down to the right at about 20 degrees, corners in TL, TR, BR, BL order.
  double angle = std::atan2(q[1].y - q[0].y, q[1].x - q[0].x) * 180 / CV_PI;
  EXPECT_NEAR(angle, 20, 2);
  EXPECT_LT(q[0].x, q[1].x);
  EXPECT_LT(q[1].y, q[2].y);
  EXPECT_GT(q[2].x, q[3].x);
  // Grown on every side: longer than the blob.
  EXPECT_GT(std::hypot(q[1].x - q[0].x, q[1].y - q[0].y), 160);
}

TEST(DbPostprocess, SortsInReadingOrderWithTheTenPixelLineRule) {
  // Two boxes on one line (tops 4 px apart, the right one higher), one below.
  auto boxes = run(make_map(300, 400, {{220, 50, 300, 70}, {20, 54, 100, 74}, {20, 150, 300, 170}}), 300, 400);
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_LT(boxes[0].quad[0].x, 100);  // left box first although its top is lower
  EXPECT_GT(boxes[1].quad[0].x, 150);
  EXPECT_GT(boxes[2].quad[0].y, 120);
}

TEST(DbPostprocess, SortReadingOrderBubblesOnlyWithinALine) {
  auto box = [](float x, float y) {
    DetBox b;
    b.quad = {cv::Point2f(x, y), cv::Point2f(x + 10, y), cv::Point2f(x + 10, y + 5), cv::Point2f(x, y + 5)};
    return b;
  };
  std::vector<DetBox> v = {box(300, 20), box(200, 12), box(100, 15), box(50, 40)};
  sort_reading_order(v);
  // Sorted by top: (200,12) (100,15) (300,20) (50,40); 12/15/20 within 10 px of neighbours -> by x.
  EXPECT_FLOAT_EQ(v[0].quad[0].x, 100);
  EXPECT_FLOAT_EQ(v[1].quad[0].x, 200);
  EXPECT_FLOAT_EQ(v[2].quad[0].x, 300);
  EXPECT_FLOAT_EQ(v[3].quad[0].x, 50);
}

TEST(DbPostprocess, MiniBoxOrdersCornersLikePaddleOcr) {
  std::vector<cv::Point2f> pts = {{10, 10}, {50, 10}, {50, 30}, {10, 30}};
  float short_side = 0;
  Quad q = mini_box(pts, &short_side);
  EXPECT_FLOAT_EQ(short_side, 20);
  expect_quad(q, {{{10, 10}, {50, 10}, {50, 30}, {10, 30}}});
}

TEST(DbPostprocess, OrderClockwise) {
  Quad q = {cv::Point2f(50, 30), cv::Point2f(10, 10), cv::Point2f(10, 30), cv::Point2f(50, 10)};
  expect_quad(order_clockwise(q), {{{10, 10}, {50, 10}, {50, 30}, {10, 30}}});
}

TEST(DbPostprocess, BoxScoreIsTheMeanInsideThePolygon) {
  cv::Mat m(20, 20, CV_32F, cv::Scalar(0.f));
  m(cv::Rect(0, 0, 10, 20)).setTo(1.f);  // left half ones
  Quad all = {cv::Point2f(0, 0), cv::Point2f(19, 0), cv::Point2f(19, 19), cv::Point2f(0, 19)};
  EXPECT_NEAR(box_score_fast(m, all), 0.5, 1e-9);
  Quad left = {cv::Point2f(2, 2), cv::Point2f(7.9f, 2), cv::Point2f(7.9f, 9), cv::Point2f(2, 9)};
  EXPECT_NEAR(box_score_fast(m, left), 1.0, 1e-9);
}

TEST(DbPostprocess, UnclipGrowsEachSideByTheOffsetDistance) {
  Quad q = {cv::Point2f(100, 100), cv::Point2f(200, 100), cv::Point2f(200, 120), cv::Point2f(100, 120)};
  auto grown = unclip(q, 1.5);
  ASSERT_GT(grown.size(), 4u);  // round joins add arc points
  float x0 = 1e9f, y0 = 1e9f, x1 = -1e9f, y1 = -1e9f;
  for (const auto& p : grown) {
    x0 = std::min(x0, p.x), y0 = std::min(y0, p.y), x1 = std::max(x1, p.x), y1 = std::max(y1, p.y);
  }
  cv::Rect2f bb(x0, y0, x1 - x0, y1 - y0);
  const double d = 100 * 20 * 1.5 / 240.0;  // 12.5
  EXPECT_NEAR(bb.x, 100 - d, 0.01);
  EXPECT_NEAR(bb.y, 100 - d, 0.01);
  EXPECT_NEAR(bb.width, 100 + 2 * d, 0.02);
  EXPECT_NEAR(bb.height, 20 + 2 * d, 0.02);
  EXPECT_TRUE(unclip({cv::Point2f(1, 1), cv::Point2f(1, 1), cv::Point2f(1, 1), cv::Point2f(1, 1)}, 1.5).empty());
}

TEST(DbPostprocess, MaxCandidatesBoundsTheWork) {
  std::vector<Blob> blobs;
  for (int i = 0; i < 10; ++i) blobs.push_back({10, 10 + 30 * i, 100, 25 + 30 * i});
  DbOptions o;
  o.max_candidates = 4;
  EXPECT_EQ(run(make_map(320, 200, blobs), 320, 200, o).size(), 4u);
  EXPECT_EQ(run(make_map(320, 200, blobs), 320, 200).size(), 10u);
}

TEST(DbPostprocess, CandidatesMadeInParallelAreTheSerialLoopsInItsOrder) {
  // 84 blobs of different sizes, some tilted, some too weak or too thin: threads take them in any order.
  cv::Mat map(420, 640, CV_32F, cv::Scalar(0.02f));
  cv::RNG rng(5);
  for (int i = 0; i < 84; ++i) {
    const int r = i / 7, c = i % 7;
    const cv::Point2f centre(45.f + 90.f * c, 18.f + 34.f * r);
    const cv::Size2f size(static_cast<float>(rng.uniform(4, 80)), static_cast<float>(rng.uniform(2, 22)));
    const cv::RotatedRect rect(centre, size, static_cast<float>(rng.uniform(-12, 12)));
    cv::Point2f p[4];
    rect.points(p);
    std::vector<cv::Point> poly(p, p + 4);
    cv::fillConvexPoly(map, poly, cv::Scalar(i % 9 == 0 ? 0.45f : 0.95f));
  }
  const int before = num_threads();
  set_num_threads(4);
  const std::vector<DetBox> parallel = run(map, 840, 1280);
  std::vector<DetBox> serial;
  {
    SerialScope one_thread;
    serial = run(map, 840, 1280);
  }
  set_num_threads(before);
  ASSERT_GT(serial.size(), 40u);
  ASSERT_LT(serial.size(), 84u);  // the weak and the thin ones dropped
  ASSERT_EQ(parallel.size(), serial.size());
  for (size_t i = 0; i < serial.size(); ++i) {
    EXPECT_EQ(parallel[i].score, serial[i].score) << "box " << i;
    for (int k = 0; k < 4; ++k) EXPECT_EQ(parallel[i].quad[k], serial[i].quad[k]) << "box " << i << " corner " << k;
  }
}

}  // namespace
}  // namespace steadyocr::pipeline

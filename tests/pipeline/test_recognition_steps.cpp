// Dictionary, greedy CTC decoding, crops and recognition pre-processing on synthetic inputs.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "pipeline/crop.h"
#include "pipeline/ctc_decode.h"
#include "pipeline/dictionary.h"
#include "pipeline/recognizer.h"

namespace steadyocr::pipeline {
namespace {

// Steps of one-hot-ish rows: `cls` gets probability p, the rest share 1 - p.
std::vector<float> steps_of(const std::vector<std::pair<int, float>>& seq, int classes) {
  std::vector<float> v(seq.size() * classes);
  for (size_t t = 0; t < seq.size(); ++t) {
    for (int c = 0; c < classes; ++c) v[t * classes + c] = (1 - seq[t].second) / (classes - 1);
    v[t * classes + seq[t].first] = seq[t].second;
  }
  return v;
}

TEST(Dictionary, AddsBlankFirstAndSpaceLast) {
  std::string path = ::testing::TempDir() + "/dict.txt";
  {
    std::ofstream f(path, std::ios::binary);
    f << "a\r\nb\n中";  // CRLF line and no final newline
  }
  auto d = Dictionary::load(path);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  ASSERT_EQ(d->num_classes(), 5);
  EXPECT_EQ(d->text_of(0), "");
  EXPECT_EQ(d->text_of(1), "a");
  EXPECT_EQ(d->text_of(2), "b");
  EXPECT_EQ(d->text_of(3), "中");
  EXPECT_EQ(d->text_of(4), " ");
  EXPECT_EQ(Dictionary::load(path + ".missing").status().code(), StatusCode::kNotFound);
}

TEST(CtcDecode, CollapsesRepeatsDropsBlanksAndAveragesKeptSteps) {
  Dictionary d = Dictionary::from_lines({"a", "b", "c"});  // classes: blank a b c ' '
  // a a blank a b b ' ' c  ->  "aab c": repeats merge, a blank separates the two a's.
  auto probs = steps_of({{1, 0.9f}, {1, 0.5f}, {0, 0.99f}, {1, 0.8f}, {2, 0.7f}, {2, 0.6f}, {4, 0.6f}, {3, 0.5f}}, 5);
  RecText r = ctc_greedy_decode(probs.data(), 8, 5, d);
  EXPECT_EQ(r.text, "aab c");
  // Kept steps: 0 (0.9), 3 (0.8), 4 (0.7), 6 (0.6), 7 (0.5).
  EXPECT_NEAR(r.score, (0.9 + 0.8 + 0.7 + 0.6 + 0.5) / 5, 1e-6);
}

TEST(CtcDecode, AllBlankGivesEmptyTextAndZeroScore) {
  Dictionary d = Dictionary::from_lines({"a"});
  auto probs = steps_of({{0, 0.9f}, {0, 0.8f}}, 3);
  RecText r = ctc_greedy_decode(probs.data(), 2, 3, d);
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.score, 0.f);
}

TEST(CtcDecode, TiesGoToTheFirstClass) {
  Dictionary d = Dictionary::from_lines({"a", "b"});
  std::vector<float> probs = {0.1f, 0.45f, 0.45f, 0.0f};
  EXPECT_EQ(ctc_greedy_decode(probs.data(), 1, 4, d).text, "a");
}

// Decoding each step's top-1 pair (what a Top1 output brings back from the device) gives what the full
// probabilities give, on random steps with many repeats and blanks.
TEST(CtcDecode, TopOnePairsDecodeLikeTheFullProbabilities) {
  Dictionary d = Dictionary::from_lines({"a", "b", "c", "d", "e", "f"});  // 8 classes
  const int classes = d.num_classes(), steps = 60;
  std::srand(5);
  for (int round = 0; round < 20; ++round) {
    std::vector<float> probs(static_cast<size_t>(steps) * classes);
    for (float& p : probs) p = static_cast<float>(std::rand() % 7) / 7.f;  // ties too
    std::vector<float> pairs(2 * steps);
    for (int t = 0; t < steps; ++t) {
      const float* row = probs.data() + t * classes;
      int best = 0;
      for (int c = 1; c < classes; ++c) best = row[c] > row[best] ? c : best;
      pairs[2 * t] = row[best];
      pairs[2 * t + 1] = static_cast<float>(best);
    }
    const RecText full = ctc_greedy_decode(probs.data(), steps, classes, d);
    const RecText top = ctc_greedy_decode_top1(pairs.data(), steps, d);
    EXPECT_EQ(top.text, full.text) << "round " << round;
    EXPECT_FLOAT_EQ(top.score, full.score) << "round " << round;
    EXPECT_FALSE(full.text.empty()) << "round " << round;  // the case decodes something
  }
}

TEST(Crop, AxisAlignedQuadCopiesTheRegion) {
  cv::Mat img(100, 200, CV_8UC3);
  cv::randu(img, 0, 255);
  Quad q = {cv::Point2f(20, 10), cv::Point2f(120, 10), cv::Point2f(120, 40), cv::Point2f(20, 40)};
  cv::Mat c = crop_text_region(img, q);
  ASSERT_EQ(c.cols, 100);
  ASSERT_EQ(c.rows, 30);
  cv::Mat diff;
  cv::absdiff(c, img(cv::Rect(20, 10, 100, 30)), diff);
  EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0);
}

// The copy of an upright whole-pixel rectangle gives the warp's pixels exactly: random pictures (so that any
// interpolation would show), rectangles anywhere including along every edge, wide and tall ones (turned).
TEST(Crop, UprightWholePixelRectanglesAreTheWarpsPixels) {
  cv::RNG rng(13);
  for (int k = 0; k < 400; ++k) {
    cv::Mat img(rng.uniform(8, 120), rng.uniform(8, 160), CV_8UC3);
    cv::randu(img, 0, 256);
    const int x0 = k % 4 == 0 ? 0 : rng.uniform(0, img.cols - 1);
    const int y0 = k % 5 == 0 ? 0 : rng.uniform(0, img.rows - 1);
    const int x1 = k % 3 == 0 ? img.cols - (k % 2) : rng.uniform(x0 + 1, img.cols + 1);
    const int y1 = k % 7 == 0 ? img.rows - (k % 2) : rng.uniform(y0 + 1, img.rows + 1);
    const Quad q = {cv::Point2f(x0, y0), cv::Point2f(x1, y0), cv::Point2f(x1, y1), cv::Point2f(x0, y1)};
    const cv::Mat fast = crop_text_region(img, q), warped = warp_text_region(img, q);
    ASSERT_EQ(fast.size(), warped.size()) << "rectangle " << x0 << "," << y0 << " - " << x1 << "," << y1;
    cv::Mat diff;
    cv::absdiff(fast, warped, diff);
    ASSERT_EQ(cv::countNonZero(diff.reshape(1)), 0) << "rectangle " << x0 << "," << y0 << " - " << x1 << "," << y1;
  }
  // Not whole pixels, not upright, or past the picture: the warp (its replicated border included).
  cv::Mat img(60, 90, CV_8UC3);
  cv::randu(img, 0, 256);
  for (const Quad& q : {Quad{cv::Point2f(10.5f, 5), cv::Point2f(40, 5), cv::Point2f(40, 20), cv::Point2f(10.5f, 20)},
                        Quad{cv::Point2f(10, 5), cv::Point2f(40, 7), cv::Point2f(40, 22), cv::Point2f(10, 20)},
                        Quad{cv::Point2f(70, 5), cv::Point2f(95, 5), cv::Point2f(95, 20), cv::Point2f(70, 20)}}) {
    cv::Mat diff;
    cv::absdiff(crop_text_region(img, q), warp_text_region(img, q), diff);
    EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0);
  }
}

TEST(Crop, CostRanksWarpsAboveCopiesAndFollowsTheSize) {
  cv::Mat img(200, 300, CV_8UC3, cv::Scalar(0, 0, 0));
  const Quad copy = {cv::Point2f(10, 10), cv::Point2f(110, 10), cv::Point2f(110, 30), cv::Point2f(10, 30)};
  const Quad warp = {cv::Point2f(10, 10), cv::Point2f(110, 12), cv::Point2f(110, 32), cv::Point2f(10, 30)};
  const Quad big_copy = {cv::Point2f(10, 10), cv::Point2f(290, 10), cv::Point2f(290, 40), cv::Point2f(10, 40)};
  EXPECT_DOUBLE_EQ(crop_cost(img, copy), 100.0 * 20.0);
  EXPECT_GT(crop_cost(img, warp), 20 * crop_cost(img, copy));
  EXPECT_GT(crop_cost(img, big_copy), crop_cost(img, copy));
  EXPECT_LT(crop_cost(img, big_copy), crop_cost(img, warp));
}

TEST(Crop, TallCropsTurnCounterClockwise) {
  cv::Mat img(200, 100, CV_8UC3, cv::Scalar(255, 255, 255));
  img(cv::Rect(10, 10, 30, 40)).setTo(cv::Scalar(0, 0, 0));  // dark at the top of a 30 x 150 column
  Quad q = {cv::Point2f(10, 10), cv::Point2f(40, 10), cv::Point2f(40, 160), cv::Point2f(10, 160)};
  cv::Mat c = crop_text_region(img, q);
  ASSERT_EQ(c.cols, 150);
  ASSERT_EQ(c.rows, 30);
  // np.rot90: the top of the column ends up on the left.
  EXPECT_LT(cv::mean(c(cv::Rect(0, 0, 30, 30)))[0], 10);
  EXPECT_GT(cv::mean(c(cv::Rect(100, 0, 50, 30)))[0], 245);
  // Just under 1.5x stays as it is.
  Quad q2 = {cv::Point2f(10, 10), cv::Point2f(40, 10), cv::Point2f(40, 54), cv::Point2f(10, 54)};
  EXPECT_EQ(crop_text_region(img, q2).rows, 44);
}

TEST(RecPreprocess, BatchWidthIsAtLeastTheMinimumAndFollowsTheWidestCrop) {
  RecOptions o;
  EXPECT_EQ(rec_batch_width(2.0, o), 320);
  EXPECT_EQ(rec_batch_width(320 / 48.0, o), 320);
  EXPECT_EQ(rec_batch_width(10.0, o), 480);
  EXPECT_EQ(rec_batch_width(10.01, o), 480);  // int(48 * 10.01) = int(480.48)
  o.min_width = 100;
  EXPECT_EQ(rec_batch_width(1.0, o), 100);
}

TEST(RecPreprocess, ResizesToHeightKeepsRatioAndZeroPads) {
  cv::Mat crop(24, 50, CV_8UC3, cv::Scalar(255, 0, 127));
  const int h = 48, w = 320;
  std::vector<float> buf(3 * h * w, 7.f);
  rec_normalize(crop, h, w, buf.data());
  // ceil(48 * 50 / 24) = 100 columns of image, then zeros.
  auto at = [&](int c, int y, int x) { return buf[(c * h + y) * w + x]; };
  EXPECT_FLOAT_EQ(at(0, 10, 50), 1.f);         // 255 -> 1
  EXPECT_FLOAT_EQ(at(1, 10, 50), -1.f);        // 0 -> -1
  EXPECT_NEAR(at(2, 10, 99), -0.00392, 1e-4);  // 127 -> 127/255*2-1
  EXPECT_FLOAT_EQ(at(0, 10, 100), 0.f);
  EXPECT_FLOAT_EQ(at(2, 47, 319), 0.f);
  // Wider than the batch: squeezed to the batch width.
  cv::Mat wide(10, 1000, CV_8UC3, cv::Scalar(255, 255, 255));
  rec_normalize(wide, h, w, buf.data());
  EXPECT_FLOAT_EQ(at(0, 0, 319), 1.f);
}

}  // namespace
}  // namespace steadyocr::pipeline

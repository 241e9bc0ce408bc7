// The orchestrator with stand-in models: modes, drop-score, ordering and timings without real inference.
#include <gtest/gtest.h>

#include <atomic>

#include "pipeline/pipeline.h"

namespace steadyocr::pipeline {
namespace {

// A detector whose map marks fixed rectangles (in input coordinates); records the input shape.
class FakeDet : public runtime::Runner {
 public:
  Result<Tensor> run(const Tensor& input) override {
    last_shape = input.shape();
    const int64_t h = input.dim(2), w = input.dim(3);
    Tensor out = Tensor::zeros(DType::kF32, {1, 1, h, w});
    float* p = out.data<float>();
    auto fill = [&](int x0, int y0, int x1, int y1) {
      for (int y = y0; y <= y1; ++y)
        for (int x = x0; x <= x1; ++x) p[y * w + x] = 0.9f;
    };
    fill(20, 20, 200, 40);   // line 1
    fill(20, 80, 120, 100);  // line 2
    return out;
  }
  std::string backend_name() const override { return "fake"; }
  Shape last_shape;
};

// A recogniser reading every crop as "ab" with a score that depends on the crop's width: wide crops score
// 0.9, narrow ones 0.3 (so drop-score can be seen working).
class FakeRec : public runtime::Runner {
 public:
  Result<Tensor> run(const Tensor& input) override {
    ++calls;
    const int64_t n = input.dim(0), steps = 4, classes = 4;  // blank a b ' '
    Tensor out = Tensor::zeros(DType::kF32, {n, steps, classes});
    for (int64_t b = 0; b < n; ++b) {
      // Count non-padded columns of this item: padding is exactly 0 in every channel.
      const float* img = input.data<float>() + b * input.dim(1) * input.dim(2) * input.dim(3);
      int64_t used = 0;
      for (int64_t x = 0; x < input.dim(3); ++x) used += img[x] != 0.f;
      float s = used > 200 ? 0.9f : 0.3f;
      float* o = out.data<float>() + b * steps * classes;
      int seq[4] = {1, 0, 2, 2};
      for (int t = 0; t < steps; ++t) {
        for (int c = 0; c < classes; ++c) o[t * classes + c] = (1 - s) / 3;
        o[t * classes + seq[t]] = s;
      }
    }
    return out;
  }
  std::string backend_name() const override { return "fake"; }
  std::atomic<int> calls{0};
};

cv::Mat page() {
  return cv::Mat(120, 240, CV_8UC3, cv::Scalar(200, 200, 200));
}

TEST(PipelineFake, FullModeReadsBoxesInOrderAndDropsLowScores) {
  auto det = std::make_shared<FakeDet>();
  auto rec = std::make_shared<FakeRec>();
  PipelineOptions o;
  Pipeline p(det, rec, nullptr, Dictionary::from_lines({"a", "b"}), o);
  auto r = p.run(page());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  // 240 x 120 -> det input 256 x 128: 240 / 32 = 7.5 rounds half to even, to 8.
  EXPECT_EQ(det->last_shape, (Shape{1, 3, 128, 256}));
  ASSERT_EQ(r->lines.size(), 1u);  // the short line scores 0.3 < 0.5
  EXPECT_EQ(r->lines[0].text, "ab");
  EXPECT_NEAR(r->lines[0].score, 0.9, 1e-6);
  EXPECT_EQ(r->backend, "fake");
  EXPECT_GT(r->timings.det, 0);
  EXPECT_DOUBLE_EQ(r->timings.cls, 0);
  EXPECT_NEAR(r->timings.total, r->timings.det + r->timings.post + r->timings.rec, 1e-9);

  o.drop_score = 0.2f;
  Pipeline lenient(det, rec, nullptr, Dictionary::from_lines({"a", "b"}), o);
  auto all = lenient.run(page());
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->lines.size(), 2u);
  EXPECT_LT(all->lines[0].box[0].y, all->lines[1].box[0].y);
}

TEST(PipelineFake, DetOnlyGivesBoxesWithoutText) {
  PipelineOptions o;
  o.mode = OcrMode::kDetOnly;
  Pipeline p(std::make_shared<FakeDet>(), nullptr, nullptr, Dictionary(), o);
  auto r = p.run(page());
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->lines.size(), 2u);
  EXPECT_EQ(r->lines[0].text, "");
  EXPECT_NEAR(r->lines[0].score, 0.9, 1e-5);
}

TEST(PipelineFake, RecOnlyReadsTheWholePicture) {
  PipelineOptions o;
  o.mode = OcrMode::kRecOnly;
  auto rec = std::make_shared<FakeRec>();
  Pipeline p(nullptr, rec, nullptr, Dictionary::from_lines({"a", "b"}), o);
  cv::Mat line(32, 300, CV_8UC3, cv::Scalar(255, 255, 255));
  auto r = p.run(line);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->lines.size(), 1u);
  EXPECT_EQ(r->lines[0].text, "ab");
  EXPECT_FLOAT_EQ(r->lines[0].box[2].x, 300);
  EXPECT_FLOAT_EQ(r->lines[0].box[2].y, 32);
  EXPECT_EQ(rec->calls.load(), 1);
}

TEST(PipelineFake, DictionaryMismatchIsAClearError) {
  PipelineOptions o;
  Pipeline p(std::make_shared<FakeDet>(), std::make_shared<FakeRec>(), nullptr, Dictionary::from_lines({"a"}), o);
  auto r = p.run(page());
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("outputs 4 classes"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("--dict"), std::string::npos);
}

TEST(PipelineFake, RunManyKeepsOrderAndIsolatesBadInputs) {
  Pipeline p(std::make_shared<FakeDet>(), std::make_shared<FakeRec>(), nullptr, Dictionary::from_lines({"a", "b"}),
             PipelineOptions{});
  std::vector<cv::Mat> imgs = {page(), cv::Mat(), page()};
  auto rs = p.run_many(imgs);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_TRUE(rs[0].is_ok());
  EXPECT_FALSE(rs[1].is_ok());
  EXPECT_TRUE(rs[2].is_ok());
}

TEST(PipelineFake, PerImageOptionsChangeOnlyTheirImage) {
  auto det = std::make_shared<FakeDet>();
  Pipeline p(det, std::make_shared<FakeRec>(), nullptr, Dictionary::from_lines({"a", "b"}), PipelineOptions{});
  std::vector<cv::Mat> imgs = {page(), page(), page(), page(), page(), page()};
  std::vector<ImageOptions> opts(imgs.size());
  opts[1].drop_score = 0.2f;         // keeps the short line too
  opts[2].mode = OcrMode::kDetOnly;  // boxes, no text
  opts[3].det_box_thresh = 0.95;     // every box (mean 0.9) refused
  opts[4].use_cls = true;            // no classifier loaded: refused, naming it
  opts[5].mode = OcrMode::kRecOnly;  // the whole picture as one line
  auto rs = p.run_many(imgs, &opts);
  ASSERT_EQ(rs.size(), imgs.size());
  ASSERT_TRUE(rs[0].is_ok());
  EXPECT_EQ(rs[0]->lines.size(), 1u);
  ASSERT_TRUE(rs[1].is_ok());
  EXPECT_EQ(rs[1]->lines.size(), 2u);
  ASSERT_TRUE(rs[2].is_ok());
  ASSERT_EQ(rs[2]->lines.size(), 2u);
  EXPECT_EQ(rs[2]->lines[0].text, "");
  ASSERT_TRUE(rs[3].is_ok());
  EXPECT_TRUE(rs[3]->lines.empty());
  ASSERT_FALSE(rs[4].is_ok());
  EXPECT_EQ(rs[4].status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(rs[4].status().message().find("angle classifier"), std::string::npos) << rs[4].status().message();
  ASSERT_TRUE(rs[5].is_ok());
  ASSERT_EQ(rs[5]->lines.size(), 1u);
  EXPECT_FLOAT_EQ(rs[5]->lines[0].box[2].x, 240);
  // The pipeline's own options are untouched: the next plain run drops the short line again.
  auto again = p.run(page());
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(again->lines.size(), 1u);

  PipelineOptions boxes_only;
  boxes_only.mode = OcrMode::kDetOnly;
  Pipeline det_only(det, nullptr, nullptr, Dictionary(), boxes_only);
  std::vector<ImageOptions> full(1);
  full[0].mode = OcrMode::kFull;
  auto r = det_only.run_many({page()}, &full);
  ASSERT_FALSE(r[0].is_ok());
  EXPECT_NE(r[0].status().message().find("recognition model"), std::string::npos) << r[0].status().message();
}

}  // namespace
}  // namespace steadyocr::pipeline

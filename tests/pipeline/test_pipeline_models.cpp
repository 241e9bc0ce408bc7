// End to end on the real PP-OCR models: synthetic documents read exactly as their generator wrote them, and
// every decode fixture (formats, EXIF, transparency) read as the same line.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <fstream>

#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "runtime/backend_registry.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

const char* kLine = "receipt2026";  // the text of every tests/data/ocr/decode/line* fixture

std::string data_dir() {
  return testing::source_dir() + "/tests/data/ocr";
}

// One pipeline per mode for the whole suite: loading and planning the models is the slow part.
class PipelineModels : public ::testing::Test {
 protected:
  static const Pipeline& get(OcrMode mode, bool cls = false) {
    static std::map<std::pair<OcrMode, bool>, std::unique_ptr<Pipeline>> cache;
    auto key = std::make_pair(mode, cls);
    if (!cache[key]) {
      auto backend = runtime::create_backend(runtime::available_backends().front());
      EXPECT_TRUE(backend.is_ok()) << backend.status().to_string();
      PipelineOptions o;
      o.mode = mode;
      o.use_cls = cls;
      auto p = Pipeline::load(model_paths_in(testing::models_dir()), backend.value(), o);
      EXPECT_TRUE(p.is_ok()) << p.status().to_string();
      cache[key] = std::move(p).value();
    }
    return *cache[key];
  }
  void SetUp() override { SO_REQUIRE_MODELS(); }
};

std::vector<std::string> texts(const OcrResult& r) {
  std::vector<std::string> t;
  for (const auto& l : r.lines) t.push_back(l.text);
  return t;
}

double iou(const Quad& a, const std::vector<cv::Point2f>& b) {
  std::vector<cv::Point2f> pa(a.begin(), a.end()), inter;
  float i = cv::intersectConvexConvex(pa, b, inter);
  double u = cv::contourArea(pa) + cv::contourArea(b) - i;
  return u > 0 ? i / u : 0;
}

TEST_F(PipelineModels, SyntheticDocumentsReadExactlyAsGenerated) {
  std::ifstream labels(data_dir() + "/docs/labels.txt");
  ASSERT_TRUE(labels) << "missing " << data_dir() << "/docs/labels.txt";
  std::string row;
  int images = 0;
  while (std::getline(labels, row)) {
    if (row.empty()) continue;
    const std::string name = row.substr(0, row.find('\t'));
    auto gt = nlohmann::json::parse(row.substr(row.find('\t') + 1));
    auto img = load_image(data_dir() + "/docs/" + name);
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    auto r = get(OcrMode::kFull).run(img->bgr);
    ASSERT_TRUE(r.is_ok()) << name << ": " << r.status().to_string();
    std::vector<std::string> want;
    for (const auto& l : gt) want.push_back(l["transcription"]);
    EXPECT_EQ(texts(*r), want) << name;
    // Boxes in reading order cover the generator's boxes.
    for (size_t i = 0; i < std::min(gt.size(), r->lines.size()); ++i) {
      std::vector<cv::Point2f> box;
      for (const auto& p : gt[i]["points"]) box.emplace_back(p[0].get<float>(), p[1].get<float>());
      EXPECT_GE(iou(r->lines[i].box, box), 0.5) << name << " line " << i;
    }
    EXPECT_GT(r->timings.det, 0);
    EXPECT_GT(r->timings.rec, 0);
    ++images;
  }
  EXPECT_GE(images, 2);
}

TEST_F(PipelineModels, EveryDecodeFixtureReadsTheSameLine) {
  for (const char* f : {"line.jpg", "line.bmp", "line.webp", "line.tif", "line_gray.png", "line_gray16.png",
                        "line_palette.png", "line_exif6.jpg", "rgba_dark_text.png", "rgba_white_text.png"}) {
    auto img = load_image(data_dir() + "/decode/" + f);
    ASSERT_TRUE(img.is_ok()) << img.status().to_string();
    auto r = get(OcrMode::kFull).run(img->bgr);
    ASSERT_TRUE(r.is_ok()) << f << ": " << r.status().to_string();
    EXPECT_EQ(texts(*r), std::vector<std::string>{kLine}) << f;
  }
}

TEST_F(PipelineModels, TransparencyWithoutFlatteningWouldBeUnreadable) {
  // The reason for contrast-aware flattening: dropping alpha leaves white on white.
  cv::Mat bgra = cv::imread(data_dir() + "/decode/rgba_white_text.png", cv::IMREAD_UNCHANGED), bgr;
  ASSERT_EQ(bgra.channels(), 4);
  cv::cvtColor(bgra, bgr, cv::COLOR_BGRA2BGR);
  auto r = get(OcrMode::kFull).run(bgr);
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->lines.empty());
}

TEST_F(PipelineModels, RecOnlyReadsALineImage) {
  auto img = load_image(data_dir() + "/decode/line_gray.png");
  ASSERT_TRUE(img.is_ok());
  auto r = get(OcrMode::kRecOnly).run(img->bgr);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->lines.size(), 1u);
  EXPECT_EQ(r->lines[0].text, kLine);
  EXPECT_GT(r->lines[0].score, 0.9);
  EXPECT_DOUBLE_EQ(r->timings.det, 0);
}

TEST_F(PipelineModels, DetOnlyFindsTheLinesWithoutReadingThem) {
  auto img = load_image(data_dir() + "/decode/line.webp");
  ASSERT_TRUE(img.is_ok());
  auto r = get(OcrMode::kDetOnly).run(img->bgr);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->lines.size(), 1u);
  EXPECT_EQ(r->lines[0].text, "");
  EXPECT_GT(r->lines[0].score, 0.6);
  EXPECT_DOUBLE_EQ(r->timings.rec, 0);
}

TEST_F(PipelineModels, AngleClassifierTurnsAnUpsideDownLine) {
  auto img = load_image(data_dir() + "/decode/line_gray.png");
  ASSERT_TRUE(img.is_ok());
  cv::Mat flipped;
  cv::rotate(img->bgr, flipped, cv::ROTATE_180);
  auto with_cls = get(OcrMode::kFull, true).run(flipped);
  ASSERT_TRUE(with_cls.is_ok()) << with_cls.status().to_string();
  EXPECT_EQ(texts(*with_cls), std::vector<std::string>{kLine});
  EXPECT_GT(with_cls->timings.cls, 0);
  auto without = get(OcrMode::kFull).run(flipped);
  ASSERT_TRUE(without.is_ok());
  EXPECT_NE(texts(*without), std::vector<std::string>{kLine});
}

TEST_F(PipelineModels, WrongDictionaryIsRefusedAtLoad) {
  std::string dict = ::testing::TempDir() + "/ten_chars.txt";
  {
    std::ofstream f(dict);
    for (int i = 0; i < 10; ++i) f << static_cast<char>('a' + i) << "\n";
  }
  ModelPaths paths = model_paths_in(testing::models_dir());
  paths.dict = dict;
  auto backend = runtime::create_backend("reference");
  ASSERT_TRUE(backend.is_ok());
  auto p = Pipeline::load(paths, backend.value(), {});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("6625 output classes"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find(dict), std::string::npos);
}

TEST(PipelineLoad, MissingModelNamesThePathAndTheFix) {
  auto backend = runtime::create_backend("reference");
  ASSERT_TRUE(backend.is_ok());
  auto p = Pipeline::load(model_paths_in("/nonexistent/models"), backend.value(), {});
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kNotFound);
  EXPECT_NE(p.status().message().find("/nonexistent/models/ch_PP-OCRv4_det_infer.onnx"), std::string::npos);
  EXPECT_NE(p.status().message().find("--models"), std::string::npos);
}

}  // namespace
}  // namespace steadyocr::pipeline

// The detector's input as bytes (pipeline::DetTensor::kBytes, runtime::ModelOptions::image_lut), and the
// recogniser's with a mask for its padding (RecOptions::bytes, ModelOptions::image_lut_masked): normalised on the
// backend by the host's own table, they give exactly what the host's floats give.
#include <gtest/gtest.h>

#include <opencv2/core.hpp>

#include <cstring>

#include "backends/reference/reference_backend.h"
#include "pipeline/det_preprocess.h"
#include "pipeline/recognizer.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

using runtime::create_backend;
using runtime::Model;
using runtime::model_input_dtype;
using runtime::ModelOptions;

// A detector that takes bytes (ModelOptions::image_lut, the table det_preprocess normalises with) computes, from the
// resized picture's bytes, exactly what the plain model computes from the host's floats; the generic passes keep it;
// a table that does not fit is refused.
TEST(DetBytes, ImageBytesThroughTheTableAreTheHostsFloats) {
  SO_REQUIRE_MODELS();
  const std::string path = steadyocr::testing::models_dir() + "/ch_PP-OCRv4_det_infer.onnx";
  std::shared_ptr<Backend> ref(make_reference_backend());
  ModelOptions bytes;
  bytes.image_lut = det_normalize_table();
  bytes.reuse_generic_passes = true;
  auto plain = Model::load(path, ref, {});
  auto lut = Model::load(path, ref, bytes);
  ASSERT_TRUE(plain.is_ok() && lut.is_ok()) << lut.status().to_string();
  ASSERT_TRUE((*lut)->options().image_lut.defined());
  EXPECT_EQ(model_input_dtype((*lut)->graph()), DType::kU8);
  EXPECT_TRUE((*lut)->stats().generic_passes);
  cv::Mat page(70, 150, CV_8UC3);
  cv::randu(page, 0, 256);
  const DetInput f = det_preprocess(page, 960);
  const DetInput u = det_preprocess(page, 960, 0, DetTensor::kBytes);
  ASSERT_EQ(u.tensor.shape(), (Shape{1, f.input_h, f.input_w, 3}));
  auto a = (*plain)->run(f.tensor);
  auto b = (*lut)->run(u.tensor);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  ASSERT_EQ(a->shape(), b->shape());
  EXPECT_EQ(std::memcmp(a->data<float>(), b->data<float>(), a->numel() * sizeof(float)), 0)
      << "the byte path differs: " << steadyocr::testing::compare(*b, *a).describe();
  auto wrong = (*lut)->run(f.tensor);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("must be u8"), std::string::npos) << wrong.status().to_string();

  ModelOptions bad;
  bad.image_lut = Tensor::empty(DType::kF32, {4, 256});
  auto refused = Model::load(path, ref, bad);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument) << refused.status().to_string();
}

// A backend without ImageLut (the cpu backend) keeps the float input, with an INFO line.
TEST(DetBytes, ABackendWithoutImageLutKeepsFloats) {
  SO_REQUIRE_MODELS();
  const std::string path = steadyocr::testing::models_dir() + "/ch_PP-OCRv4_det_infer.onnx";
  auto cpu = create_backend("cpu");
  if (!cpu.is_ok()) GTEST_SKIP() << "no cpu backend in this build: " << cpu.status().to_string();
  ModelOptions bytes;
  bytes.image_lut = det_normalize_table();
  auto on_cpu = Model::load(path, *cpu, bytes);
  ASSERT_TRUE(on_cpu.is_ok()) << on_cpu.status().to_string();
  EXPECT_FALSE((*on_cpu)->options().image_lut.defined());  // the cpu backend does not run ImageLut
  EXPECT_EQ(model_input_dtype((*on_cpu)->graph()), DType::kF32);
}

TEST(DetBytes, BytesAreTheResizedPictureAndTheTableIsTheNormalisation) {
  cv::Mat page(41, 1300, CV_8UC3);
  cv::randu(page, 0, 256);
  const DetInput f = det_preprocess(page, 960);
  const DetInput u = det_preprocess(page, 960, 0, DetTensor::kBytes);
  ASSERT_EQ(u.tensor.dtype(), DType::kU8);
  ASSERT_EQ(f.tensor.shape(), (Shape{1, 3, f.input_h, f.input_w}));
  ASSERT_EQ(u.tensor.shape(), (Shape{1, f.input_h, f.input_w, 3}));
  EXPECT_EQ(u.resized_h, f.resized_h);
  EXPECT_EQ(u.resized_w, f.resized_w);
  const Tensor lut = det_normalize_table();
  ASSERT_EQ(lut.shape(), (Shape{3, 256}));
  const int64_t hw = int64_t{f.input_h} * f.input_w;
  int64_t differ = 0;
  for (int64_t p = 0; p < hw; ++p) {
    for (int c = 0; c < 3; ++c) {
      const float want = f.tensor.data<float>()[c * hw + p];
      const float got = lut.data<float>()[c * 256 + u.tensor.data<uint8_t>()[p * 3 + c]];
      differ += std::memcmp(&want, &got, sizeof(float)) != 0;
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_NEAR(lut.data<float>()[0], (0.f - 0.485f) / 0.229f, 1e-6);
  EXPECT_NEAR(lut.data<float>()[2 * 256 + 255], (1.f - 0.406f) / 0.225f, 1e-6);
}

// Two rows of different crops (one narrower than the call, one as wide) as masked bytes: the recogniser computes from
// them exactly what it computes from the host's floats (zero padding included); unmasked bytes of the same model are
// refused (the model takes four bytes per pixel).
TEST(RecBytes, MaskedRowsThroughTheTableAreTheHostsFloats) {
  SO_REQUIRE_MODELS();
  const std::string path = steadyocr::testing::models_dir() + "/ch_PP-OCRv4_rec_infer.onnx";
  std::shared_ptr<Backend> ref(make_reference_backend());
  ModelOptions bytes;
  bytes.image_lut = rec_normalize_table();
  bytes.image_lut_masked = true;
  auto plain = Model::load(path, ref, {});
  auto lut = Model::load(path, ref, bytes);
  ASSERT_TRUE(plain.is_ok() && lut.is_ok()) << lut.status().to_string();
  ASSERT_TRUE((*lut)->options().image_lut.defined());
  EXPECT_EQ(model_input_dtype((*lut)->graph()), DType::kU8);
  cv::Mat narrow(30, 40, CV_8UC3), wide(24, 170, CV_8UC3);
  cv::randu(narrow, 0, 256);
  cv::randu(wide, 0, 256);
  const int h = 48, w = 96;
  Tensor f = rec_input(false, 3, h, w, 2), u = rec_input(true, 3, h, w, 2);  // the third row is padding
  ASSERT_EQ(u.shape(), (Shape{3, h, w, 4}));
  int row = 0;
  for (const cv::Mat* crop : {&narrow, &wide}) {
    rec_fill_row(f, row, *crop, RecInterp::kLanczos);
    rec_fill_row(u, row, *crop, RecInterp::kLanczos);
    ++row;
  }
  auto a = (*plain)->run(f);
  auto b = (*lut)->run(u);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  ASSERT_EQ(a->shape(), b->shape());
  EXPECT_EQ(std::memcmp(a->data<float>(), b->data<float>(), a->numel() * sizeof(float)), 0)
      << "the byte path differs: " << steadyocr::testing::compare(*b, *a).describe();
  auto wrong = (*lut)->run(f);
  ASSERT_FALSE(wrong.is_ok());
  EXPECT_NE(wrong.status().message().find("must be u8"), std::string::npos) << wrong.status().to_string();
}

TEST(RecBytes, BytesAreTheResizedCropWithAMaskAndTheTableIsTheNormalisation) {
  cv::Mat crop(20, 37, CV_8UC3);
  cv::randu(crop, 0, 256);
  const int h = 48, w = 120;
  std::vector<float> f(3 * h * w, -7.f);
  std::vector<uint8_t> u(h * w * 4, 7);
  rec_normalize(crop, h, w, f.data(), RecInterp::kCubic);
  rec_bytes(crop, h, w, u.data(), RecInterp::kCubic);
  const Tensor lut = rec_normalize_table();
  ASSERT_EQ(lut.shape(), (Shape{3, 256}));
  const int resized_w = 89;  // ceil(48 * 37 / 20)
  int64_t differ = 0, masked = 0;
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const uint8_t* px = &u[(y * w + x) * 4];
      EXPECT_EQ(px[3], x < resized_w ? 255 : 0) << y << "," << x;
      masked += px[3] == 0;
      for (int c = 0; c < 3; ++c) {
        const float want = f[(c * h + y) * w + x];
        const float got = px[3] == 0 ? 0.f : lut.data<float>()[c * 256 + px[c]];
        differ += std::memcmp(&want, &got, sizeof(float)) != 0;
        if (px[3] == 0) EXPECT_EQ(px[c], 0);
      }
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(masked, int64_t{h} * (w - resized_w));
  EXPECT_FLOAT_EQ(lut.data<float>()[0], -1.f);
  EXPECT_FLOAT_EQ(lut.data<float>()[2 * 256 + 255], 1.f);
}

}  // namespace
}  // namespace steadyocr::pipeline

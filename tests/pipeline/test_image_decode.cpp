// Decoding: formats, EXIF orientation, alpha flattening, limits from the header, damaged files.
#include <gtest/gtest.h>

#include <opencv2/imgproc.hpp>

#include "pipeline/image_decode.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

std::string fixture(const std::string& name) {
  return testing::source_dir() + "/tests/data/ocr/decode/" + name;
}

// Mean of the grey level over a region of a BGR picture.
double mean_grey(const cv::Mat& bgr, cv::Rect r) {
  cv::Mat grey;
  cv::cvtColor(bgr(r), grey, cv::COLOR_BGR2GRAY);
  return cv::mean(grey)[0];
}

TEST(ImageHeader, ParsesEveryFormatsDimensions) {
  struct Case {
    const char* file;
    ImageFormat format;
  } cases[] = {{"line.jpg", ImageFormat::kJpeg},       {"line_gray.png", ImageFormat::kPng},
               {"line.bmp", ImageFormat::kBmp},        {"line.webp", ImageFormat::kWebp},
               {"line.tif", ImageFormat::kTiff},       {"line.gif", ImageFormat::kGif},
               {"line_gray16.png", ImageFormat::kPng}, {"line_palette.png", ImageFormat::kPng}};
  auto ref = load_image(fixture("line_gray.png"));
  ASSERT_TRUE(ref.is_ok()) << ref.status().to_string();
  for (const auto& c : cases) {
    auto bytes = read_file_bytes(fixture(c.file), 1 << 20);
    ASSERT_TRUE(bytes.is_ok()) << c.file;
    auto h = parse_image_header(bytes->data(), bytes->size());
    ASSERT_TRUE(h.is_ok()) << c.file << ": " << h.status().to_string();
    EXPECT_EQ(h->format, c.format) << c.file;
    EXPECT_EQ(h->width, ref->bgr.cols) << c.file;
    EXPECT_EQ(h->height, ref->bgr.rows) << c.file;
  }
}

TEST(ImageHeader, ReadsExifOrientationOfJpegPngAndTiff) {
  for (const char* f : {"probe_exif6.jpg", "probe_exif6.png", "probe_exif6.tif"}) {
    auto bytes = read_file_bytes(fixture(f), 1 << 20);
    ASSERT_TRUE(bytes.is_ok());
    auto h = parse_image_header(bytes->data(), bytes->size());
    ASSERT_TRUE(h.is_ok()) << f;
    EXPECT_EQ(h->orientation, 6) << f;
    EXPECT_EQ(h->width, 80) << f;
    EXPECT_EQ(h->height, 40) << f;
  }
}

TEST(ImageHeader, HandBuiltHeaders) {
  // Big-endian TIFF with ImageWidth as SHORT and ImageLength as LONG.
  const uint8_t tiff[] = {'M', 'M', 0, 42, 0, 0, 0, 8,                           // header, IFD at 8
                          0,   2,                                                // two entries
                          1,   0,   0, 3,  0, 0, 0, 1, 0x01, 0x2c, 0,    0,      // 256 SHORT 300
                          1,   1,   0, 4,  0, 0, 0, 1, 0,    0,    0x02, 0x58};  // 257 LONG 600
  auto t = parse_image_header(tiff, sizeof(tiff));
  ASSERT_TRUE(t.is_ok()) << t.status().to_string();
  EXPECT_EQ(t->width, 300);
  EXPECT_EQ(t->height, 600);
  // A classic TIFF whose last entry is ImageWidth as LONG8: its 8 bytes do not fit the 4-byte value field, so it is
  // not read inline (it was: 4 bytes past the data, which here would make the width 300; fuzz_decode).
  const uint8_t long8[] = {'I',  'I', 42, 0, 8, 0, 0, 0,   // header, IFD at 8
                           2,    0,                        // two entries
                           1,    1,   3,  0, 1, 0, 0, 0,   // 257 SHORT 40
                           40,   0,   0,  0,               //
                           0,    1,   16, 0, 1, 0, 0, 0,   // 256 LONG8, count 1
                           0x2c, 1,   0,  0,               // the 4-byte value field
                           0,    0,   0,  0, 0, 0, 0, 0};  // beyond the size passed
  auto cut = parse_image_header(long8, 34);
  ASSERT_FALSE(cut.is_ok()) << "width " << cut->width;
  EXPECT_NE(cut.status().message().find("ImageWidth"), std::string::npos) << cut.status().to_string();
  // WebP VP8X: canvas 5000 x 7000 with alpha.
  uint8_t webp[30] = {'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0, 0x10};
  const uint32_t w = 5000 - 1, h = 7000 - 1;
  webp[24] = w & 0xff, webp[25] = (w >> 8) & 0xff, webp[26] = w >> 16;
  webp[27] = h & 0xff, webp[28] = (h >> 8) & 0xff, webp[29] = h >> 16;
  auto v = parse_image_header(webp, sizeof(webp));
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->width, 5000);
  EXPECT_EQ(v->height, 7000);
  EXPECT_TRUE(v->has_alpha);
  // Cut-short headers are data loss, not a crash, for every length.
  auto png = read_file_bytes(fixture("line_gray.png"), 1 << 20);
  ASSERT_TRUE(png.is_ok());
  for (size_t n = 1; n < 33; ++n) EXPECT_FALSE(parse_image_header(png->data(), n).is_ok()) << n;
  auto jpg = read_file_bytes(fixture("line.jpg"), 1 << 20);
  ASSERT_TRUE(jpg.is_ok());
  for (size_t n = 3; n < 200; ++n) {  // from 3 bytes on it is recognisably a JPEG
    auto r = parse_image_header(jpg->data(), n);
    if (!r.is_ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << n;
    }
  }
}

TEST(ImageDecode, EveryFormatGivesTheSameUprightBgrPicture) {
  auto ref = load_image(fixture("line_gray.png"));
  ASSERT_TRUE(ref.is_ok());
  for (const char* f :
       {"line.bmp", "line.webp", "line.tif", "line_gray16.png", "line_palette.png", "line.jpg", "line_exif6.jpg"}) {
    auto img = load_image(fixture(f));
    ASSERT_TRUE(img.is_ok()) << f << ": " << img.status().to_string();
    ASSERT_EQ(img->bgr.type(), CV_8UC3) << f;
    ASSERT_EQ(img->bgr.size(), ref->bgr.size()) << f;
    cv::Mat diff;
    cv::absdiff(img->bgr, ref->bgr, diff);
    // Lossless formats match exactly (16-bit: within rounding); JPEG within compression noise.
    double tolerance = std::string(f).find(".jpg") != std::string::npos ? 6.0 : 0.6;
    EXPECT_LE(cv::mean(diff)[0], tolerance) << f;
  }
}

TEST(ImageDecode, AppliesExifOrientationInEveryFormat) {
  for (const char* f : {"probe_exif6.jpg", "probe_exif6.png", "probe_exif6.tif"}) {
    auto img = load_image(fixture(f));
    ASSERT_TRUE(img.is_ok()) << f << ": " << img.status().to_string();
    // Stored 80x40 with a black left half; orientation 6 turns it clockwise: 40x80 with a black top half.
    ASSERT_EQ(img->bgr.cols, 40) << f;
    ASSERT_EQ(img->bgr.rows, 80) << f;
    EXPECT_LT(mean_grey(img->bgr, {0, 0, 40, 38}), 10) << f;
    EXPECT_GT(mean_grey(img->bgr, {0, 42, 40, 38}), 245) << f;
  }
}

TEST(ImageDecode, FlattensTransparencyOntoAContrastingBackground) {
  auto dark = load_image(fixture("rgba_dark_text.png"));
  ASSERT_TRUE(dark.is_ok()) << dark.status().to_string();
  EXPECT_TRUE(dark->alpha_flattened);
  EXPECT_FALSE(dark->flattened_on_black);
  auto white = load_image(fixture("rgba_white_text.png"));
  ASSERT_TRUE(white.is_ok()) << white.status().to_string();
  EXPECT_TRUE(white->alpha_flattened);
  EXPECT_TRUE(white->flattened_on_black);
  // Both become the same picture as the opaque line, up to polarity: dark text on white, white on black.
  auto ref = load_image(fixture("line_gray.png"));
  ASSERT_TRUE(ref.is_ok());
  cv::Mat inverted = cv::Scalar::all(255) - white->bgr, d1, d2;
  cv::absdiff(dark->bgr, ref->bgr, d1);
  cv::absdiff(inverted, ref->bgr, d2);
  EXPECT_LE(cv::mean(d1)[0], 0.6);
  EXPECT_LE(cv::mean(d2)[0], 0.6);
  EXPECT_EQ(dark->bgr.at<cv::Vec3b>(0, 0), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(white->bgr.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 0));
}

TEST(ImageDecode, FlattenAlphaBlendsPartialTransparency) {
  cv::Mat bgra(1, 3, CV_8UC4);
  bgra.at<cv::Vec4b>(0, 0) = {0, 0, 0, 255};   // opaque black ink
  bgra.at<cv::Vec4b>(0, 1) = {0, 0, 0, 128};   // half-covered ink
  bgra.at<cv::Vec4b>(0, 2) = {50, 50, 50, 0};  // fully transparent: background only
  bool on_black = true;
  cv::Mat out = flatten_alpha(bgra, &on_black);
  EXPECT_FALSE(on_black);
  EXPECT_EQ(out.at<cv::Vec3b>(0, 0), cv::Vec3b(0, 0, 0));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 1), cv::Vec3b(127, 127, 127));
  EXPECT_EQ(out.at<cv::Vec3b>(0, 2), cv::Vec3b(255, 255, 255));
  // Fully opaque: alpha simply dropped.
  cv::Mat opaque(2, 2, CV_8UC4, cv::Scalar(200, 10, 30, 255));
  EXPECT_EQ(flatten_alpha(opaque).at<cv::Vec3b>(1, 1), cv::Vec3b(200, 10, 30));
}

struct BadFile {
  const char* file;
  StatusCode code;
  const char* says;  // part of the message
};

class ImageDecodeErrors : public ::testing::TestWithParam<BadFile> {};

TEST_P(ImageDecodeErrors, NameTheFileAndTheCause) {
  const BadFile& c = GetParam();
  auto img = load_image(fixture(c.file));
  ASSERT_FALSE(img.is_ok()) << c.file;
  EXPECT_EQ(img.status().code(), c.code) << img.status().to_string();
  EXPECT_NE(img.status().message().find(fixture(c.file)), std::string::npos) << img.status().message();
  EXPECT_NE(img.status().message().find(c.says), std::string::npos) << img.status().message();
}

INSTANTIATE_TEST_SUITE_P(Files, ImageDecodeErrors,
                         ::testing::Values(BadFile{"empty.jpg", StatusCode::kDataLoss, "empty"},
                                           BadFile{"truncated.jpg", StatusCode::kDataLoss, "end-of-image"},
                                           BadFile{"truncated.png", StatusCode::kDataLoss, "IEND"},
                                           BadFile{"not_an_image.png", StatusCode::kUnsupported, "not an image format"},
                                           BadFile{"line.gif", StatusCode::kUnsupported, "GIF"},
                                           BadFile{"huge_dims.png", StatusCode::kResourceExhausted, "100000x100000"},
                                           BadFile{"huge_dims.jpg", StatusCode::kResourceExhausted, "60000x60000"},
                                           BadFile{"no_such_file.png", StatusCode::kNotFound, "no such file"}));

TEST(ImageDecode, LimitsAreConfigurable) {
  DecodeLimits small;
  small.max_side = 100;
  auto img = load_image(fixture("line_gray.png"), small);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted);
  DecodeLimits few;
  few.max_pixels = 1000;
  EXPECT_FALSE(load_image(fixture("line.webp"), few).is_ok());
  DecodeLimits tiny_file;
  tiny_file.max_file_bytes = 100;
  EXPECT_EQ(load_image(fixture("line.bmp"), tiny_file).status().code(), StatusCode::kResourceExhausted);
}

TEST(ImageDecode, EveryPrefixOfAValidFileFailsCleanly) {
  // Truncation at any point must give an error or a picture, never a crash.
  for (const char* f : {"line.jpg", "line_gray.png", "line.webp", "line.bmp", "line.tif"}) {
    auto bytes = read_file_bytes(fixture(f), 1 << 20);
    ASSERT_TRUE(bytes.is_ok());
    size_t step = std::max<size_t>(1, bytes->size() / 97);
    for (size_t n = 0; n < bytes->size(); n += step) {
      auto img = decode_image(bytes->data(), n);
      if (img.is_ok()) {
        EXPECT_EQ(img->bgr.type(), CV_8UC3);
      }
    }
  }
}

}  // namespace
}  // namespace steadyocr::pipeline

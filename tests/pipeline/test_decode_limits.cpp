// Decode limits that hold under attack (issue 15): the JPEG scan limit (libjpeg progress monitor), the per-image
// decode deadline, PNG inflation bounded by the declared size, and damaged data as an error, never a padded picture.
#include <gtest/gtest.h>
#include <png.h>
#include <zlib.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <time.h>

#include <chrono>
#include <cstring>
#include <fstream>

#include "jpeg_craft.h"
#include "pipeline/image_decode.h"
#include "pipeline/jpeg_decode.h"
#include "pipeline/png_decode.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

using testing::encode_grey_jpeg;
using testing::many_scans_script;
using testing::repeat_last_scan;

std::string fixture(const std::string& name) {
  return testing::source_dir() + "/tests/data/ocr/decode/" + name;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// CPU time of the calling thread (the decode runs on it), in ms: what a hostile file costs, whatever the machine's
// load (wall time on a shared CI machine varies several-fold).
double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

Result<DecodedImage> decode(const std::vector<uint8_t>& b, const DecodeLimits& l = {}) {
  return decode_image(b.data(), b.size(), l);
}

// 4096x4096 grey, progressive (64 scans: each coefficient in one go), its last scan repeated up to 16,002 scans.
const std::vector<uint8_t>& issue15_attack() {
  static const std::vector<uint8_t> bytes = repeat_last_scan(encode_grey_jpeg(4096, 4096, many_scans_script(0)), 16002);
  return bytes;
}

TEST(DecodeLimits, CommittedManyScansJpegIsRefusedByTheScanLimit) {
  // tests/data/ocr/decode/many_scans.jpg: 64x64 grey, 694 valid progressive scans (many_scans_script(10)),
  // 23 KB, written by encode_grey_jpeg(64, 64, many_scans_script(10)) (jpeg_craft.h).
  auto bytes = read_file_bytes(fixture("many_scans.jpg"), 1 << 20);
  ASSERT_TRUE(bytes.is_ok()) << bytes.status().to_string();
  const auto t0 = std::chrono::steady_clock::now();
  auto img = decode(*bytes);
  const double ms = ms_since(t0);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted);
  ASSERT_TRUE(img.status().finding().has_value());
  EXPECT_EQ(img.status().finding()->code, kImageTooManyScans);
  EXPECT_TRUE(contains(img.status().message(), "JPEG has more than 100 scans")) << img.status().message();
  EXPECT_TRUE(contains(img.status().finding()->fix, "--max-jpeg-scans")) << img.status().finding()->fix;
  EXPECT_LT(ms, 500.0);
  // The file itself is valid: with the limit above its scan count it decodes to the gradient it holds.
  DecodeLimits generous;
  generous.max_jpeg_scans = 1000;
  auto ok = decode(*bytes, generous);
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->bgr.cols, 64);
  EXPECT_EQ(ok->bgr.rows, 64);
  EXPECT_NEAR(ok->bgr.at<cv::Vec3b>(10, 20)[1], 30, 3);
  generous.max_jpeg_scans = 693;  // one scan short
  EXPECT_EQ(decode(*bytes, generous).status().finding()->code, kImageTooManyScans);
}

TEST(DecodeLimits, IssueFifteensAttackIsRefusedInWellUnderThreeSeconds) {
  // As in issue 15: 4096x4096 progressive with 16,002 scans kept libjpeg-turbo busy for ~100 s. Built here (the
  // file is ~0.5 MB): a progressive encoding whose last scan is repeated.
  const std::vector<uint8_t>& attack = issue15_attack();
  DecodeLimits l;
  l.decode_deadline_ms = 0;  // the scan limit alone
  const double cpu0 = thread_cpu_ms();
  auto img = decode(attack, l);
  const double cpu_ms = thread_cpu_ms() - cpu0;
  ASSERT_FALSE(img.is_ok());
  ASSERT_TRUE(img.status().finding().has_value()) << img.status().to_string();
  EXPECT_EQ(img.status().finding()->code, kImageTooManyScans) << img.status().to_string();
  // 101 of 16,002 scans: about 1 s of CPU (1023 ms measured in the sanitizer build; libjpeg itself is not
  // instrumented); the whole file took ~100 s before the limit.
  EXPECT_LT(cpu_ms, 3000.0) << "the scan limit must stop the decode early";
  RecordProperty("decode_cpu_ms", std::to_string(cpu_ms));
}

TEST(DecodeLimits, DeadlineStopsAJpegDecodeThatTheScanLimitAllows) {
  const std::vector<uint8_t>& attack = issue15_attack();
  DecodeLimits l;
  l.max_jpeg_scans = 100000;  // no scan limit to speak of: the deadline is what stops it
  l.decode_deadline_ms = 300;
  const auto t0 = std::chrono::steady_clock::now();
  const double cpu0 = thread_cpu_ms();
  auto img = decode(attack, l);
  const double cpu_ms = thread_cpu_ms() - cpu0;
  const double ms = ms_since(t0);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted);  // never kDeadlineExceeded (a device's fault)
  ASSERT_TRUE(img.status().finding().has_value());
  EXPECT_EQ(img.status().finding()->code, kImageDecodeTimeout);
  EXPECT_TRUE(contains(img.status().message(), "decode deadline of 300 ms")) << img.status().message();
  EXPECT_TRUE(contains(img.status().finding()->fix, "--decode-deadline-ms"));
  EXPECT_GE(ms, 300.0);       // not before the deadline
  EXPECT_LT(cpu_ms, 1500.0);  // and soon after it: the whole decode would take ~20 s of CPU
  RecordProperty("decode_cpu_ms", std::to_string(cpu_ms));
  RecordProperty("decode_wall_ms", std::to_string(ms));
}

TEST(DecodeLimits, DeadlineStopsAPngDecode) {
  cv::Mat big(2048, 2048, CV_8UC3);
  cv::randu(big, 0, 255);  // incompressible: inflating it takes a while
  std::vector<uint8_t> png;
  ASSERT_TRUE(cv::imencode(".png", big, png, {cv::IMWRITE_PNG_COMPRESSION, 1}));
  DecodeLimits l;
  l.decode_deadline_ms = 1;
  auto img = decode(png, l);
  ASSERT_FALSE(img.is_ok());
  ASSERT_TRUE(img.status().finding().has_value()) << img.status().to_string();
  EXPECT_EQ(img.status().finding()->code, kImageDecodeTimeout);
  EXPECT_TRUE(contains(img.status().message(), "PNG decode did not finish")) << img.status().message();
  auto whole = decode(png);  // the default deadline leaves it alone
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_EQ(cv::norm(whole->bgr, big, cv::NORM_INF), 0);
}

// A PNG of width x height grey pixels whose IDAT inflates to `inflated` bytes of zeros (rows need only
// height * (width + 1)).
std::vector<uint8_t> png_with_idat_bomb(uint32_t width, uint32_t height, size_t inflated) {
  auto be32 = [](std::vector<uint8_t>& v, uint32_t x) {
    for (int s = 24; s >= 0; s -= 8) v.push_back(static_cast<uint8_t>(x >> s));
  };
  auto chunk = [&](std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
    be32(out, static_cast<uint32_t>(data.size()));
    std::vector<uint8_t> body(type, type + 4);
    body.insert(body.end(), data.begin(), data.end());
    out.insert(out.end(), body.begin(), body.end());
    be32(out, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
  };
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  be32(ihdr, width);
  be32(ihdr, height);
  ihdr.insert(ihdr.end(), {8, 0, 0, 0, 0});  // 8-bit grey, no interlace
  chunk(png, "IHDR", ihdr);
  std::vector<uint8_t> zeros(inflated, 0);
  uLongf n = compressBound(static_cast<uLong>(zeros.size()));
  std::vector<uint8_t> z(n);
  EXPECT_EQ(compress2(z.data(), &n, zeros.data(), static_cast<uLong>(zeros.size()), 9), Z_OK);
  z.resize(n);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", {});
  return png;
}

TEST(DecodeLimits, PngInflationIsBoundedByTheDeclaredSize) {
  // 64 MB of zeros behind a 16x16 header: only the 16 rows the header declares are inflated (libpng's png_read_end
  // would inflate the rest; found by this test at first: 240 ms).
  auto png = png_with_idat_bomb(16, 16, size_t{64} << 20);
  ASSERT_LT(png.size(), 200000u);
  const double cpu0 = thread_cpu_ms();
  auto img = decode(png);
  const double cpu_ms = thread_cpu_ms() - cpu0;
  ASSERT_TRUE(img.is_ok()) << img.status().to_string();
  EXPECT_EQ(img->bgr.cols, 16);
  EXPECT_EQ(img->bgr.rows, 16);
  EXPECT_EQ(cv::countNonZero(img->bgr.reshape(1)), 0);
  // Inflating the 64 MB takes 60-250 ms on this project's machines; the 16 rows well under a millisecond of CPU.
  EXPECT_LT(cpu_ms, 30.0) << "the extra compressed data must not be inflated";
  RecordProperty("decode_cpu_ms", std::to_string(cpu_ms));
}

TEST(DecodeLimits, JpegCutInsideItsScanIsAnErrorNotAGreyPicture) {
  auto bytes = read_file_bytes(fixture("line.jpg"), 1 << 20);
  ASSERT_TRUE(bytes.is_ok());
  // Half the file, then an end-of-image marker (so the cheap completeness check passes): libjpeg would pad the rest.
  std::vector<uint8_t> cut(bytes->begin(), bytes->begin() + static_cast<std::ptrdiff_t>(bytes->size() / 2));
  cut.push_back(0xFF);
  cut.push_back(0xD9);
  auto img = decode(cut);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(img.status().message(), "JPEG data is corrupt or truncated")) << img.status().message();
}

TEST(DecodeLimits, PngCutInsideItsImageDataIsAnError) {
  auto bytes = read_file_bytes(fixture("line_gray.png"), 1 << 20);
  ASSERT_TRUE(bytes.is_ok());
  const std::vector<uint8_t>& f = *bytes;
  auto be32_at = [&](size_t p) {
    return (uint32_t{f[p]} << 24) | (uint32_t{f[p + 1]} << 16) | (uint32_t{f[p + 2]} << 8) | f[p + 3];
  };
  size_t idat = 8;
  while (std::memcmp(f.data() + idat + 4, "IDAT", 4) != 0) idat += 12 + be32_at(idat);
  ASSERT_GT(be32_at(idat), 80u);
  // A well-formed chunk chain (so the cheap completeness check passes) whose one IDAT holds only the first 40 bytes
  // of the compressed rows: libpng runs out of image data; OpenCV's reader used to pad the missing rows.
  std::vector<uint8_t> cut(f.begin(), f.begin() + static_cast<std::ptrdiff_t>(idat));
  std::vector<uint8_t> body(f.begin() + static_cast<std::ptrdiff_t>(idat + 4),
                            f.begin() + static_cast<std::ptrdiff_t>(idat + 8 + 40));
  auto put32 = [&](uint32_t v) {
    for (int sh = 24; sh >= 0; sh -= 8) cut.push_back(static_cast<uint8_t>(v >> sh));
  };
  put32(40);
  cut.insert(cut.end(), body.begin(), body.end());
  put32(static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
  const uint8_t iend[] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82};
  cut.insert(cut.end(), iend, iend + sizeof(iend));
  auto img = decode(cut);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kDataLoss);
  EXPECT_TRUE(contains(img.status().message(), "PNG data is corrupt or truncated")) << img.status().message();
}

TEST(DecodeLimits, OwnDecodersMatchOpenCvPixelForPixel) {
  for (const char* f : {"line.jpg", "line_exif6.jpg", "probe_exif6.jpg"}) {
    auto bytes = read_file_bytes(fixture(f), 1 << 20);
    ASSERT_TRUE(bytes.is_ok()) << f;
    auto ours = decode_jpeg(bytes->data(), bytes->size(), JpegLimits{});
    ASSERT_TRUE(ours.is_ok()) << f << ": " << ours.status().to_string();
    cv::Mat ref = cv::imdecode(*bytes, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
    ASSERT_EQ(ours->size(), ref.size()) << f;
    EXPECT_EQ(cv::norm(*ours, ref, cv::NORM_INF), 0) << f;
  }
  for (const char* f : {"line_gray.png", "line_gray16.png", "line_palette.png", "rgba_dark_text.png",
                        "rgba_white_text.png", "probe_exif6.png"}) {
    auto bytes = read_file_bytes(fixture(f), 1 << 20);
    ASSERT_TRUE(bytes.is_ok()) << f;
    auto ours = decode_png(bytes->data(), bytes->size(), PngLimits{});
    ASSERT_TRUE(ours.is_ok()) << f << ": " << ours.status().to_string();
    cv::Mat ref = cv::imdecode(*bytes, cv::IMREAD_UNCHANGED);
    ASSERT_EQ(ours->type(), ref.type()) << f;
    ASSERT_EQ(ours->size(), ref.size()) << f;
    EXPECT_EQ(cv::norm(*ours, ref, cv::NORM_INF), 0) << f;
  }
}

// The JPEG decoder reads many rows per libjpeg call (up to 16: the upsampler makes 2 or more at once): the pixels of
// every layout stay OpenCV's (which reads one row per call), including heights and widths that are no multiple of
// the 16-row MCU, progressive files, restart intervals and greyscale.
TEST(DecodeLimits, JpegRowsReadManyAtATimeMatchOpenCv) {
  cv::Mat page(203, 317, CV_8UC3);
  cv::randu(page, 0, 256);
  cv::GaussianBlur(page, page, {5, 5}, 1.5);  // photo-like: chroma subsampling and the upsampler's smoothing matter
  cv::Mat grey;
  cv::cvtColor(page, grey, cv::COLOR_BGR2GRAY);
  struct Case {
    const char* name;
    const cv::Mat* picture;
    std::vector<int> params;
  };
  const Case cases[] = {
      {"baseline 4:2:0", &page, {cv::IMWRITE_JPEG_QUALITY, 90}},
      {"progressive", &page, {cv::IMWRITE_JPEG_QUALITY, 90, cv::IMWRITE_JPEG_PROGRESSIVE, 1}},
      {"restart every 3 MCUs", &page, {cv::IMWRITE_JPEG_QUALITY, 75, cv::IMWRITE_JPEG_RST_INTERVAL, 3}},
      {"greyscale", &grey, {cv::IMWRITE_JPEG_QUALITY, 90}},
  };
  for (const Case& c : cases) {
    for (const cv::Rect& r : {cv::Rect(0, 0, 317, 203), cv::Rect(3, 5, 17, 1), cv::Rect(0, 0, 1, 33)}) {
      std::vector<uint8_t> bytes;
      ASSERT_TRUE(cv::imencode(".jpg", (*c.picture)(r), bytes, c.params)) << c.name;
      auto ours = decode_jpeg(bytes.data(), bytes.size(), JpegLimits{});
      ASSERT_TRUE(ours.is_ok()) << c.name << ": " << ours.status().to_string();
      const cv::Mat ref = cv::imdecode(bytes, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
      ASSERT_EQ(ours->size(), ref.size()) << c.name;
      EXPECT_EQ(cv::norm(*ours, ref, cv::NORM_INF), 0) << c.name << " " << r.width << "x" << r.height;
    }
  }
}

// An Adam7-interlaced RGB PNG of a gradient, written with libpng (OpenCV writes no interlaced PNG).
std::vector<uint8_t> interlaced_png(int w, int h) {
  std::vector<uint8_t> out;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(
      png, &out,
      [](png_structp p, png_bytep d, size_t n) {
        auto* v = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(p));
        v->insert(v->end(), d, d + n);
      },
      nullptr);
  png_set_IHDR(png, info, static_cast<png_uint_32>(w), static_cast<png_uint_32>(h), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_ADAM7, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  std::vector<uint8_t> pixels(static_cast<size_t>(w) * h * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 % 251);
  std::vector<png_bytep> rows(static_cast<size_t>(h));
  for (int y = 0; y < h; ++y) rows[static_cast<size_t>(y)] = pixels.data() + static_cast<size_t>(y) * w * 3;
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return out;
}

TEST(DecodeLimits, InterlacedPngMatchesOpenCv) {
  auto png = interlaced_png(37, 23);  // odd sides: every Adam7 pass partial
  auto ours = decode_png(png.data(), png.size(), PngLimits{});
  ASSERT_TRUE(ours.is_ok()) << ours.status().to_string();
  cv::Mat ref = cv::imdecode(png, cv::IMREAD_UNCHANGED);
  ASSERT_EQ(ours->type(), ref.type());
  ASSERT_EQ(ours->size(), ref.size());
  EXPECT_EQ(cv::norm(*ours, ref, cv::NORM_INF), 0);
  EXPECT_EQ(ours->at<cv::Vec3b>(0, 1), cv::Vec3b(static_cast<uint8_t>(5 * 7 % 251), static_cast<uint8_t>(4 * 7 % 251),
                                                 static_cast<uint8_t>(3 * 7 % 251)));  // BGR of pixel 1
}

}  // namespace
}  // namespace steadyocr::pipeline

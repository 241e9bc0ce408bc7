// What fuzz_decode found (fuzz/regressions/fuzz_decode/), each file run through the header checks and the decoder
// as the target does: a clean error naming the cause, never a crash or a read past the buffer (the sanitizer build
// of scripts/fuzz_ci.sh runs these too).
#include <gtest/gtest.h>
#include <sys/resource.h>

#include "pipeline/image_decode.h"
#include "pipeline/image_header.h"
#include "test_util.h"

namespace steadyocr::pipeline {
namespace {

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

std::vector<uint8_t> reproducer(const std::string& name) {
  auto b = read_file_bytes(testing::source_dir() + "/fuzz/regressions/fuzz_decode/" + name, 1 << 20);
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  return b.is_ok() ? *b : std::vector<uint8_t>{};
}

TEST(FuzzRegressions, JpegSegmentLengthPastTheEnd) {
  // A JPEG whose last marker segment declares a length beyond the file: check_image_complete's walk stepped past
  // the end (size_t underflow of n - pos) and read out of bounds.
  auto b = reproducer("jpeg_segment_length_past_end");
  ASSERT_FALSE(b.empty());
  auto h = parse_image_header(b.data(), b.size());
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  Status s = check_image_complete(*h, b.data(), b.size());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_NE(s.message().find("no image data (SOS marker) found"), std::string::npos) << s.message();
  DecodeLimits big;  // past the header's declared size: the damage is what refuses it
  big.max_side = 1 << 16;
  big.max_pixels = int64_t{1} << 32;
  auto img = decode_image(b.data(), b.size(), big);
  EXPECT_EQ(img.status().code(), StatusCode::kDataLoss) << img.status().to_string();
}

TEST(FuzzRegressions, GifWithAZeroSide) {
  // A GIF whose logical screen is 0 pixels wide: parse_image_header returned a zero side, breaking its promise of
  // positive dimensions (the server's pixel checks and the decoder rely on it).
  auto b = reproducer("gif_zero_size");
  ASSERT_FALSE(b.empty());
  auto h = parse_image_header(b.data(), b.size());
  ASSERT_FALSE(h.is_ok());
  EXPECT_EQ(h.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(h.status().message().find("GIF file is truncated or corrupt: the header declares a zero size"),
            std::string::npos)
      << h.status().message();
}

TEST(FuzzRegressions, WebpOddChunkThatFillsTheFile) {
  // A VP8X WebP whose last chunk has an odd size and ends exactly at the end of the file: the chunk walk added the
  // pad byte that is not there, stepped past the end (size_t underflow of n - pos) and read out of bounds.
  auto b = reproducer("webp_odd_chunk_fills_file");
  ASSERT_EQ(b.size(), 39u);
  auto h = parse_image_header(b.data(), b.size());
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->width, 611914);
  EXPECT_EQ(h->height, 1);
  EXPECT_EQ(h->orientation, 1);  // no EXIF chunk
  DecodeLimits big;
  big.max_side = 1 << 20;
  auto img = decode_image(b.data(), b.size(), big);
  EXPECT_EQ(img.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(img.status().message().find("shorter than its RIFF header declares"), std::string::npos)
      << img.status().message();
}

TEST(FuzzRegressions, TiffWhoseWidthTheHeaderAndLibtiffReadDifferently) {
  // line.tif (221x69) with a second ImageWidth entry of 1 appended to its first directory: parse_image_header took
  // the last (1x69) while libtiff decodes the first (221x69), so the size limits were checked on dimensions the
  // decoder does not use. The header now reads the first, as libtiff does; and a picture of another size than the
  // header's is refused in any case.
  auto b = reproducer("tiff_width_read_differently");
  ASSERT_FALSE(b.empty());
  auto h = parse_image_header(b.data(), b.size());
  ASSERT_TRUE(h.is_ok()) << h.status().to_string();
  EXPECT_EQ(h->width, 221);
  EXPECT_EQ(h->height, 69);
  DecodeLimits narrow;  // a limit between the two widths: refused from the header, before decoding
  narrow.max_side = 100;
  auto img = decode_image(b.data(), b.size(), narrow);
  ASSERT_FALSE(img.is_ok());
  EXPECT_EQ(img.status().code(), StatusCode::kResourceExhausted) << img.status().to_string();
  auto whole = decode_image(b.data(), b.size());
  ASSERT_TRUE(whole.is_ok()) << whole.status().to_string();
  EXPECT_EQ(whole->bgr.cols, 221);
  EXPECT_EQ(whole->bgr.rows, 69);
}

TEST(FuzzRegressions, WebpThatOpenCvHandedToItsDicomReader) {
  // Two ~1 KB files that sniff as WebP (RIFF/WEBP, VP8X or VP8L) but whose first 32 bytes libwebp rejects: cv::imdecode
  // then tried its other readers by signature, and its DICOM reader (gdcm) allocated 2-3 GB. WebP is now decoded with
  // libwebp directly: a clean kDataLoss, nothing allocated beyond the declared size.
  for (const char* name : {"webp_reaching_dicom_reader_1", "webp_reaching_dicom_reader_2"}) {
    auto b = reproducer(name);
    ASSERT_FALSE(b.empty()) << name;
    auto h = parse_image_header(b.data(), b.size());
    ASSERT_TRUE(h.is_ok()) << name << ": " << h.status().to_string();
    EXPECT_EQ(h->format, ImageFormat::kWebp) << name;
    const long peak_before = peak_rss_kb();
    auto img = decode_image(b.data(), b.size());
    ASSERT_FALSE(img.is_ok()) << name;
    EXPECT_EQ(img.status().code(), StatusCode::kDataLoss) << name << ": " << img.status().to_string();
    // The process's peak memory does not move (it rose by 2-3 GB through OpenCV's DICOM reader).
    EXPECT_LT(peak_rss_kb() - peak_before, 256 * 1024) << name;
  }
}

}  // namespace
}  // namespace steadyocr::pipeline

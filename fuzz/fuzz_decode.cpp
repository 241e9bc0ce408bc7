// libFuzzer target: image header parsing and decoding of arbitrary bytes. Any crash, sanitizer report, leak, or a
// result that breaks the decoder's contract (a picture of the wrong type or size, an error without a message or of
// an unexpected code) is a finding.
#include <opencv2/core/utility.hpp>

#include <cstdint>
#include <cstdlib>

#include "pipeline/image_decode.h"
#include "pipeline/image_header.h"

using namespace steadyocr;
using namespace steadyocr::pipeline;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cv::setNumThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Small limits keep each input cheap (and the fuzzer's memory in bounds); the code paths are the same.
  DecodeLimits limits;
  limits.max_side = 2048;
  limits.max_pixels = 1 << 20;
  limits.max_file_bytes = 1 << 20;
  limits.max_jpeg_scans = 32;
  limits.decode_deadline_ms = 2000;

  (void)sniff_image_format(data, size);
  (void)exif_orientation(data, size);
  auto header = parse_image_header(data, size);
  if (header.is_ok()) {
    (void)check_image_complete(*header, data, size);
    if (header->width <= 0 || header->height <= 0) std::abort();  // parse_image_header promises positive sides
  }
  auto img = decode_image(data, size, limits);
  if (img.is_ok()) {
    const cv::Mat& m = img->bgr;
    if (m.type() != CV_8UC3 || m.empty() || !m.isContinuous()) std::abort();
    const int64_t w = img->header.width, h = img->header.height;
    const bool same = m.cols == w && m.rows == h, turned = m.cols == h && m.rows == w;
    if (!same && !turned) std::abort();  // the decoded picture is the declared one, oriented
  } else {
    const Status& s = img.status();
    if (s.message().empty()) std::abort();
    switch (s.code()) {
      case StatusCode::kDataLoss:
      case StatusCode::kUnsupported:
      case StatusCode::kResourceExhausted:
        break;
      default:
        std::abort();  // an image's fault is never a device, internal or deadline error
    }
  }
  return 0;
}

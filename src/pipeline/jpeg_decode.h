// JPEG decoding with libjpeg(-turbo) directly, so that hostile files are bounded: a progress monitor refuses a file
// past its scan limit (libjpeg-turbo's advice LJT-01-004) or past the decode deadline, libjpeg's memory is capped from
// the declared dimensions before it allocates, and the warnings that mean invented pixels (premature end of data,
// corrupt entropy data) are errors instead of a grey-padded picture.
#pragma once

#include <opencv2/core.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace steadyocr::pipeline {

// Finding codes of the decode limits that are not about size (the server answers them as their own API codes).
inline constexpr const char* kImageTooManyScans = "IMAGE_TOO_MANY_SCANS";
inline constexpr const char* kImageDecodeTimeout = "IMAGE_DECODE_TIMEOUT";

struct JpegLimits {
  int max_scans = 100;  // scans of a progressive file (baseline files have one)
  // The decode stops after it (the default: never).
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  int64_t deadline_ms = 0;                      // for the message only
  int64_t max_memory_bytes = int64_t{4} << 30;  // libjpeg's own buffers (coefficients of progressive files)
};

// Decodes to 8-bit BGR (CV_8UC3) as OpenCV's imdecode(IMREAD_COLOR) does, without applying EXIF orientation.
// kResourceExhausted with finding IMAGE_TOO_MANY_SCANS past max_scans, or IMAGE_DECODE_TIMEOUT past the deadline
// (never kDeadlineExceeded: that code makes the engine step down its ladder, and a hostile image is no device
// fault); kDataLoss for damaged or truncated data.
Result<cv::Mat> decode_jpeg(const uint8_t* data, size_t size, const JpegLimits& limits);

}  // namespace steadyocr::pipeline

// PNG decoding with libpng directly, so that hostile files are bounded: libpng is given the side limit and caps
// for ancillary chunks (their zlib inflation included) before it allocates, the image data inflates into rows of the
// declared size only (libpng's progressive reader stops at the first byte past the last row), the decode deadline is
// checked after every row, and a short or damaged file is an error.
#pragma once

#include <opencv2/core.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "core/status.h"

namespace steadyocr::pipeline {

struct PngLimits {
  int64_t max_side = 20000;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();  // default: none
  int64_t deadline_ms = 0;              // for the message only
  int64_t max_chunk_bytes = 8'000'000;  // an ancillary chunk (text, ICC profile), inflated or not
  int max_chunks = 256;                 // ancillary chunks kept (text, sPLT, unknown)
};

// Decodes as OpenCV's imdecode(IMREAD_UNCHANGED) does: 1, 3 or 4 channels (BGR order; palette and tRNS expanded to
// BGRA, grey+alpha to BGRA), 8 or 16 bits. kDataLoss for damaged or truncated data, kResourceExhausted with
// finding IMAGE_DECODE_TIMEOUT past the deadline.
Result<cv::Mat> decode_png(const uint8_t* data, size_t size, const PngLimits& limits);

}  // namespace steadyocr::pipeline

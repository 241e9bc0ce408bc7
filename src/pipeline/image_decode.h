// Image decoding for OCR: any supported file to an 8-bit BGR picture, upright (EXIF orientation applied),
// with transparency flattened so that the text stays readable. Limits are checked from the header first.
#pragma once

#include <opencv2/core.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "pipeline/image_header.h"

namespace steadyocr::pipeline {

struct DecodeLimits {
  int64_t max_side = 20000;          // pixels on the longer side
  int64_t max_pixels = 100'000'000;  // width * height
  int64_t max_file_bytes = int64_t{512} << 20;
  int max_jpeg_scans = 100;           // scans of a progressive JPEG (libjpeg-turbo's advice LJT-01-004)
  int64_t decode_deadline_ms = 5000;  // per image, from the first byte parsed; 0: no deadline
};

struct DecodedImage {
  cv::Mat bgr;  // CV_8UC3, upright
  ImageHeader header;
  bool alpha_flattened = false;
  bool flattened_on_black = false;  // light content on transparency got a black background
};

// Decodes an encoded image held in memory. Errors (kDataLoss for damaged data, kUnsupported for formats
// we do not read, kResourceExhausted for limits, decode_deadline_ms included) say what is wrong; the caller adds
// the file name. The limits that are not about size carry a finding (IMAGE_TOO_MANY_SCANS,
// IMAGE_DECODE_TIMEOUT: pipeline/jpeg_decode.h).
Result<DecodedImage> decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits = {});

// Reads and decodes a file; every error message starts with the path.
Result<DecodedImage> load_image(const std::string& path, const DecodeLimits& limits = {});

// Reads a whole file (refusing files above max_bytes). The error names the path and the cause.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, int64_t max_bytes);

// Flattens a BGRA picture onto a background that contrasts with its visible pixels: white when they are
// dark on average (luminance weighted by alpha below mid-grey), black otherwise. Sets *on_black accordingly.
cv::Mat flatten_alpha(const cv::Mat& bgra, bool* on_black = nullptr);

// Applies an EXIF orientation (1..8) the way OpenCV's imread does.
cv::Mat apply_orientation(const cv::Mat& img, int orientation);

}  // namespace steadyocr::pipeline

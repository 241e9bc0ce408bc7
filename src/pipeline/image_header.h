// Image header sniffing: format, dimensions and EXIF orientation read from the first bytes of a file,
// so that limits are checked before any pixel is decoded (a 100000x100000 PNG is refused in microseconds).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/status.h"

namespace steadyocr::pipeline {

enum class ImageFormat { kUnknown, kJpeg, kPng, kBmp, kWebp, kTiff, kGif };

const char* image_format_name(ImageFormat f);

struct ImageHeader {
  ImageFormat format = ImageFormat::kUnknown;
  int64_t width = 0;       // as stored, before EXIF orientation
  int64_t height = 0;      // as stored, before EXIF orientation
  int orientation = 1;     // EXIF orientation 1..8 (1 = as stored); 1 when absent
  bool has_alpha = false;  // the header declares an alpha channel (PNG colour type, WebP VP8X flag)
};

// Identifies the format from its magic bytes; kUnknown when none matches.
ImageFormat sniff_image_format(const uint8_t* data, size_t size);

// Parses the header of a JPEG, PNG, BMP, WebP, TIFF or GIF file held in memory. Fails with kDataLoss when
// the header is cut short or malformed, kUnsupported when the format is not recognised.
Result<ImageHeader> parse_image_header(const uint8_t* data, size_t size);

// Orientation tag (274) of a TIFF-structured EXIF block ("II*\0..." or "MM\0*..."); 1 when absent or invalid.
int exif_orientation(const uint8_t* tiff, size_t size);

// Whether the file's end is intact where the format makes that cheap to check: JPEG needs an EOI marker
// after its first scan, PNG a complete chunk chain up to IEND, WebP the full RIFF size, BMP all pixel rows.
// Returns kDataLoss naming what is missing. Other formats pass (their decoder reports damage).
Status check_image_complete(const ImageHeader& header, const uint8_t* data, size_t size);

}  // namespace steadyocr::pipeline

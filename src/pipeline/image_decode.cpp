#include "pipeline/image_decode.h"

#include <webp/decode.h>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "pipeline/jpeg_decode.h"
#include "pipeline/png_decode.h"

namespace steadyocr::pipeline {
namespace {

// Converts any decoded depth to 8 bits per channel.
Result<cv::Mat> to_8bit(const cv::Mat& m, const char* format) {
  cv::Mat out;
  switch (m.depth()) {
    case CV_8U:
      return m;
    case CV_16U:
      m.convertTo(out, CV_8U, 255.0 / 65535.0);
      return out;
    case CV_32F:
    case CV_64F:
      m.convertTo(out, CV_8U, 255.0);
      return out;  // float images hold [0, 1]
    default:
      break;
  }
  return unsupported(std::string(format) + " image with signed or 32-bit integer samples is not supported");
}

// WebP with libwebp directly, as OpenCV's reader does (BGR, or BGRA when the bitstream has alpha). Through
// cv::imdecode a file whose first 32 bytes libwebp rejects fell to OpenCV's next readers by signature (its DICOM
// reader took a 1 KB file and allocated 2-3 GB; found by fuzz_decode).
Result<cv::Mat> decode_webp(const uint8_t* data, size_t size) {
  WebPBitstreamFeatures f;
  if (WebPGetFeatures(data, size, &f) != VP8_STATUS_OK) {
    return data_loss("WebP data could not be decoded (the file is corrupt or truncated)");
  }
  cv::Mat out(f.height, f.width, f.has_alpha ? CV_8UC4 : CV_8UC3);
  const size_t bytes = out.total() * out.elemSize();
  const int stride = static_cast<int>(out.step);
  uint8_t* ok = f.has_alpha ? WebPDecodeBGRAInto(data, size, out.data, bytes, stride)
                            : WebPDecodeBGRInto(data, size, out.data, bytes, stride);
  if (ok == nullptr) return data_loss("WebP data could not be decoded (the file is corrupt or truncated)");
  return out;
}

}  // namespace

cv::Mat apply_orientation(const cv::Mat& img, int orientation) {
  cv::Mat out;
  switch (orientation) {
    case 2:
      cv::flip(img, out, 1);
      return out;
    case 3:
      cv::flip(img, out, -1);
      return out;
    case 4:
      cv::flip(img, out, 0);
      return out;
    case 5:
      cv::transpose(img, out);
      return out;
    case 6:
      cv::transpose(img, out);
      cv::flip(out, out, 1);
      return out;
    case 7:
      cv::transpose(img, out);
      cv::flip(out, out, -1);
      return out;
    case 8:
      cv::transpose(img, out);
      cv::flip(out, out, 0);
      return out;
    default:
      return img;
  }
}

cv::Mat flatten_alpha(const cv::Mat& bgra, bool* on_black) {
  CV_Assert(bgra.type() == CV_8UC4);
  double weight = 0, weighted_luma = 0;
  bool opaque = true;
  for (int y = 0; y < bgra.rows; ++y) {
    const cv::Vec4b* row = bgra.ptr<cv::Vec4b>(y);
    for (int x = 0; x < bgra.cols; ++x) {
      const cv::Vec4b& p = row[x];
      if (p[3] != 255) opaque = false;
      if (p[3] == 0) continue;
      double luma = 0.114 * p[0] + 0.587 * p[1] + 0.299 * p[2];
      weight += p[3];
      weighted_luma += p[3] * luma;
    }
  }
  cv::Mat out(bgra.rows, bgra.cols, CV_8UC3);
  if (opaque) {
    cv::cvtColor(bgra, out, cv::COLOR_BGRA2BGR);
    if (on_black) *on_black = false;
    return out;
  }
  // Dark visible pixels (or nothing visible) go on white; light ones on black.
  bool black = weight > 0 && weighted_luma / weight >= 128.0;
  if (on_black) *on_black = black;
  const int bg = black ? 0 : 255;
  for (int y = 0; y < bgra.rows; ++y) {
    const cv::Vec4b* in = bgra.ptr<cv::Vec4b>(y);
    cv::Vec3b* o = out.ptr<cv::Vec3b>(y);
    for (int x = 0; x < bgra.cols; ++x) {
      int a = in[x][3];
      for (int c = 0; c < 3; ++c) o[x][c] = static_cast<uint8_t>((in[x][c] * a + bg * (255 - a) + 127) / 255);
    }
  }
  return out;
}

Result<DecodedImage> decode_image(const uint8_t* data, size_t size, const DecodeLimits& limits) {
  const auto started = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(ImageHeader header, parse_image_header(data, size));
  const char* fmt = image_format_name(header.format);
  if (header.format == ImageFormat::kGif) {
    return unsupported("GIF images are not supported: convert it to PNG (e.g. `convert in.gif out.png`)");
  }
  if (header.format == ImageFormat::kTiff && size >= 4 && data[2] + data[3] == 43) {  // II+\0 or MM\0+
    return unsupported("BigTIFF images are not supported: convert it to TIFF or PNG (e.g. `convert in.tif out.png`)");
  }
  int64_t side = std::max(header.width, header.height);
  if (side > limits.max_side) {
    return resource_exhausted(std::string(fmt) + " header declares " + std::to_string(header.width) + "x" +
                              std::to_string(header.height) + " pixels, over the limit of " +
                              std::to_string(limits.max_side) +
                              " per side; downscale the image or raise the limit (--max-side)");
  }
  if (header.width * header.height > limits.max_pixels) {
    return resource_exhausted(std::string(fmt) + " header declares " + std::to_string(header.width) + "x" +
                              std::to_string(header.height) + " = " + std::to_string(header.width * header.height) +
                              " pixels, over the limit of " + std::to_string(limits.max_pixels) +
                              "; downscale the image or raise the limit (--max-pixels)");
  }
  RETURN_IF_ERROR(check_image_complete(header, data, size));

  // Every decoder gets its limits before it allocates. JPEG and PNG are read with libjpeg and libpng directly
  // (scan limit, deadline, memory caps, corrupt data as an error); the others through OpenCV, from the header
  // checks above. OpenCV's TIFF reader orients by itself; JPEG, PNG (eXIf) and WebP (EXIF chunk) are oriented here.
  const auto deadline = limits.decode_deadline_ms > 0 ? started + std::chrono::milliseconds(limits.decode_deadline_ms)
                                                      : std::chrono::steady_clock::time_point::max();
  cv::Mat raw;
  if (header.format == ImageFormat::kJpeg) {
    JpegLimits jl;
    jl.max_scans = limits.max_jpeg_scans;
    jl.deadline = deadline;
    jl.deadline_ms = limits.decode_deadline_ms;
    // libjpeg's own buffers: at most the whole image's DCT coefficients (2 bytes each, up to 4 components) and
    // its row buffers; anything past that is a hostile file.
    jl.max_memory_bytes = header.width * header.height * 8 + (int64_t{64} << 20);
    ASSIGN_OR_RETURN(raw, decode_jpeg(data, size, jl));
  } else if (header.format == ImageFormat::kPng) {
    PngLimits pl;
    pl.max_side = limits.max_side;
    pl.deadline = deadline;
    pl.deadline_ms = limits.decode_deadline_ms;
    ASSIGN_OR_RETURN(raw, decode_png(data, size, pl));
  } else if (header.format == ImageFormat::kWebp) {
    ASSIGN_OR_RETURN(raw, decode_webp(data, size));
  } else {
    // BMP and TIFF: OpenCV picks its reader by the same magic bytes as sniff_image_format (BigTIFF is refused
    // before: OpenCV's TIFF reader does not take it and the file would reach its other readers).
    try {
      cv::Mat buf(1, static_cast<int>(size), CV_8U, const_cast<uint8_t*>(data));
      raw = cv::imdecode(buf, cv::IMREAD_UNCHANGED);
    } catch (const cv::Exception& e) {
      return data_loss(std::string(fmt) + " data could not be decoded: " + e.err);
    }
    if (raw.empty()) {
      return data_loss(std::string(fmt) + " data could not be decoded (the file is corrupt or truncated)");
    }
  }
  // The decoded picture has the size the header declared (orientation is applied below; OpenCV's TIFF reader may
  // have turned it already): anything else is a file whose header and image data disagree, and one whose header
  // would have passed the size limits with dimensions the decoder does not use (a TIFF whose ImageWidth the parser
  // and libtiff read differently; found by fuzz_decode).
  const bool as_declared = raw.cols == header.width && raw.rows == header.height;
  const bool turned = header.format == ImageFormat::kTiff && raw.cols == header.height && raw.rows == header.width;
  if (!as_declared && !turned) {
    return data_loss(std::string(fmt) + " image data is " + std::to_string(raw.cols) + "x" + std::to_string(raw.rows) +
                     " but its header declares " + std::to_string(header.width) + "x" + std::to_string(header.height) +
                     "; the file is damaged or crafted: send an undamaged file");
  }

  DecodedImage out;
  out.header = header;
  ASSIGN_OR_RETURN(cv::Mat m8, to_8bit(raw, fmt));
  switch (m8.channels()) {
    case 1:
      cv::cvtColor(m8, out.bgr, cv::COLOR_GRAY2BGR);
      break;
    case 3:
      out.bgr = m8;
      break;
    case 4:
      out.bgr = flatten_alpha(m8, &out.flattened_on_black);
      out.alpha_flattened = true;
      break;
    default:
      return unsupported(std::string(fmt) + " image with " + std::to_string(m8.channels()) +
                         " channels is not supported (1, 3 or 4 expected)");
  }
  if (header.format != ImageFormat::kTiff) {
    out.bgr = apply_orientation(out.bgr, header.orientation);
  }
  if (!out.bgr.isContinuous()) out.bgr = out.bgr.clone();
  return out;
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, int64_t max_bytes) {
  std::error_code ec;
  auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) return not_found(path + ": no such file");
  if (std::filesystem::is_directory(st)) return invalid_argument(path + ": is a directory, not an image file");
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return invalid_argument(path + ": cannot open: " + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  while (true) {
    size_t n = std::fread(chunk, 1, sizeof(chunk), f);
    if (n > 0) {
      if (static_cast<int64_t>(bytes.size() + n) > max_bytes) {
        std::fclose(f);
        return resource_exhausted(path + ": file is larger than the limit of " + std::to_string(max_bytes) + " bytes");
      }
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
    if (n < sizeof(chunk)) break;
  }
  bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return data_loss(path + ": read error");
  return bytes;
}

Result<DecodedImage> load_image(const std::string& path, const DecodeLimits& limits) {
  ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bytes(path, limits.max_file_bytes));
  auto img = decode_image(bytes.data(), bytes.size(), limits);
  if (!img.is_ok()) return img.status().with_context(path);
  return img;
}

}  // namespace steadyocr::pipeline

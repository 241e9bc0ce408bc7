#include "pipeline/image_header.h"

#include <cstring>
#include <functional>
#include <utility>

namespace steadyocr::pipeline {
namespace {

uint32_t be16(const uint8_t* p) {
  return (uint32_t{p[0]} << 8) | p[1];
}
uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint32_t le16(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8);
}
uint32_t le24(const uint8_t* p) {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16);
}
uint32_t le32(const uint8_t* p) {
  return le24(p) | (uint32_t{p[3]} << 24);
}

bool starts_with(const uint8_t* data, size_t size, const char* magic, size_t n) {
  return size >= n && std::memcmp(data, magic, n) == 0;
}

Status cut_short(const char* format, const char* where) {
  return data_loss(std::string(format) + " file is truncated or corrupt: " + where);
}

// ---- TIFF structure (TIFF files and EXIF blocks) ------------------------------------------------------------

// Calls fn(tag, type, count, value) for each entry of the first IFD; `value` points at the entry's inline value
// field (4 bytes, or 8 in BigTIFF). Returns false when the structure is cut short or malformed.
using IfdVisitor = std::function<void(uint32_t tag, uint32_t type, uint64_t count, const uint8_t* value)>;

struct TiffLayout {
  bool little = true;
  bool big_tiff = false;
};

uint64_t tiff_u(const TiffLayout& t, const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{p[t.little ? i : bytes - 1 - i]} << (8 * i);
  return v;
}

bool visit_ifd0(const uint8_t* data, size_t size, const IfdVisitor& fn) {
  if (size < 8) return false;
  TiffLayout t;
  if (data[0] == 'I' && data[1] == 'I') {
    t.little = true;
  } else if (data[0] == 'M' && data[1] == 'M') {
    t.little = false;
  } else {
    return false;
  }
  uint64_t magic = tiff_u(t, data + 2, 2);
  uint64_t ifd = 0;
  if (magic == 42) {
    ifd = tiff_u(t, data + 4, 4);
  } else if (magic == 43) {
    if (size < 16) return false;
    t.big_tiff = true;
    ifd = tiff_u(t, data + 8, 8);
  } else {
    return false;
  }
  const int count_bytes = t.big_tiff ? 8 : 2;
  const int entry_bytes = t.big_tiff ? 20 : 12;
  if (ifd < 8 || ifd > size || size - ifd < static_cast<uint64_t>(count_bytes)) return false;
  uint64_t n = tiff_u(t, data + ifd, count_bytes);
  uint64_t first = ifd + count_bytes;
  if (n > (size - first) / entry_bytes) return false;
  for (uint64_t i = 0; i < n; ++i) {
    const uint8_t* e = data + first + i * entry_bytes;
    uint32_t tag = static_cast<uint32_t>(tiff_u(t, e, 2));
    uint32_t type = static_cast<uint32_t>(tiff_u(t, e + 2, 2));
    uint64_t count = t.big_tiff ? tiff_u(t, e + 4, 8) : tiff_u(t, e + 4, 4);
    fn(tag, type, count, e + (t.big_tiff ? 12 : 8));
  }
  return true;
}

// An integer entry's inline value (SHORT, LONG or LONG8; count 1). -1 for other types.
int64_t tiff_scalar(const uint8_t* tiff, uint32_t type, uint64_t count, const uint8_t* value) {
  TiffLayout t;
  t.little = tiff[0] == 'I';
  if (count != 1) return -1;
  if (type == 3) return static_cast<int64_t>(tiff_u(t, value, 2));
  if (type == 4) return static_cast<int64_t>(tiff_u(t, value, 4));
  // A LONG8 fits the 8-byte value field of BigTIFF only; in a classic TIFF's 4-byte field it would be an offset, and
  // reading it inline ran 4 bytes past the last entry (found by fuzz_decode on the GPU machine's host).
  if (type == 16 && tiff_u(t, tiff + 2, 2) == 43) return static_cast<int64_t>(tiff_u(t, value, 8));
  return -1;
}

// ---- per-format parsers -----------------------------------------------------------------------------------

Result<ImageHeader> parse_jpeg(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kJpeg;
  size_t pos = 2;
  while (pos < n) {
    if (d[pos] != 0xFF) return cut_short("JPEG", "a marker was expected before the frame header");
    while (pos < n && d[pos] == 0xFF) ++pos;  // fill bytes
    if (pos >= n) break;
    uint8_t marker = d[pos++];
    if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) continue;  // no length
    if (marker == 0xD9 || marker == 0xDA) return cut_short("JPEG", "no frame header (SOF) before the image data");
    if (n - pos < 2) break;
    uint32_t len = be16(d + pos);
    if (len < 2) return cut_short("JPEG", "a segment declares a length below 2");
    const uint8_t* seg = d + pos + 2;
    size_t seg_len = len - 2;
    bool complete = n - pos >= len;
    if (marker == 0xE1 && complete && seg_len > 6 && std::memcmp(seg, "Exif\0\0", 6) == 0) {
      h.orientation = exif_orientation(seg + 6, seg_len - 6);
    }
    bool sof = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (sof) {
      if (n - pos < 2 + 5) break;
      h.height = be16(seg + 1);
      h.width = be16(seg + 3);
      if (h.width == 0 || h.height == 0) {
        return unsupported("JPEG frame header declares a zero dimension (height defined by a DNL marker)");
      }
      return h;
    }
    pos += len;
  }
  return cut_short("JPEG", "the header ends before the frame header (SOF)");
}

Result<ImageHeader> parse_png(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kPng;
  if (n < 33 || std::memcmp(d + 12, "IHDR", 4) != 0) return cut_short("PNG", "no complete IHDR chunk");
  h.width = be32(d + 16);
  h.height = be32(d + 20);
  if (h.width == 0 || h.height == 0 || h.width > 0x7fffffff || h.height > 0x7fffffff) {
    return cut_short("PNG", "IHDR declares an invalid size");
  }
  uint8_t colour = d[25];
  h.has_alpha = colour == 4 || colour == 6;
  // eXIf and tRNS come before the image data; stop at the first IDAT.
  size_t pos = 8;
  while (n - pos >= 12) {
    uint32_t len = be32(d + pos);
    const uint8_t* type = d + pos + 4;
    if (std::memcmp(type, "IDAT", 4) == 0 || len > n - pos - 12) break;
    if (std::memcmp(type, "tRNS", 4) == 0) h.has_alpha = true;
    if (std::memcmp(type, "eXIf", 4) == 0) h.orientation = exif_orientation(d + pos + 8, len);
    pos += 12 + static_cast<size_t>(len);
  }
  return h;
}

Result<ImageHeader> parse_bmp(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kBmp;
  if (n < 26) return cut_short("BMP", "the header is cut short");
  uint32_t dib = le32(d + 14);
  if (dib == 12) {
    h.width = le16(d + 18);
    h.height = le16(d + 20);
  } else if (dib >= 16) {
    h.width = static_cast<int32_t>(le32(d + 18));
    int64_t hh = static_cast<int32_t>(le32(d + 22));
    h.height = hh < 0 ? -hh : hh;  // negative height = rows stored top-down
  } else {
    return cut_short("BMP", "unknown DIB header size");
  }
  if (h.width <= 0 || h.height <= 0) return cut_short("BMP", "the header declares an invalid size");
  return h;
}

Result<ImageHeader> parse_gif(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kGif;
  if (n < 10) return cut_short("GIF", "the header is cut short");
  h.width = le16(d + 6);
  h.height = le16(d + 8);
  // Every parser promises positive sides (found by fuzz_decode: a GIF screen of width 0 passed).
  if (h.width == 0 || h.height == 0) return cut_short("GIF", "the header declares a zero size");
  return h;
}

Result<ImageHeader> parse_webp(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kWebp;
  if (n < 30) return cut_short("WebP", "the header is cut short");
  const uint8_t* chunk = d + 12;
  const uint8_t* p = d + 20;  // chunk payload
  if (std::memcmp(chunk, "VP8 ", 4) == 0) {
    if (p[3] != 0x9d || p[4] != 0x01 || p[5] != 0x2a) return cut_short("WebP", "bad VP8 start code");
    h.width = le16(p + 6) & 0x3fff;
    h.height = le16(p + 8) & 0x3fff;
  } else if (std::memcmp(chunk, "VP8L", 4) == 0) {
    if (p[0] != 0x2f) return cut_short("WebP", "bad VP8L signature");
    uint32_t bits = le32(p + 1);
    h.width = (bits & 0x3fff) + 1;
    h.height = ((bits >> 14) & 0x3fff) + 1;
    h.has_alpha = ((bits >> 28) & 1) != 0;
  } else if (std::memcmp(chunk, "VP8X", 4) == 0) {
    h.has_alpha = (p[0] & 0x10) != 0;
    h.width = int64_t{le24(p + 4)} + 1;
    h.height = int64_t{le24(p + 7)} + 1;
    // Look for an EXIF chunk among the following chunks.
    size_t pos = 12;
    // pos passes n after an odd-sized last chunk that fills the file (its pad byte is missing; found by fuzz_decode).
    while (pos <= n && n - pos >= 8) {
      uint32_t len = le32(d + pos + 4);
      if (len > n - pos - 8) break;
      if (std::memcmp(d + pos, "EXIF", 4) == 0) {
        const uint8_t* e = d + pos + 8;
        size_t el = len;
        if (el > 6 && std::memcmp(e, "Exif\0\0", 6) == 0) {
          e += 6;
          el -= 6;
        }
        h.orientation = exif_orientation(e, el);
        break;
      }
      pos += 8 + static_cast<size_t>(len) + (len & 1);
    }
  } else {
    return unsupported("WebP file with an unknown first chunk");
  }
  if (h.width == 0 || h.height == 0) return cut_short("WebP", "the header declares a zero size");
  return h;
}

Result<ImageHeader> parse_tiff(const uint8_t* d, size_t n) {
  ImageHeader h;
  h.format = ImageFormat::kTiff;
  // A tag given twice counts once, the first time, as libtiff (OpenCV's decoder) reads it: the limits are checked on
  // the dimensions that will be decoded (found by fuzz_decode: a second ImageWidth of 1 hid the real 221).
  bool seen_width = false, seen_height = false, seen_orientation = false;
  bool ok = visit_ifd0(d, n, [&](uint32_t tag, uint32_t type, uint64_t count, const uint8_t* value) {
    int64_t v = tiff_scalar(d, type, count, value);
    if (tag == 256 && !std::exchange(seen_width, true)) h.width = v;
    if (tag == 257 && !std::exchange(seen_height, true)) h.height = v;
    if (tag == 274 && !std::exchange(seen_orientation, true) && v >= 1 && v <= 8) h.orientation = static_cast<int>(v);
    if (tag == 338) h.has_alpha = true;  // ExtraSamples
  });
  if (!ok) return cut_short("TIFF", "the first image directory (IFD) is cut short or malformed");
  if (h.width <= 0 || h.height <= 0) return cut_short("TIFF", "no valid ImageWidth/ImageLength in the first IFD");
  return h;
}

}  // namespace

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kBmp:
      return "BMP";
    case ImageFormat::kWebp:
      return "WebP";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kGif:
      return "GIF";
    case ImageFormat::kUnknown:
      break;
  }
  return "unknown";
}

ImageFormat sniff_image_format(const uint8_t* d, size_t n) {
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) return ImageFormat::kJpeg;
  if (starts_with(d, n, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::kPng;
  if (starts_with(d, n, "BM", 2)) return ImageFormat::kBmp;
  if (starts_with(d, n, "GIF87a", 6) || starts_with(d, n, "GIF89a", 6)) return ImageFormat::kGif;
  if (n >= 12 && std::memcmp(d, "RIFF", 4) == 0 && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::kWebp;
  if (starts_with(d, n, "II*\0", 4) || starts_with(d, n, "MM\0*", 4) || starts_with(d, n, "II+\0", 4) ||
      starts_with(d, n, "MM\0+", 4)) {
    return ImageFormat::kTiff;
  }
  return ImageFormat::kUnknown;
}

Result<ImageHeader> parse_image_header(const uint8_t* data, size_t size) {
  if (size == 0) return data_loss("the file is empty (0 bytes)");
  switch (sniff_image_format(data, size)) {
    case ImageFormat::kJpeg:
      return parse_jpeg(data, size);
    case ImageFormat::kPng:
      return parse_png(data, size);
    case ImageFormat::kBmp:
      return parse_bmp(data, size);
    case ImageFormat::kGif:
      return parse_gif(data, size);
    case ImageFormat::kWebp:
      return parse_webp(data, size);
    case ImageFormat::kTiff:
      return parse_tiff(data, size);
    case ImageFormat::kUnknown:
      break;
  }
  return unsupported("not an image format we read (JPEG, PNG, BMP, WebP or TIFF expected)");
}

int exif_orientation(const uint8_t* tiff, size_t size) {
  int orientation = 1;
  visit_ifd0(tiff, size, [&](uint32_t tag, uint32_t type, uint64_t count, const uint8_t* value) {
    if (tag != 274) return;
    int64_t v = tiff_scalar(tiff, type, count, value);
    if (v >= 1 && v <= 8) orientation = static_cast<int>(v);
  });
  return orientation;
}

Status check_image_complete(const ImageHeader& header, const uint8_t* d, size_t n) {
  switch (header.format) {
    case ImageFormat::kJpeg: {
      // In entropy-coded data 0xFF is always followed by 0x00 or a restart marker, so FF D9 after the first
      // scan header is the real end-of-image marker.
      size_t pos = 2;
      const uint8_t* sos = nullptr;
      // pos may pass n when the last segment's length points beyond the file (found by fuzz_decode).
      while (pos <= n && n - pos >= 4) {
        if (d[pos] != 0xFF) break;
        uint8_t marker = d[pos + 1];
        if (marker == 0xFF) {
          ++pos;
          continue;
        }
        if (marker == 0xDA) {
          sos = d + pos;
          break;
        }
        if (marker == 0xD8 || marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {
          pos += 2;
          continue;
        }
        pos += 2 + be16(d + pos + 2);
      }
      if (sos == nullptr) return cut_short("JPEG", "no image data (SOS marker) found");
      const uint8_t* end = d + n;
      for (const uint8_t* p = sos + 2; p + 1 < end; ++p) {
        if (p[0] == 0xFF && p[1] == 0xD9) return Status::ok();
      }
      return cut_short("JPEG", "the image data ends without an end-of-image marker");
    }
    case ImageFormat::kPng: {
      size_t pos = 8;
      while (n - pos >= 12) {
        uint32_t len = be32(d + pos);
        if (len > 0x7fffffff || len > n - pos - 12) break;
        if (std::memcmp(d + pos + 4, "IEND", 4) == 0) return Status::ok();
        pos += 12 + static_cast<size_t>(len);
      }
      return cut_short("PNG", "the chunk chain ends before the IEND chunk");
    }
    case ImageFormat::kWebp: {
      uint64_t riff = le32(d + 4);
      if (riff + 8 > n) return cut_short("WebP", "the file is shorter than its RIFF header declares");
      return Status::ok();
    }
    case ImageFormat::kBmp: {
      if (n < 34) return cut_short("BMP", "the header is cut short");
      uint32_t dib = le32(d + 14);
      if (dib < 40) return Status::ok();
      uint32_t bpp = le16(d + 28);
      uint32_t compression = le32(d + 30);
      if (compression != 0 && compression != 3) return Status::ok();  // RLE and others: the decoder checks
      double stride = static_cast<double>((static_cast<uint64_t>(header.width) * bpp + 31) / 32 * 4);
      double need = static_cast<double>(le32(d + 10)) + stride * static_cast<double>(header.height);
      if (need > static_cast<double>(n)) return cut_short("BMP", "the pixel rows end before the declared height");
      return Status::ok();
    }
    default:
      return Status::ok();
  }
}

}  // namespace steadyocr::pipeline

#include "pipeline/png_decode.h"

#include <png.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/jpeg_decode.h"  // the finding codes

namespace steadyocr::pipeline {
namespace {

enum class Stop { kNone, kError, kDeadline };

// What libpng's callbacks touch. png_error longjmps over libpng's C frames and the callback's back to feed(), so the
// callbacks keep no objects with destructors on their stack; the picture lives here.
struct PngContext {
  const PngLimits* limits = nullptr;
  Stop stop = Stop::kNone;
  char message[256] = {};
  bool have_info = false;
  bool ended = false;  // IEND reached
  cv::Mat pixels;
};

PngContext* context_of(png_structp png) {
  return static_cast<PngContext*>(png_get_progressive_ptr(png));
}

[[noreturn]] void on_error(png_structp png, png_const_charp msg) {
  auto* ctx = static_cast<PngContext*>(png_get_error_ptr(png));
  if (ctx->stop == Stop::kNone) {
    ctx->stop = Stop::kError;
    std::snprintf(ctx->message, sizeof(ctx->message), "%s", msg ? msg : "unknown libpng error");
  }
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {
}  // benign (extra compressed data, bad ancillary CRC): the image is whole

bool allocate(PngContext* ctx, int height, int width, int type) {
  try {
    ctx->pixels.create(height, width, type);
    return true;
  } catch (const cv::Exception&) {
    return false;
  }
}

// After the chunks before the image data: the transforms OpenCV's reader applies, then the picture of the declared
// size (checked against the limits before).
void on_info(png_structp png, png_infop info) {
  PngContext* ctx = context_of(png);
  png_uint_32 w = 0, h = 0;
  int bit_depth = 0, colour = 0;
  png_get_IHDR(png, info, &w, &h, &bit_depth, &colour, nullptr, nullptr, nullptr);
  png_bytep trans = nullptr;
  int num_trans = 0;
  png_color_16p trans_values = nullptr;
  int channels = 1;
  switch (colour) {
    case PNG_COLOR_TYPE_RGB:
    case PNG_COLOR_TYPE_PALETTE:
      png_get_tRNS(png, info, &trans, &num_trans, &trans_values);
      channels = num_trans > 0 ? 4 : 3;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
    case PNG_COLOR_TYPE_RGB_ALPHA:
      channels = 4;
      break;
    default:
      channels = 1;
  }
  const int depth = bit_depth == 16 ? 16 : 8;
  if (bit_depth == 16) png_set_swap(png);  // little-endian samples in the cv::Mat
  if (channels < 4) {
    png_set_strip_alpha(png);
  } else {
    png_set_tRNS_to_alpha(png);
  }
  if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((colour & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((colour & PNG_COLOR_MASK_COLOR) != 0 && channels > 1) {
    png_set_bgr(png);
  } else if (channels > 1) {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * channels * (depth / 8)) {
    png_error(png, "unexpected row size after the transforms");
  }
  if (!allocate(ctx, static_cast<int>(h), static_cast<int>(w), CV_MAKETYPE(depth == 16 ? CV_16U : CV_8U, channels))) {
    png_error(png, "out of memory for the picture");
  }
  ctx->have_info = true;
}

// Every row of every pass; the deadline is checked here.
void on_row(png_structp png, png_bytep row, png_uint_32 row_num, int) {
  PngContext* ctx = context_of(png);
  if (row != nullptr && row_num < static_cast<png_uint_32>(ctx->pixels.rows)) {
    png_progressive_combine_row(png, ctx->pixels.ptr<png_byte>(static_cast<int>(row_num)), row);
  }
  if (std::chrono::steady_clock::now() > ctx->limits->deadline) {
    ctx->stop = Stop::kDeadline;
    png_error(png, "decode deadline");
  }
}

void on_end(png_structp png, png_infop) {
  context_of(png)->ended = true;
}

// Feeds the file to libpng's progressive reader. Unlike png_read_image + png_read_end, it stops inflating at the
// first byte past the last row ("extra compressed data"): 1 MB of zlib data inflates to 1 GB, about a second of CPU,
// so the rows the header declares bound the work. False when libpng stopped (ctx->stop says why).
bool feed(png_structp png, png_infop info, const uint8_t* data, size_t size) {
  if (setjmp(png_jmpbuf(png))) return false;
  const PngLimits& l = *context_of(png)->limits;
  png_set_user_limits(png, static_cast<png_uint_32>(l.max_side), static_cast<png_uint_32>(l.max_side));
  png_set_chunk_malloc_max(png, static_cast<png_alloc_size_t>(l.max_chunk_bytes));
  png_set_chunk_cache_max(png, static_cast<png_uint_32>(l.max_chunks));
  size_t pos = 0;
  while (pos < size && !context_of(png)->ended) {
    const size_t n = std::min<size_t>(size - pos, 1 << 16);
    png_process_data(png, info, const_cast<png_bytep>(data + pos), n);
    pos += n;
  }
  return true;
}

Status stopped(const PngContext& ctx) {
  if (ctx.stop == Stop::kDeadline) {
    const int64_t ms = ctx.limits->deadline_ms;
    return Status(StatusCode::kResourceExhausted,
                  "PNG decode did not finish within the per-image decode deadline of " + std::to_string(ms) + " ms",
                  Finding{kImageDecodeTimeout, "decode stopped after " + std::to_string(ms) + " ms",
                          "send a smaller image, or raise the limit (--decode-deadline-ms)"});
  }
  return data_loss(std::string("PNG data is corrupt or truncated: ") + ctx.message +
                   "; send the complete, undamaged file");
}

}  // namespace

Result<cv::Mat> decode_png(const uint8_t* data, size_t size, const PngLimits& limits) {
  PngContext ctx;
  ctx.limits = &limits;
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
  if (png == nullptr) return internal_error("libpng could not create a read structure (out of memory?)");
  png_infop info = png_create_info_struct(png);
  struct Destroy {
    png_structp* png;
    png_infop* info;
    ~Destroy() { png_destroy_read_struct(png, info, nullptr); }
  } destroy{&png, &info};
  if (info == nullptr) return internal_error("libpng could not create an info structure (out of memory?)");
  png_set_progressive_read_fn(png, &ctx, on_info, on_row, on_end);
  if (!feed(png, info, data, size)) return stopped(ctx);
  if (!ctx.have_info || !ctx.ended) {
    return data_loss("PNG data is corrupt or truncated: the file ends before " +
                     std::string(ctx.have_info ? "its IEND chunk" : "its image data") +
                     "; send the complete, undamaged file");
  }
  return std::move(ctx.pixels);
}

}  // namespace steadyocr::pipeline

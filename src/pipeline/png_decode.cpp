#include "pipeline/png_decode.h"

#include <png.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pipeline/jpeg_decode.h"  // the finding codes

namespace steadyocr::pipeline {
namespace {

enum class Stop { kNone, kError, kDeadline };

// What libpng's callbacks touch; plain data only (png_error longjmps over C frames back to the stage).
struct PngContext {
  const uint8_t* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  const PngLimits* limits = nullptr;
  Stop stop = Stop::kNone;
  char message[256] = {};
};

PngContext* context_of(png_structp png) {
  return static_cast<PngContext*>(png_get_io_ptr(png));
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

void on_read(png_structp png, png_bytep out, size_t n) {
  PngContext* ctx = context_of(png);
  if (ctx->size - ctx->pos < n) png_error(png, "unexpected end of file (the file is truncated)");
  std::memcpy(out, ctx->data + ctx->pos, n);
  ctx->pos += n;
}

void on_row(png_structp png, png_uint_32, int) {
  PngContext* ctx = context_of(png);
  if (std::chrono::steady_clock::now() > ctx->limits->deadline) {
    ctx->stop = Stop::kDeadline;
    png_error(png, "decode deadline");
  }
}

struct Layout {
  int width = 0, height = 0, channels = 0, depth = 8;
};

// Stage 1: signature and chunks up to the image data, the transforms OpenCV's reader applies. False when libpng
// stopped (ctx->stop says why).
bool read_info(png_structp png, png_infop info, Layout* out) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_set_read_status_fn(png, on_row);
  const PngLimits& l = *context_of(png)->limits;
  png_set_user_limits(png, static_cast<png_uint_32>(l.max_side), static_cast<png_uint_32>(l.max_side));
  png_set_chunk_malloc_max(png, static_cast<png_alloc_size_t>(l.max_chunk_bytes));
  png_set_chunk_cache_max(png, static_cast<png_uint_32>(l.max_chunks));
  png_read_info(png, info);
  png_uint_32 w = 0, h = 0;
  int bit_depth = 0, colour = 0;
  png_get_IHDR(png, info, &w, &h, &bit_depth, &colour, nullptr, nullptr, nullptr);
  png_bytep trans = nullptr;
  int num_trans = 0;
  png_color_16p trans_values = nullptr;
  switch (colour) {
    case PNG_COLOR_TYPE_RGB:
    case PNG_COLOR_TYPE_PALETTE:
      png_get_tRNS(png, info, &trans, &num_trans, &trans_values);
      out->channels = num_trans > 0 ? 4 : 3;
      break;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
    case PNG_COLOR_TYPE_RGB_ALPHA:
      out->channels = 4;
      break;
    default:
      out->channels = 1;
  }
  out->depth = bit_depth == 16 ? 16 : 8;
  out->width = static_cast<int>(w);
  out->height = static_cast<int>(h);
  if (bit_depth == 16) png_set_swap(png);  // little-endian samples in the cv::Mat
  if (out->channels < 4) {
    png_set_strip_alpha(png);
  } else {
    png_set_tRNS_to_alpha(png);
  }
  if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if ((colour & PNG_COLOR_MASK_COLOR) == 0 && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if ((colour & PNG_COLOR_MASK_COLOR) != 0 && out->channels > 1) {
    png_set_bgr(png);
  } else if (out->channels > 1) {
    png_set_gray_to_rgb(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(w) * out->channels * (out->depth / 8)) {
    png_error(png, "unexpected row size after the transforms");
  }
  return true;
}

// Stage 2: every row into `rows` (each of the declared width), then the chunks up to IEND.
bool read_rows(png_structp png, png_infop info, png_bytepp rows) {
  if (setjmp(png_jmpbuf(png))) return false;
  png_read_image(png, rows);
  png_read_end(png, nullptr);
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
  ctx.data = data;
  ctx.size = size;
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
  png_set_read_fn(png, &ctx, on_read);

  Layout layout;
  if (!read_info(png, info, &layout)) return stopped(ctx);
  cv::Mat pixels(layout.height, layout.width, CV_MAKETYPE(layout.depth == 16 ? CV_16U : CV_8U, layout.channels));
  std::vector<png_bytep> rows(static_cast<size_t>(layout.height));
  for (int y = 0; y < layout.height; ++y) rows[static_cast<size_t>(y)] = pixels.ptr<png_byte>(y);
  if (!read_rows(png, info, rows.data())) return stopped(ctx);
  return pixels;
}

}  // namespace steadyocr::pipeline

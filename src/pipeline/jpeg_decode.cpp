#include "pipeline/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE
#include <string>

#include <jerror.h>
#include <jpeglib.h>

namespace steadyocr::pipeline {
namespace {

// Why the decode stopped early. libjpeg reports through callbacks that must not return (error_exit) or may not
// throw through C frames, so they record the cause here and longjmp back to the stage that called libjpeg.
enum class Stop { kNone, kError, kCorrupt, kTooManyScans, kDeadline };

// Everything the callbacks touch; plain data only (longjmp skips destructors).
struct JpegContext {
  jpeg_decompress_struct cinfo{};
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  const JpegLimits* limits = nullptr;
  Stop stop = Stop::kNone;
  int scans = 0;
  char message[JMSG_LENGTH_MAX] = {};
};

JpegContext* context_of(j_common_ptr c) {
  return static_cast<JpegContext*>(c->client_data);
}

[[noreturn]] void on_error_exit(j_common_ptr c) {
  JpegContext* ctx = context_of(c);
  ctx->stop = Stop::kError;
  (*c->err->format_message)(c, ctx->message);
  std::longjmp(ctx->jump, 1);
}

// Warnings that mean libjpeg goes on with pixels it made up (grey or zero-filled blocks): errors for us.
bool invents_pixels(int msg_code) {
  switch (msg_code) {
    case JWRN_JPEG_EOF:        // premature end of file: the rest is padded
    case JWRN_HIT_MARKER:      // premature end of a data segment
    case JWRN_MUST_RESYNC:     // corrupt data, resynchronising
    case JWRN_HUFF_BAD_CODE:   // bad Huffman code
    case JWRN_NOT_SEQUENTIAL:  // invalid SOS parameters for sequential JPEG
      return true;
    default:
      return false;
  }
}

void on_message(j_common_ptr c, int level) {
  if (level >= 0) return;  // trace messages
  if (!invents_pixels(c->err->msg_code)) {
    c->err->num_warnings++;  // harmless (extraneous bytes, unknown JFIF revision, odd progression order)
    return;
  }
  JpegContext* ctx = context_of(c);
  ctx->stop = Stop::kCorrupt;
  (*c->err->format_message)(c, ctx->message);
  std::longjmp(ctx->jump, 1);
}

// Called by libjpeg for every iMCU row of every scan it reads and every output row: the scan count and the deadline
// are checked long before a hostile file has cost anything.
void on_progress(j_common_ptr c) {
  JpegContext* ctx = context_of(c);
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  ctx->scans = std::max(ctx->scans, d->input_scan_number);
  if (d->input_scan_number > ctx->limits->max_scans) {
    ctx->stop = Stop::kTooManyScans;
    std::longjmp(ctx->jump, 1);
  }
  if (std::chrono::steady_clock::now() > ctx->limits->deadline) {
    ctx->stop = Stop::kDeadline;
    std::longjmp(ctx->jump, 1);
  }
}

// Stage 1: the header, then the output colour space. False when libjpeg stopped (ctx->stop says why).
bool read_header(JpegContext* ctx, const uint8_t* data, size_t size) {
  if (setjmp(ctx->jump)) return false;
  jpeg_create_decompress(&ctx->cinfo);
  ctx->cinfo.client_data = ctx;
  ctx->cinfo.mem->max_memory_to_use = static_cast<long>(ctx->limits->max_memory_bytes);
  ctx->cinfo.progress = &ctx->progress;
  jpeg_mem_src(&ctx->cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&ctx->cinfo, TRUE);
  // As OpenCV's reader: CMYK (and YCCK) come out as CMYK and are converted below; everything else as BGR.
  if (ctx->cinfo.num_components == 4) {
    ctx->cinfo.out_color_space = JCS_CMYK;
  } else {
    ctx->cinfo.out_color_space = JCS_EXT_BGR;
  }
  jpeg_calc_output_dimensions(&ctx->cinfo);
  return true;
}

// Stage 2: every scan (progressive files are read whole by jpeg_start_decompress), then the rows into `out`.
bool read_pixels(JpegContext* ctx, uint8_t* out, size_t step) {
  if (setjmp(ctx->jump)) return false;
  jpeg_start_decompress(&ctx->cinfo);
  // Several rows per call (libjpeg-turbo's upsampling makes rec_outbuf_height rows at once; asked for one, it makes
  // them into a spare buffer and copies each out).
  constexpr JDIMENSION kRows = 16;
  JSAMPROW rows[kRows];
  while (ctx->cinfo.output_scanline < ctx->cinfo.output_height) {
    const JDIMENSION first = ctx->cinfo.output_scanline;
    const JDIMENSION n = std::min(kRows, ctx->cinfo.output_height - first);
    for (JDIMENSION i = 0; i < n; ++i) rows[i] = out + static_cast<size_t>(first + i) * step;
    if (jpeg_read_scanlines(&ctx->cinfo, rows, n) == 0) break;  // suspended: cannot happen with a memory source
  }
  jpeg_finish_decompress(&ctx->cinfo);
  return true;
}

// OpenCV's CMYK to BGR (icvCvt_CMYK2BGR_8u_C4C3R), so that results do not depend on which decoder read the file.
void cmyk_to_bgr(const cv::Mat& cmyk, cv::Mat* bgr) {
  *bgr = cv::Mat(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* in = cmyk.ptr<uint8_t>(y);
    uint8_t* o = bgr->ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, in += 4, o += 3) {
      int k = in[3];
      o[2] = static_cast<uint8_t>(k - ((255 - in[0]) * k >> 8));
      o[1] = static_cast<uint8_t>(k - ((255 - in[1]) * k >> 8));
      o[0] = static_cast<uint8_t>(k - ((255 - in[2]) * k >> 8));
    }
  }
}

Status stopped(const JpegContext& ctx) {
  const JpegLimits& l = *ctx.limits;
  switch (ctx.stop) {
    case Stop::kTooManyScans:
      return Status(StatusCode::kResourceExhausted,
                    "JPEG has more than " + std::to_string(l.max_scans) +
                        " scans (the limit per progressive image; ordinary progressive files have about 10)",
                    Finding{kImageTooManyScans, "more than " + std::to_string(l.max_scans) + " scans",
                            "re-encode the image as baseline JPEG or PNG (e.g. `convert in.jpg -interlace none "
                            "out.jpg`), or raise the limit (--max-jpeg-scans)"});
    case Stop::kDeadline:
      return Status(StatusCode::kResourceExhausted,
                    "JPEG decode did not finish within the per-image decode deadline of " +
                        std::to_string(l.deadline_ms) + " ms (stopped at scan " + std::to_string(ctx.scans) + ")",
                    Finding{kImageDecodeTimeout, "decode stopped after " + std::to_string(l.deadline_ms) + " ms",
                            "send a smaller or baseline image, or raise the limit (--decode-deadline-ms)"});
    case Stop::kCorrupt:
      return data_loss(std::string("JPEG data is corrupt or truncated: ") + ctx.message +
                       "; send the complete, undamaged file");
    case Stop::kError:
      return data_loss(std::string("JPEG data could not be decoded: ") + ctx.message);
    case Stop::kNone:
      break;
  }
  return internal_error("JPEG decoder stopped without a cause");
}

}  // namespace

Result<cv::Mat> decode_jpeg(const uint8_t* data, size_t size, const JpegLimits& limits) {
  JpegContext ctx;
  ctx.limits = &limits;
  ctx.cinfo.err = jpeg_std_error(&ctx.err);
  ctx.err.error_exit = on_error_exit;
  ctx.err.emit_message = on_message;
  ctx.progress.progress_monitor = on_progress;
  ctx.cinfo.client_data = &ctx;

  struct Destroy {
    JpegContext* ctx;
    ~Destroy() { jpeg_destroy_decompress(&ctx->cinfo); }  // safe on a half-created or failed object
  } destroy{&ctx};

  if (!read_header(&ctx, data, size)) return stopped(ctx);
  const int channels = ctx.cinfo.output_components;
  if (channels != 3 && channels != 4) {
    return unsupported("JPEG with " + std::to_string(channels) + " output components is not supported");
  }
  cv::Mat pixels(static_cast<int>(ctx.cinfo.output_height), static_cast<int>(ctx.cinfo.output_width), CV_8UC(channels));
  if (!read_pixels(&ctx, pixels.data, pixels.step)) return stopped(ctx);
  if (channels == 3) return pixels;
  cv::Mat bgr;
  cmyk_to_bgr(pixels, &bgr);
  return bgr;
}

}  // namespace steadyocr::pipeline

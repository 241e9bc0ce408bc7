#include "server/errors.h"

namespace steadyocr::server {

const std::vector<ErrorCodeInfo>& error_codes() {
  static const std::vector<ErrorCodeInfo> kCodes = {
      {"INVALID_JSON", 400, "the body is not the JSON the route takes"},
      {"BAD_REQUEST", 400, "the request line or headers cannot be parsed"},
      {"MISSING_IMAGE", 400, "no image in the request (no body, no `file` field, no `image` member)"},
      {"INVALID_BASE64", 400, "an `image` (or OIP BYTES element) is not valid base64"},
      {"BAD_MULTIPART", 400, "the multipart/form-data body cannot be parsed (boundary, parts)"},
      {"UNKNOWN_OPTION", 400, "an option (or OIP parameter) the server does not know; never ignored"},
      {"INVALID_OPTION", 400, "an option's value is out of range or of the wrong type"},
      {"OPTION_UNAVAILABLE", 400, "an option needs a model this server did not load"},
      {"BATCH_TOO_LARGE", 400, "more images than --max-batch"},
      {"INVALID_INFER_REQUEST", 400, "an OIP inference request that breaks the protocol (inputs, shape, datatype)"},
      {"BODY_INCOMPLETE", 400, "the connection ended before the body did"},
      {"NOT_FOUND", 404, "no such route (or OIP model)"},
      {"METHOD_NOT_ALLOWED", 405, "the route exists with another method"},
      {"BODY_TIMEOUT", 408, "the body arrived too slowly (--read-timeout-s per read, --body-timeout-s in all)"},
      {"LENGTH_REQUIRED", 411, "a POST without Content-Length or chunked encoding"},
      {"BODY_TOO_LARGE", 413, "the body is larger than --max-body-mb"},
      {"UNSUPPORTED_MEDIA_TYPE", 415, "a Content-Type the route does not take"},
      {"UNSUPPORTED_IMAGE_FORMAT", 422, "the bytes are not an image format steadyocr reads"},
      {"IMAGE_TRUNCATED", 422, "the image file is cut short or damaged"},
      {"IMAGE_TOO_LARGE", 422, "a side is longer than --max-side (read from the header, before decoding)"},
      {"IMAGE_TOO_MANY_PIXELS", 422, "more pixels than --max-pixels (read from the header, before decoding)"},
      {"IMAGE_TOO_MANY_SCANS", 422, "a progressive JPEG with more scans than --max-jpeg-scans"},
      {"IMAGE_DECODE_TIMEOUT", 422, "decoding the image took longer than --decode-deadline-ms"},
      {"IMAGE_UNREADABLE", 422, "the decoder could not read the image"},
      {"OCR_FAILED", 500, "the engine failed on the image (the message names the finding and its fix)"},
      {"INTERNAL", 500, "a bug in the server"},
      {"SERVER_BUSY", 503, "the queue is full (--max-queue); retry after Retry-After"},
      {"SERVER_STARTING", 503, "the models are still loading"},
      {"SERVER_DRAINING", 503, "the server is shutting down (SIGTERM); send the request elsewhere"},
      {"ENGINE_UNAVAILABLE", 503, "no backend of the ladder can serve (or out of device memory)"},
      {"DEADLINE_EXCEEDED", 504, "no result within --deadline-ms; queued work past its deadline is dropped"},
  };
  return kCodes;
}

ApiError api_error(const std::string& code, std::string message, std::string fix) {
  ApiError e;
  e.code = code;
  e.message = std::move(message);
  e.fix = std::move(fix);
  for (const auto& c : error_codes()) {
    if (code == c.code) e.http_status = c.http_status;
  }
  return e;
}

nlohmann::ordered_json v1_error_json(const ApiError& e) {
  return {{"error", {{"code", e.code}, {"message", e.message}, {"fix", e.fix}}}};
}

nlohmann::ordered_json oip_error_json(const ApiError& e) {
  return {{"error", e.message + (e.fix.empty() ? "" : " (fix: " + e.fix + ")")}};
}

ApiError error_from_status(const Status& s) {
  const std::string& m = s.message();
  // The decoder's limits that are not about size name themselves (pipeline/jpeg_decode.h).
  if (s.finding() && (s.finding()->code == "IMAGE_TOO_MANY_SCANS" || s.finding()->code == "IMAGE_DECODE_TIMEOUT")) {
    return api_error(s.finding()->code, m, s.finding()->fix);
  }
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      return api_error("OPTION_UNAVAILABLE", m, "leave the option out, or start the server with the model it needs");
    case StatusCode::kDataLoss:
      return api_error("IMAGE_TRUNCATED", m, "send the complete file");
    case StatusCode::kUnsupported:
      return api_error("UNSUPPORTED_IMAGE_FORMAT", m, "send JPEG, PNG, BMP, WebP, TIFF or GIF");
    case StatusCode::kResourceExhausted:
      return api_error("IMAGE_TOO_MANY_PIXELS", m, "send a smaller image (or raise --max-side / --max-pixels)");
    case StatusCode::kNotFound:
      return api_error("IMAGE_UNREADABLE", m, "send an image file steadyocr reads");
    case StatusCode::kOutOfMemory: {
      ApiError e = api_error("ENGINE_UNAVAILABLE", m, "retry later, send a smaller image, or raise --gpu-mem");
      e.retry_after_s = 1;
      return e;
    }
    case StatusCode::kUnavailable: {
      ApiError e = api_error(
          "ENGINE_UNAVAILABLE", m,
          s.finding() && !s.finding()->fix.empty() ? s.finding()->fix : "run `steadyocr doctor` on this machine");
      e.retry_after_s = 5;
      return e;
    }
    default: {
      std::string msg = m;
      std::string fix = "run `steadyocr doctor --level 4` on this machine; the engine logs name the rung";
      if (s.finding()) {
        msg = s.finding()->code + ": " + m;
        if (!s.finding()->fix.empty()) fix = s.finding()->fix;
      }
      return api_error("OCR_FAILED", msg, fix);
    }
  }
}

}  // namespace steadyocr::server

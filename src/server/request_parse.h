// What a request body becomes: images (bytes, name, options) or the error that refuses it. Independent of the HTTP
// library: the routes hand over the body, its Content-Type, its multipart parts and the query parameters.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipeline/image_decode.h"
#include "pipeline/image_header.h"
#include "pipeline/pipeline.h"
#include "server/errors.h"

namespace steadyocr::server {

using Refusal = std::optional<ApiError>;

// Decodes standard base64 (RFC 4648; padding optional, line breaks and spaces skipped, a "data:...;base64," prefix
// dropped). The refusal names the first bad character's offset.
Refusal decode_base64(std::string_view text, std::vector<uint8_t>* out);
std::string encode_base64(const uint8_t* data, size_t size);

// A JSON value as text for messages: strings that are not valid UTF-8 (a query parameter or form field can carry
// any bytes) are shown with U+FFFD instead of throwing (found by fuzz_request).
std::string json_text(const nlohmann::json& v);

// What the server loaded: which per-request options it can honour.
struct ServingModels {
  pipeline::OcrMode mode = pipeline::OcrMode::kFull;  // the server's default mode (--det-only / --rec-only)
  bool det = true, rec = true, cls = false;
  bool cls_default = false;  // --cls
};

// The per-request options: det_thresh, det_box_thresh, unclip_ratio, drop_score (numbers), cls, det_only, rec_only
// (booleans). An unknown option is UNKNOWN_OPTION naming it; a bad value INVALID_OPTION; one that needs a model the
// server did not load OPTION_UNAVAILABLE. `out` starts from what is already set (a batch's options under an image's).
Refusal parse_options(const nlohmann::json& options, const ServingModels& models, pipeline::ImageOptions* out);
// The same from query parameters (strings: numbers, true/false/1/0).
Refusal parse_query_options(const std::multimap<std::string, std::string>& params, const ServingModels& models,
                            pipeline::ImageOptions* out);
// The option names, for messages and docs.
const std::vector<std::string>& option_names();

// Checks an image from its header before anything is decoded: a format steadyocr reads, sides and pixels within
// `limits`, the file complete. 422 codes (UNSUPPORTED_IMAGE_FORMAT, IMAGE_TOO_LARGE, IMAGE_TOO_MANY_PIXELS,
// IMAGE_TRUNCATED); an empty image is MISSING_IMAGE.
Refusal check_image(const uint8_t* data, size_t size, const pipeline::DecodeLimits& limits,
                    pipeline::ImageHeader* header_out = nullptr);

struct BodyPart {
  std::string name;  // the form field
  std::string filename;
  std::string content_type;
  std::string content;
};

struct RequestBody {
  std::string content_type;     // the header, parameters included
  std::string data;             // the body (not multipart)
  std::vector<BodyPart> parts;  // multipart/form-data
  std::multimap<std::string, std::string> query;
};

struct ImageInput {
  std::string name;
  std::vector<uint8_t> bytes;
  pipeline::ImageOptions options;
  Refusal error;  // this image cannot be read (a batch answers it in its slot)
};

// POST /v1/ocr: one image as the raw body (image/* or application/octet-stream; options from the query), as the
// multipart field `file` (options from the field `options`, JSON, or the query), or as JSON {"image": base64,
// "options": {...}}. Header checks are not made here (check_image).
Refusal parse_single(const RequestBody& body, const ServingModels& models, ImageInput* out);
// POST /v1/ocr/batch: JSON {"images": [base64 | {"image", "name", "options"}], "options": {...}} (or the list alone),
// or multipart with one `file` field per image. At most `max_batch` images. A slot's own bad data (base64, options)
// is that slot's error; a malformed request refuses the whole batch.
Refusal parse_batch(const RequestBody& body, const ServingModels& models, int max_batch, std::vector<ImageInput>* out);

// The media type without parameters, lower case ("multipart/form-data").
std::string media_type(const std::string& content_type);

}  // namespace steadyocr::server

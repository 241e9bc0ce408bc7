#include "server/request_parse.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "pipeline/image_header.h"

namespace steadyocr::server {
namespace {

using json = nlohmann::json;
using pipeline::OcrMode;

int base64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

ApiError bad_option(const std::string& name, const std::string& why) {
  return api_error("INVALID_OPTION", "option '" + name + "' " + why,
                   "see docs/SERVING.md for the options and their ranges");
}

// A number in [lo, hi] from a JSON value.
Refusal number_in(const std::string& name, const json& v, double lo, double hi, double* out) {
  if (!v.is_number()) return bad_option(name, "must be a number (got " + json_text(v) + ")");
  *out = v.get<double>();
  if (!(*out >= lo && *out <= hi)) {
    return bad_option(
        name, "must be in [" + json_text(json(lo)) + ", " + json_text(json(hi)) + "] (got " + json_text(v) + ")");
  }
  return std::nullopt;
}

Refusal boolean(const std::string& name, const json& v, bool* out) {
  if (!v.is_boolean()) return bad_option(name, "must be true or false (got " + json_text(v) + ")");
  *out = v.get<bool>();
  return std::nullopt;
}

// Applies one option to `out`.
Refusal apply_option(const std::string& name, const json& v, const ServingModels& m, pipeline::ImageOptions* out) {
  double d;
  bool b;
  if (name == "det_thresh" || name == "det_box_thresh" || name == "drop_score") {
    if (auto e = number_in(name, v, 0.0, 1.0, &d)) return e;
    if (name == "det_thresh") out->det_thresh = static_cast<float>(d);
    if (name == "det_box_thresh") out->det_box_thresh = d;
    if (name == "drop_score") out->drop_score = static_cast<float>(d);
    return std::nullopt;
  }
  if (name == "unclip_ratio") {
    if (auto e = number_in(name, v, 0.0, 10.0, &d)) return e;
    out->unclip_ratio = d;
    return std::nullopt;
  }
  if (name == "rec_interp") {
    pipeline::RecInterp interp;
    if (!v.is_string() || !pipeline::parse_rec_interp(v.get<std::string>(), &interp)) {
      return bad_option(name, "must be \"linear\", \"cubic\" or \"lanczos\" (got " + v.dump() + ")");
    }
    out->rec_interp = interp;
    return std::nullopt;
  }
  if (name == "cls") {
    if (auto e = boolean(name, v, &b)) return e;
    out->use_cls = b;
    return std::nullopt;
  }
  if (name == "det_only" || name == "rec_only") {
    if (auto e = boolean(name, v, &b)) return e;
    const OcrMode mode = name == "det_only" ? OcrMode::kDetOnly : OcrMode::kRecOnly;
    const OcrMode current = out->mode.value_or(m.mode);
    if (b) {
      if (current != OcrMode::kFull && current != mode) {
        return bad_option(name, "cannot be combined with " + std::string(name == "det_only" ? "rec_only" : "det_only"));
      }
      out->mode = mode;
    } else if (current == mode) {
      out->mode = OcrMode::kFull;
    }
    return std::nullopt;
  }
  std::string known;
  for (const auto& n : option_names()) known += (known.empty() ? "" : ", ") + n;
  return api_error("UNKNOWN_OPTION", "unknown option '" + name + "'", "the options are: " + known);
}

// The models the options need, loaded or not.
Refusal check_available(const pipeline::ImageOptions& o, const ServingModels& m) {
  const OcrMode mode = o.mode.value_or(m.mode);
  const bool cls = o.use_cls.value_or(m.cls_default);
  if (mode != OcrMode::kRecOnly && !m.det) {
    return api_error("OPTION_UNAVAILABLE", "detection needs the detection model, which this server did not load",
                     "send rec_only: true, or start the server without --rec-only");
  }
  if (mode != OcrMode::kDetOnly && !m.rec) {
    return api_error("OPTION_UNAVAILABLE", "reading text needs the recognition model, which this server did not load",
                     "send det_only: true, or start the server without --det-only");
  }
  if (cls && mode != OcrMode::kDetOnly && !m.cls) {
    return api_error("OPTION_UNAVAILABLE", "cls needs the angle classifier model, which this server did not find",
                     "put ch_ppocr_mobile_v2.0_cls_infer.onnx in --models (or pass --cls-model) and restart");
  }
  return std::nullopt;
}

Refusal options_from(const json& options, const ServingModels& m, pipeline::ImageOptions* out) {
  if (options.is_null()) return std::nullopt;
  if (!options.is_object()) {
    return api_error("INVALID_OPTION", "'options' must be a JSON object (got " + json_text(options) + ")",
                     R"(send e.g. "options": {"det_only": true})");
  }
  for (const auto& [k, v] : options.items()) {
    if (auto e = apply_option(k, v, m, out)) return e;
  }
  return check_available(*out, m);
}

Refusal image_from_json(const json& item, size_t index, const ServingModels& m, ImageInput* out, bool batch) {
  const std::string where = batch ? "images[" + std::to_string(index) + "]" : "the body";
  const json* b64 = &item;
  if (item.is_object()) {
    for (const auto& [k, v] : item.items()) {
      if (k != "image" && k != "name" && k != "options") {
        return api_error("INVALID_JSON", where + " has an unknown member '" + k + "'",
                         R"(an image is {"image": "<base64>", "name": "...", "options": {...}})");
      }
    }
    if (!item.contains("image")) {
      return api_error("MISSING_IMAGE", where + " has no 'image' member", R"(send {"image": "<base64 of the file>"})");
    }
    b64 = &item["image"];
    if (item.contains("name")) {
      if (!item["name"].is_string()) return api_error("INVALID_JSON", where + ".name must be a string");
      out->name = item["name"].get<std::string>();
    }
    if (item.contains("options")) {
      if (auto e = options_from(item["options"], m, &out->options)) return e;
    }
  }
  if (!b64->is_string()) {
    return api_error("INVALID_BASE64", where + (item.is_object() ? ".image" : "") + " must be a base64 string",
                     "encode the image file's bytes as base64");
  }
  return decode_base64(b64->get_ref<const std::string&>(), &out->bytes);
}

json parse_json_body(const std::string& data, Refusal* error) {
  json j = json::parse(data, nullptr, false);
  if (j.is_discarded()) {
    *error = api_error("INVALID_JSON", "the body is not valid JSON", "send a JSON document (see docs/SERVING.md)");
  }
  return j;
}

bool is_raw_image_type(const std::string& type) {
  return type.rfind("image/", 0) == 0 || type == "application/octet-stream";
}

ApiError unsupported_type(const std::string& type, const char* accepted) {
  return api_error("UNSUPPORTED_MEDIA_TYPE",
                   "Content-Type '" + (type.empty() ? std::string("(none)") : type) + "' is not taken here",
                   std::string("send ") + accepted);
}

}  // namespace

std::string json_text(const json& v) {
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string media_type(const std::string& content_type) {
  std::string t = content_type.substr(0, content_type.find(';'));
  t.erase(std::remove_if(t.begin(), t.end(), [](unsigned char c) { return std::isspace(c); }), t.end());
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return t;
}

Refusal decode_base64(std::string_view text, std::vector<uint8_t>* out) {
  out->clear();
  size_t start = 0;
  if (text.rfind("data:", 0) == 0) {
    size_t comma = text.find(',');
    if (comma == std::string_view::npos || text.substr(0, comma).find(";base64") == std::string_view::npos) {
      return api_error("INVALID_BASE64", "a data: URI without ';base64,'", "send data:image/png;base64,<data>");
    }
    start = comma + 1;
  }
  out->reserve((text.size() - start) / 4 * 3 + 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t padding = 0;
  for (size_t i = start; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\r' || c == '\n' || c == ' ' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int v = base64_value(c);
    if (v < 0 || padding > 0) {
      return api_error("INVALID_BASE64",
                       "invalid base64: " + std::string(padding > 0 ? "data after '=' padding" : "character") +
                           " at offset " + std::to_string(i),
                       "encode the image with standard base64 (RFC 4648, alphabet A-Z a-z 0-9 + /)");
    }
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
    }
  }
  if (bits >= 6 || padding > 2) {  // 6 leftover bits: one stray character, not a whole byte
    return api_error("INVALID_BASE64", "invalid base64: the data ends in the middle of a byte",
                     "send the whole base64 text");
  }
  return std::nullopt;
}

std::string encode_base64(const uint8_t* data, size_t size) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    uint32_t n = static_cast<uint32_t>(data[i]) << 16;
    if (i + 1 < size) n |= static_cast<uint32_t>(data[i + 1]) << 8;
    if (i + 2 < size) n |= data[i + 2];
    out += kAlphabet[(n >> 18) & 63];
    out += kAlphabet[(n >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(n >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[n & 63] : '=';
  }
  return out;
}

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> kNames = {
      "det_thresh", "det_box_thresh", "unclip_ratio", "drop_score", "rec_interp", "cls", "det_only", "rec_only"};
  return kNames;
}

Refusal parse_options(const json& options, const ServingModels& models, pipeline::ImageOptions* out) {
  return options_from(options, models, out);
}

Refusal parse_query_options(const std::multimap<std::string, std::string>& params, const ServingModels& models,
                            pipeline::ImageOptions* out) {
  json options = json::object();
  for (const auto& [k, v] : params) {
    const bool numeric = k == "det_thresh" || k == "det_box_thresh" || k == "unclip_ratio" || k == "drop_score";
    if (!numeric) {
      options[k] = v == "true" || v == "1" ? json(true) : v == "false" || v == "0" ? json(false) : json(v);
      continue;
    }
    char* end = nullptr;
    errno = 0;
    const double d = std::strtod(v.c_str(), &end);
    const bool ok = !v.empty() && end == v.c_str() + v.size() && errno == 0 && std::isfinite(d);
    options[k] = ok ? json(d) : json(v);  // a string is refused as the wrong type
  }
  return options_from(options, models, out);
}

Refusal check_image(const uint8_t* data, size_t size, const pipeline::DecodeLimits& limits,
                    pipeline::ImageHeader* header_out) {
  if (size == 0) return api_error("MISSING_IMAGE", "the image is empty (0 bytes)", "send the image file's bytes");
  auto header = pipeline::parse_image_header(data, size);
  if (!header.is_ok()) {
    if (header.status().code() == StatusCode::kDataLoss) {
      return api_error("IMAGE_TRUNCATED", header.status().message(), "send the complete file");
    }
    return api_error("UNSUPPORTED_IMAGE_FORMAT", header.status().message(), "send JPEG, PNG, BMP, WebP or TIFF");
  }
  const pipeline::ImageHeader& h = *header;
  const std::string fmt = pipeline::image_format_name(h.format);
  if (h.format == pipeline::ImageFormat::kGif) {
    return api_error("UNSUPPORTED_IMAGE_FORMAT", "GIF images are not read", "convert it to PNG");
  }
  const std::string dims = std::to_string(h.width) + "x" + std::to_string(h.height);
  if (std::max(h.width, h.height) > limits.max_side) {
    return api_error("IMAGE_TOO_LARGE",
                     fmt + " header declares " + dims + " pixels, over the limit of " +
                         std::to_string(limits.max_side) + " per side",
                     "downscale the image (or start the server with a larger --max-side)");
  }
  if (h.width * h.height > limits.max_pixels) {
    return api_error("IMAGE_TOO_MANY_PIXELS",
                     fmt + " header declares " + dims + " = " + std::to_string(h.width * h.height) +
                         " pixels, over the limit of " + std::to_string(limits.max_pixels),
                     "downscale the image (or start the server with a larger --max-pixels)");
  }
  Status complete = pipeline::check_image_complete(h, data, size);
  if (!complete.is_ok()) return api_error("IMAGE_TRUNCATED", complete.message(), "send the complete file");
  if (header_out) *header_out = h;
  return std::nullopt;
}

Refusal parse_single(const RequestBody& body, const ServingModels& models, ImageInput* out) {
  const std::string type = media_type(body.content_type);
  if (is_raw_image_type(type)) {
    if (auto e = parse_query_options(body.query, models, &out->options)) return e;
    out->bytes.assign(body.data.begin(), body.data.end());
    if (out->bytes.empty()) return api_error("MISSING_IMAGE", "the body is empty", "send the image file as the body");
    return check_available(out->options, models);
  }
  if (type == "multipart/form-data") {
    if (auto e = parse_query_options(body.query, models, &out->options)) return e;
    const BodyPart* file = nullptr;
    for (const auto& p : body.parts) {
      if (p.name == "file") {
        if (file)
          return api_error("BATCH_TOO_LARGE", "more than one 'file' field", "send several images to /v1/ocr/batch");
        file = &p;
      } else if (p.name == "options") {
        json j = json::parse(p.content, nullptr, false);
        if (j.is_discarded())
          return api_error("INVALID_JSON", "the 'options' field is not JSON", R"(e.g. {"cls": true})");
        if (auto e = options_from(j, models, &out->options)) return e;
      } else {
        return api_error("UNKNOWN_OPTION", "unknown form field '" + p.name + "'",
                         "send the image as the field 'file' (and options as JSON in the field 'options')");
      }
    }
    if (!file) return api_error("MISSING_IMAGE", "no 'file' field in the form", "send the image as the field 'file'");
    out->name = file->filename;
    out->bytes.assign(file->content.begin(), file->content.end());
    return check_available(out->options, models);
  }
  if (type == "application/json") {
    if (!body.query.empty()) {
      return api_error("UNKNOWN_OPTION", "query parameters with a JSON body", "put the options in \"options\"");
    }
    Refusal error;
    json j = parse_json_body(body.data, &error);
    if (error) return error;
    if (!j.is_object()) return api_error("INVALID_JSON", "the body must be a JSON object", R"({"image": "<base64>"})");
    if (auto e = image_from_json(j, 0, models, out, false)) return e;
    return check_available(out->options, models);
  }
  return unsupported_type(type, "image/* (the file as the body), multipart/form-data or application/json");
}

Refusal parse_batch(const RequestBody& body, const ServingModels& models, int max_batch, std::vector<ImageInput>* out) {
  const std::string type = media_type(body.content_type);
  pipeline::ImageOptions common;
  auto too_many = [&](size_t n) {
    return api_error("BATCH_TOO_LARGE",
                     std::to_string(n) + " images in one batch, more than --max-batch " + std::to_string(max_batch),
                     "split the batch");
  };
  if (type == "multipart/form-data") {
    if (auto e = parse_query_options(body.query, models, &common)) return e;
    for (const auto& p : body.parts) {
      if (p.name != "options") continue;
      json j = json::parse(p.content, nullptr, false);
      if (j.is_discarded())
        return api_error("INVALID_JSON", "the 'options' field is not JSON", R"(e.g. {"cls": true})");
      if (auto e = options_from(j, models, &common)) return e;
    }
    for (const auto& p : body.parts) {
      if (p.name == "options") continue;
      if (p.name != "file" && p.name != "files" && p.name != "file[]") {
        return api_error("UNKNOWN_OPTION", "unknown form field '" + p.name + "'",
                         "send each image as a field 'file' (and options as JSON in the field 'options')");
      }
      ImageInput in;
      in.name = p.filename;
      in.options = common;
      in.bytes.assign(p.content.begin(), p.content.end());
      out->push_back(std::move(in));
    }
  } else if (type == "application/json") {
    Refusal error;
    json j = parse_json_body(body.data, &error);
    if (error) return error;
    const json* list = &j;
    if (j.is_object()) {
      for (const auto& [k, v] : j.items()) {
        if (k != "images" && k != "options") {
          return api_error("INVALID_JSON", "unknown member '" + k + "'", R"({"images": [...], "options": {...}})");
        }
      }
      if (!j.contains("images")) return api_error("MISSING_IMAGE", "no 'images' list", R"({"images": ["<base64>"]})");
      if (j.contains("options")) {
        if (auto e = options_from(j["options"], models, &common)) return e;
      }
      list = &j["images"];
    }
    if (!list->is_array()) return api_error("INVALID_JSON", "'images' must be a list", R"({"images": ["<base64>"]})");
    if (list->size() > static_cast<size_t>(max_batch)) return too_many(list->size());
    for (size_t i = 0; i < list->size(); ++i) {
      ImageInput in;
      in.options = common;
      in.error = image_from_json((*list)[i], i, models, &in, true);
      if (!in.error) in.error = check_available(in.options, models);
      out->push_back(std::move(in));
    }
  } else {
    return unsupported_type(type, "application/json ({\"images\": [...]}) or multipart/form-data");
  }
  if (out->empty()) return api_error("MISSING_IMAGE", "the batch holds no image", "send at least one image");
  if (out->size() > static_cast<size_t>(max_batch)) return too_many(out->size());
  return std::nullopt;
}

}  // namespace steadyocr::server

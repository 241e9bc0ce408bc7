// The Open Inference Protocol's inference request (JSON, or Triton's binary tensor data extension) read into images,
// independent of the HTTP library (so that tests and fuzz/fuzz_request.cpp call it without a socket).
#include "server/oip_parse.h"

#include <cstdlib>

namespace steadyocr::server {
namespace {

using json = nlohmann::json;

constexpr int64_t kMaxElements = int64_t{1} << 40;  // the element count saturates here

ApiError invalid(const std::string& message, const std::string& fix = "see docs/SERVING.md, Open Inference Protocol") {
  return api_error("INVALID_INFER_REQUEST", message, fix);
}

void flatten_strings(const json& data, std::vector<const std::string*>* out, bool* ok) {
  if (data.is_array()) {
    for (const auto& d : data) flatten_strings(d, out, ok);
  } else if (data.is_string()) {
    out->push_back(&data.get_ref<const std::string&>());
  } else {
    *ok = false;
  }
}

// The images of the one BYTES input: base64 strings in `data`, or `binary` (the bytes after the JSON header) when the
// input says binary_data_size.
Refusal read_input(const json& input, std::string_view* binary, int max_batch, std::vector<ImageInput>* out,
                   std::vector<int64_t>* shape) {
  if (!input.is_object()) return invalid("an input must be an object");
  for (const char* k : {"name", "shape", "datatype"}) {
    if (!input.contains(k)) return invalid(std::string("the input has no '") + k + "'");
  }
  if (!input["name"].is_string() || !input["datatype"].is_string()) {
    return invalid("the input's name and datatype must be strings");
  }
  if (input["datatype"] != "BYTES") {
    return invalid("input '" + input.value("name", "") + "' has datatype " + json_text(input["datatype"]) +
                       "; the ocr model takes BYTES (encoded image files)",
                   "send the image files as a BYTES tensor");
  }
  if (!input["shape"].is_array() || input["shape"].empty()) return invalid("the input's shape must be a list");
  int64_t elements = 1;
  for (const auto& d : input["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) return invalid("the shape holds " + json_text(d));
    const int64_t dim = d.get<int64_t>();
    shape->push_back(dim);
    // Saturated, not overflowed: a shape such as [2^32, 2^32] was signed overflow (undefined behaviour; confirmed by
    // fuzz_request under UBSan). Anything at the cap is refused below as more than --max-batch.
    elements = dim != 0 && elements > kMaxElements / dim ? kMaxElements : elements * dim;
  }
  if (shape->size() > 2 || (shape->size() == 2 && (*shape)[1] != 1)) {
    return invalid("the input's shape is " + json_text(input["shape"]) + "; the ocr model takes [N] or [N, 1]");
  }
  if (elements > max_batch) {
    const std::string n =
        elements == kMaxElements ? "more than " + std::to_string(kMaxElements) : std::to_string(elements);
    return api_error("BATCH_TOO_LARGE",
                     n + " images in one request, more than --max-batch " + std::to_string(max_batch),
                     "split the request");
  }
  if (elements == 0) return api_error("MISSING_IMAGE", "the input holds no image", "send at least one image");
  std::optional<int64_t> binary_size;
  if (input.contains("parameters")) {
    if (!input["parameters"].is_object()) return invalid("the input's parameters must be an object");
    for (const auto& [k, v] : input["parameters"].items()) {
      if (k == "binary_data_size") {
        if (!v.is_number_integer()) return invalid("binary_data_size must be an integer (got " + json_text(v) + ")");
        binary_size = v.get<int64_t>();
      } else if (k != "content_type") {
        return api_error("UNKNOWN_OPTION", "unknown input parameter '" + k + "'",
                         "input parameters: binary_data_size, content_type");
      }
    }
  }
  const std::string name = input["name"].is_string() ? input["name"].get<std::string>() : kInferInput;
  if (binary_size) {
    if (input.contains("data")) return invalid("the input has both 'data' and binary_data_size");
    if (*binary_size < 0 || static_cast<size_t>(*binary_size) > binary->size()) {
      return invalid("binary_data_size " + std::to_string(*binary_size) + " but " + std::to_string(binary->size()) +
                     " bytes follow the JSON header");
    }
    std::string_view data = binary->substr(0, static_cast<size_t>(*binary_size));
    binary->remove_prefix(static_cast<size_t>(*binary_size));
    // BYTES elements: a 4-byte little-endian length, then the bytes.
    while (!data.empty()) {
      if (data.size() < 4) return invalid("binary BYTES data ends inside an element's length");
      uint32_t n = 0;
      for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<uint8_t>(data[b]);
      data.remove_prefix(4);
      if (n > data.size()) return invalid("binary BYTES element of " + std::to_string(n) + " bytes is cut short");
      ImageInput in;
      in.name = name + "[" + std::to_string(out->size()) + "]";
      in.bytes.assign(data.begin(), data.begin() + n);
      data.remove_prefix(n);
      out->push_back(std::move(in));
    }
  } else {
    if (!input.contains("data")) return invalid("the input has no 'data' (nor binary_data_size)");
    std::vector<const std::string*> strings;
    bool ok = true;
    flatten_strings(input["data"], &strings, &ok);
    if (!ok) return invalid("BYTES data must be base64 strings (one per image)");
    for (size_t i = 0; i < strings.size(); ++i) {
      ImageInput in;
      in.name = name + "[" + std::to_string(i) + "]";
      if (auto e = decode_base64(*strings[i], &in.bytes)) {
        e->message = "input '" + name + "' element " + std::to_string(i) + ": " + e->message;
        return e;
      }
      out->push_back(std::move(in));
    }
  }
  if (static_cast<int64_t>(out->size()) != elements) {
    return invalid("the input's shape " + json_text(input["shape"]) + " holds " + std::to_string(elements) +
                   " elements but " + std::to_string(out->size()) + " were sent");
  }
  return std::nullopt;
}

Refusal parse_infer(const RequestBody& body, const std::optional<std::string>& header_length,
                    const ServingModels& models, int max_batch, InferRequest* r) {
  std::string_view all(body.data);
  std::string_view header = all, binary;
  if (header_length) {
    const std::string& v = *header_length;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n > all.size()) {
      return invalid(std::string(kInferHeaderLength) + " is " + v + " for a body of " + std::to_string(all.size()) +
                     " bytes");
    }
    header = all.substr(0, n);
    binary = all.substr(n);
    if (n == 0) {  // raw binary request: the body is the one image; the result comes back binary
      ImageInput in;
      in.name = std::string(kInferInput) + "[0]";
      in.bytes.assign(binary.begin(), binary.end());
      r->images.push_back(std::move(in));
      r->shape = {1};
      r->binary_output = true;
      return std::nullopt;
    }
  } else {
    const std::string type = media_type(body.content_type);
    if (!type.empty() && type != "application/json") {
      return api_error("UNSUPPORTED_MEDIA_TYPE", "Content-Type '" + type + "' without " + kInferHeaderLength,
                       "send the inference request as application/json (or use the binary tensor data extension)");
    }
  }
  json j = json::parse(header, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return api_error("INVALID_JSON", "the inference request is not a JSON object", "see the OIP inference request");
  }
  for (const auto& [k, v] : j.items()) {
    if (k != "id" && k != "inputs" && k != "outputs" && k != "parameters" && k != "model_name" &&
        k != "model_version") {
      return invalid("unknown member '" + k + "' in the inference request");
    }
  }
  if (j.contains("id")) {
    if (!j["id"].is_string()) return invalid("'id' must be a string");
    r->id = j["id"].get<std::string>();
  }
  ImageInput common;
  if (j.contains("parameters")) {
    if (!j["parameters"].is_object()) return invalid("'parameters' must be an object");
    json options = json::object();
    for (const auto& [k, v] : j["parameters"].items()) {
      if (k == "binary_data_output") {
        if (!v.is_boolean()) return invalid("binary_data_output must be true or false");
        r->binary_output = v.get<bool>();
      } else {
        options[k] = v;  // an OCR option, or refused by name
      }
    }
    if (auto e = parse_options(options, models, &common.options)) return e;
  }
  if (!j.contains("inputs") || !j["inputs"].is_array() || j["inputs"].size() != 1) {
    return invalid("the ocr model takes exactly one input (a BYTES tensor of encoded images); got " +
                   std::to_string(j.contains("inputs") && j["inputs"].is_array() ? j["inputs"].size() : 0));
  }
  if (auto e = read_input(j["inputs"][0], &binary, max_batch, &r->images, &r->shape)) return e;
  if (!binary.empty()) return invalid(std::to_string(binary.size()) + " bytes after the last input's binary data");
  for (auto& in : r->images) in.options = common.options;
  if (j.contains("outputs")) {
    if (!j["outputs"].is_array()) return invalid("'outputs' must be a list");
    for (const auto& o : j["outputs"]) {
      if (!o.is_object() || o.value("name", "") != kInferOutput) {
        return invalid("unknown output " + (o.is_object() && o.contains("name") ? json_text(o["name"]) : json_text(o)) +
                       "; the ocr model's output is RESULT");
      }
      if (o.contains("parameters") && o["parameters"].is_object()) {
        for (const auto& [k, v] : o["parameters"].items()) {
          if (k == "binary_data" && v.is_boolean()) {
            r->binary_output = v.get<bool>();
          } else {
            return api_error("UNKNOWN_OPTION", "unknown output parameter '" + k + "'",
                             "output parameters: binary_data");
          }
        }
      }
    }
  }
  return std::nullopt;
}

}  // namespace

Refusal parse_infer_request(const RequestBody& body, const std::optional<std::string>& header_length,
                            const ServingModels& models, int max_batch, InferRequest* r) {
  try {
    return parse_infer(body, header_length, models, max_batch, r);
  } catch (const json::exception& e) {  // a member of an unexpected JSON type
    return invalid(std::string("the inference request has a member of the wrong type: ") + e.what());
  }
}

}  // namespace steadyocr::server

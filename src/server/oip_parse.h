// The Open Inference Protocol (v2) inference request of the "ocr" model: one BYTES input tensor of encoded images
// (base64 strings in JSON, or raw with Triton's binary tensor data extension). Independent of the HTTP library.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "server/request_parse.h"

namespace steadyocr::server {

inline constexpr const char* kInferInput = "IMAGE";
inline constexpr const char* kInferOutput = "RESULT";
inline constexpr const char* kInferHeaderLength = "Inference-Header-Content-Length";

struct InferRequest {
  nlohmann::ordered_json id;  // null when not given
  std::vector<ImageInput> images;
  std::vector<int64_t> shape;
  bool binary_output = false;
};

// Reads an inference request body. `header_length` is the Inference-Header-Content-Length header when the request
// has one (the JSON header's length; 0: the whole body is one raw image). INVALID_INFER_REQUEST, INVALID_JSON,
// UNSUPPORTED_MEDIA_TYPE, BATCH_TOO_LARGE, MISSING_IMAGE, UNKNOWN_OPTION... name what is wrong; never throws.
Refusal parse_infer_request(const RequestBody& body, const std::optional<std::string>& header_length,
                            const ServingModels& models, int max_batch, InferRequest* r);

}  // namespace steadyocr::server

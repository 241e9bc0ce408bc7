// The server's errors: one stable code per cause (docs/SERVING.md lists them), its HTTP status, and a message and fix
// for the caller. /v1 routes answer {"error": {"code", "message", "fix"}}; the OIP routes (/v2) keep the protocol's
// {"error": "..."}. Every error response also carries the code in X-Steadyocr-Error-Code.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/status.h"

namespace steadyocr::server {

struct ApiError {
  int http_status = 500;
  std::string code;  // stable: SERVER_BUSY, BODY_TOO_LARGE, ...
  std::string message;
  std::string fix;
  int retry_after_s = 0;  // > 0: sent as Retry-After
};

// Every code the server answers with, its HTTP status and when it is used (docs/SERVING.md is checked against it).
struct ErrorCodeInfo {
  const char* code;
  int http_status;
  const char* meaning;
};
const std::vector<ErrorCodeInfo>& error_codes();

// The error of `code` (a code of error_codes(); its HTTP status from the table) with the message and fix.
ApiError api_error(const std::string& code, std::string message, std::string fix = "");

// {"error": {"code", "message", "fix"}}
nlohmann::ordered_json v1_error_json(const ApiError& e);
// {"error": "message (fix: ...)"} as the Open Inference Protocol has it.
nlohmann::ordered_json oip_error_json(const ApiError& e);

// The error an image's engine outcome failed with: the image's own fault (4xx: unreadable, limits, an option the
// server cannot serve) or the engine's (5xx, naming the finding and its fix).
ApiError error_from_status(const Status& s);

}  // namespace steadyocr::server

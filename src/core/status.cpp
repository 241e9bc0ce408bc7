#include "core/status.h"

namespace steadyocr {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "OK";
    case StatusCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StatusCode::kNotFound:
      return "NOT_FOUND";
    case StatusCode::kUnsupported:
      return "UNSUPPORTED";
    case StatusCode::kOutOfMemory:
      return "OUT_OF_MEMORY";
    case StatusCode::kDeviceFault:
      return "DEVICE_FAULT";
    case StatusCode::kDeviceError:
      return "DEVICE_ERROR";
    case StatusCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case StatusCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case StatusCode::kUnavailable:
      return "UNAVAILABLE";
    case StatusCode::kDataLoss:
      return "DATA_LOSS";
    case StatusCode::kInternal:
      return "INTERNAL";
  }
  return "UNKNOWN";
}

bool status_code_from_name(const std::string& name, StatusCode* code) {
  for (int c = static_cast<int>(StatusCode::kOk); c <= static_cast<int>(StatusCode::kInternal); ++c) {
    if (name == status_code_name(static_cast<StatusCode>(c))) {
      *code = static_cast<StatusCode>(c);
      return true;
    }
  }
  return false;
}

std::string Status::to_string() const {
  if (is_ok()) return "OK";
  return std::string(status_code_name(code_)) + ": " + message_;
}

Status Status::with_context(const std::string& context) const {
  if (is_ok()) return *this;
  Status s = *this;
  s.message_ = context + ": " + message_;
  return s;
}

Status Status::with_finding(Finding finding) const {
  Status s = *this;
  s.finding_ = std::move(finding);
  return s;
}

}  // namespace steadyocr

// Status / Result<T>: the error currency of every layer. Exceptions never cross a layer boundary.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace steadyocr {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,    // the caller's input is wrong (bad file, bad shape, bad flag)
  kNotFound,           // a file, library or model element is missing
  kUnsupported,        // valid input we do not handle (unknown op, attribute, format)
  kOutOfMemory,        // allocation failed; retrying smaller may work (not sticky)
  kDeviceFault,        // the device context is lost (sticky): only a new process/context recovers
  kDeviceError,        // a device call failed without losing the context
  kResourceExhausted,  // a configured limit was hit (pixels, queue, budget)
  kDeadlineExceeded,   // a watchdog or deadline fired
  kUnavailable,        // a backend/device cannot be used right now
  kDataLoss,           // corrupt or truncated data
  kInternal,           // a bug: an invariant did not hold
};

const char* status_code_name(StatusCode code);
// The code named by status_code_name(); false for an unknown name.
bool status_code_from_name(const std::string& name, StatusCode* code);

// Where a device or backend is at fault: a stable code shared with the doctor (L1_NO_DRIVER, L3_STICKY_FAULT,
// SELF_TEST_MISMATCH, ...; docs/DOCTOR.md), the values seen, and what the user can do. Ladder events, results,
// log lines and counters are built from findings, never from the text of a message.
struct Finding {
  std::string code;
  std::string detail;
  std::string fix;
  bool operator==(const Finding&) const = default;
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  Status(StatusCode code, std::string message, Finding finding)
      : code_(code), message_(std::move(message)), finding_(std::move(finding)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // The device/backend finding behind this error, when there is one.
  const std::optional<Finding>& finding() const { return finding_; }
  // "CODE: message" for logs and user-facing errors.
  std::string to_string() const;
  // Returns a copy whose message is prefixed with `context: ` (the finding is kept).
  Status with_context(const std::string& context) const;
  // Returns a copy carrying `finding` (replacing any it had).
  Status with_finding(Finding finding) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::optional<Finding> finding_;
};

inline Status invalid_argument(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status not_found(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status unsupported(std::string m) {
  return {StatusCode::kUnsupported, std::move(m)};
}
inline Status internal_error(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status data_loss(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}
inline Status resource_exhausted(std::string m) {
  return {StatusCode::kResourceExhausted, std::move(m)};
}
inline Status unavailable(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    if (std::get<Status>(v_).is_ok()) v_ = Status(StatusCode::kInternal, "Result built from an OK status");
  }

  bool is_ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

namespace detail {
inline Status to_status(const Status& s) {
  return s;
}
template <typename T>
Status to_status(const Result<T>& r) {
  return r.status();
}
}  // namespace detail

}  // namespace steadyocr

#define SO_CONCAT_INNER(a, b) a##b
#define SO_CONCAT(a, b) SO_CONCAT_INNER(a, b)

#define RETURN_IF_ERROR(expr)                                                \
  do {                                                                       \
    ::steadyocr::Status so_status_ = ::steadyocr::detail::to_status((expr)); \
    if (!so_status_.is_ok()) return so_status_;                              \
  } while (0)

#define SO_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.is_ok()) return tmp.status();         \
  lhs = std::move(tmp).value()

#define ASSIGN_OR_RETURN(lhs, expr) SO_ASSIGN_OR_RETURN_IMPL(SO_CONCAT(so_result_, __LINE__), lhs, expr)

// libsteadyocr.so: the C API of include/steadyocr.h over bindings::Session. No C++ exception crosses it: every entry
// point catches and reports what it caught as an error.
#include "steadyocr.h"

#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bindings/common/session.h"
#include "engine/result_format.h"
#include "pipeline/image_decode.h"

using steadyocr::bindings::Error;
using steadyocr::bindings::ErrorKind;

struct steadyocr_error {
  steadyocr_status status;
  std::string code, message, fix, input;
};

struct steadyocr_options {
  nlohmann::json values = nlohmann::json::object();
};

struct steadyocr_engine {
  std::unique_ptr<steadyocr::bindings::Session> session;
};

struct steadyocr_result {
  steadyocr::engine::ImageOutcome outcome;
  std::string text, json;
};

namespace {

steadyocr_status status_of(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kError:
      return STEADYOCR_ERROR;
    case ErrorKind::kUnknownOption:
    case ErrorKind::kInvalidOption:
      return STEADYOCR_INVALID_OPTION;
    case ErrorKind::kBackendUnavailable:
      return STEADYOCR_BACKEND_UNAVAILABLE;
    case ErrorKind::kModel:
      return STEADYOCR_MODEL_ERROR;
    case ErrorKind::kImage:
      return STEADYOCR_IMAGE_ERROR;
  }
  return STEADYOCR_ERROR;
}

void report(steadyocr_error** out, const Error& e) {
  if (!out) return;
  *out = new (std::nothrow) steadyocr_error{status_of(e.kind), e.code, e.message, e.fix, e.input};
}

void report(steadyocr_error** out, steadyocr_status status, const std::string& code, const std::string& message) {
  if (!out) return;
  *out = new (std::nothrow) steadyocr_error{status, code, message, "", ""};
}

// Runs `f`, turning an escaping C++ exception into an error (and `fallback` as the return value).
template <typename T, typename F>
T guarded(steadyocr_error** error, T fallback, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    report(error, STEADYOCR_ERROR, "OUT_OF_MEMORY", "out of memory");
  } catch (const std::exception& e) {
    report(error, STEADYOCR_ERROR, "INTERNAL", std::string("internal error: ") + e.what());
  }
  return fallback;
}

steadyocr_engine* create(const nlohmann::json& options, steadyocr_error** error) {
  return guarded<steadyocr_engine*>(error, nullptr, [&]() -> steadyocr_engine* {
    Error e;
    auto session = steadyocr::bindings::Session::create(options, &e);
    if (!session) {
      report(error, e);
      return nullptr;
    }
    return new steadyocr_engine{std::move(session)};
  });
}

steadyocr_result* read(steadyocr_engine* engine, std::vector<uint8_t> bytes, const std::string& input,
                       steadyocr_error** error) {
  std::vector<steadyocr::engine::ImageJob> jobs(1);
  jobs[0].name = input;
  jobs[0].bytes = std::move(bytes);
  std::vector<steadyocr::bindings::Read> reads = engine->session->read(jobs, {input});
  if (reads[0].error) {
    report(error, *reads[0].error);
    return nullptr;
  }
  auto r = std::make_unique<steadyocr_result>();
  r->outcome = std::move(reads[0].outcome);
  for (const auto& l : r->outcome.result.lines) {
    if (!r->text.empty()) r->text += '\n';
    r->text += l.text;
  }
  r->json = steadyocr::engine::outcome_to_json(r->outcome)
                .dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  return r.release();
}

const std::string kEmpty;

}  // namespace

extern "C" {

int steadyocr_api_version(void) {
  return STEADYOCR_API_VERSION;
}
const char* steadyocr_version(void) {
  return STEADYOCR_VERSION;
}

steadyocr_status steadyocr_error_status(const steadyocr_error* e) {
  return e ? e->status : STEADYOCR_OK;
}
const char* steadyocr_error_code(const steadyocr_error* e) {
  return e ? e->code.c_str() : "";
}
const char* steadyocr_error_message(const steadyocr_error* e) {
  return e ? e->message.c_str() : "";
}
const char* steadyocr_error_fix(const steadyocr_error* e) {
  return e ? e->fix.c_str() : "";
}
const char* steadyocr_error_input(const steadyocr_error* e) {
  return e ? e->input.c_str() : "";
}
void steadyocr_error_free(steadyocr_error* e) {
  delete e;
}

steadyocr_options* steadyocr_options_new(void) {
  return new (std::nothrow) steadyocr_options;
}
void steadyocr_options_free(steadyocr_options* o) {
  delete o;
}
void steadyocr_options_set_string(steadyocr_options* o, const char* key, const char* value) {
  if (o && key) o->values[key] = value ? value : "";
}
void steadyocr_options_set_int(steadyocr_options* o, const char* key, int64_t value) {
  if (o && key) o->values[key] = value;
}
void steadyocr_options_set_double(steadyocr_options* o, const char* key, double value) {
  if (o && key) o->values[key] = value;
}
void steadyocr_options_set_bool(steadyocr_options* o, const char* key, int value) {
  if (o && key) o->values[key] = value != 0;
}

steadyocr_engine* steadyocr_create(const steadyocr_options* options, steadyocr_error** error) {
  return create(options ? options->values : nlohmann::json::object(), error);
}

steadyocr_engine* steadyocr_create_json(const char* options_json, steadyocr_error** error) {
  nlohmann::json options = nlohmann::json::parse(options_json ? options_json : "{}", nullptr, false);
  if (!options.is_object()) {
    report(error, STEADYOCR_INVALID_OPTION, "INVALID_ARGUMENT", "the options are not a JSON object");
    return nullptr;
  }
  return create(options, error);
}

void steadyocr_destroy(steadyocr_engine* engine) {
  delete engine;
}

char* steadyocr_info_json(const steadyocr_engine* engine) {
  if (!engine) return nullptr;
  return guarded<char*>(nullptr, nullptr, [&]() -> char* {
    const std::string s = engine->session->info().dump();
    char* out = new char[s.size() + 1];
    std::copy(s.begin(), s.end(), out);
    out[s.size()] = 0;
    return out;
  });
}

void steadyocr_string_free(char* s) {
  delete[] s;
}

steadyocr_result* steadyocr_read(steadyocr_engine* engine, const uint8_t* data, size_t size, steadyocr_error** error) {
  if (!engine || (!data && size > 0)) {
    report(error, STEADYOCR_INVALID_OPTION, "INVALID_ARGUMENT", "steadyocr_read: no engine or no data");
    return nullptr;
  }
  return guarded<steadyocr_result*>(
      error, nullptr, [&] { return read(engine, std::vector<uint8_t>(data, data + size), "bytes", error); });
}

steadyocr_result* steadyocr_read_file(steadyocr_engine* engine, const char* path, steadyocr_error** error) {
  if (!engine || !path) {
    report(error, STEADYOCR_INVALID_OPTION, "INVALID_ARGUMENT", "steadyocr_read_file: no engine or no path");
    return nullptr;
  }
  return guarded<steadyocr_result*>(error, nullptr, [&]() -> steadyocr_result* {
    auto bytes = steadyocr::pipeline::read_file_bytes(path, engine->session->options().limits.max_file_bytes);
    if (!bytes.is_ok()) {
      report(error, steadyocr::bindings::error_from_status(bytes.status(), ErrorKind::kImage, path));
      return nullptr;
    }
    return read(engine, std::move(*bytes), path, error);
  });
}

void steadyocr_result_free(steadyocr_result* r) {
  delete r;
}

size_t steadyocr_result_line_count(const steadyocr_result* r) {
  return r ? r->outcome.result.lines.size() : 0;
}

const char* steadyocr_result_line_text(const steadyocr_result* r, size_t i) {
  return r && i < r->outcome.result.lines.size() ? r->outcome.result.lines[i].text.c_str() : "";
}

float steadyocr_result_line_score(const steadyocr_result* r, size_t i) {
  return r && i < r->outcome.result.lines.size() ? r->outcome.result.lines[i].score : 0.0f;
}

void steadyocr_result_line_box(const steadyocr_result* r, size_t i, float box[8]) {
  for (int k = 0; k < 8; ++k) box[k] = 0;
  if (!r || i >= r->outcome.result.lines.size()) return;
  const auto& q = r->outcome.result.lines[i].box;
  for (int k = 0; k < 4; ++k) {
    box[2 * k] = q[k].x;
    box[2 * k + 1] = q[k].y;
  }
}

const char* steadyocr_result_text(const steadyocr_result* r) {
  return r ? r->text.c_str() : "";
}
const char* steadyocr_result_backend(const steadyocr_result* r) {
  return r ? r->outcome.result.backend.c_str() : kEmpty.c_str();
}
const char* steadyocr_result_rung(const steadyocr_result* r) {
  return r ? r->outcome.rung.c_str() : kEmpty.c_str();
}
const char* steadyocr_result_json(const steadyocr_result* r) {
  return r ? r->json.c_str() : kEmpty.c_str();
}

}  // extern "C"

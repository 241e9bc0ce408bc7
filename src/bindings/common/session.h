// What the Python module and the C library share: engine options by the CLI's flag names (checked by the CLI's own
// flag definitions and cli::engine_options_from), the engine, and every error sorted into the kinds a caller can
// act on, with the finding's code and fix.
#pragma once

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/engine.h"
#include "engine/result_format.h"

namespace steadyocr::bindings {

// What a caller can do about an error. The Python module raises one exception class per kind; the C library returns
// one code per kind.
enum class ErrorKind {
  kError,               // anything else (a device lost while reading with no rung left, a bug)
  kUnknownOption,       // an option the engine does not have (Python: TypeError)
  kInvalidOption,       // an option's value is out of range or of the wrong type (Python: ValueError)
  kBackendUnavailable,  // no backend can serve (require_gpu without a usable GPU, a pinned backend that fails)
  kModel,               // model files missing or unreadable
  kImage,               // one input cannot be read (missing file, damaged data, over the limits)
};
const char* error_kind_name(ErrorKind kind);  // "Error", "UnknownOption", ..., "ImageError"

struct Error {
  ErrorKind kind = ErrorKind::kError;
  std::string code;     // the finding's code (L1_NO_DRIVER, ...), else the status code's name (kDataLoss, ...)
  std::string message;  // what happened, naming the input or the option
  std::string fix;      // what the caller can do ("" when nothing specific is known)
  std::string input;    // ImageError: the path, or "#N" for the N-th input of a batch, or "bytes"
};

// The engine options from `options`, a JSON object keyed by the CLI's engine flags with '_' for '-' (models,
// backend, require_gpu, cls, det_only, drop_score, det_limit_side, ...; `steadyocr ocr --help` lists them), each value
// as on the command line (true turns a flag on, false leaves it off, a list is joined with ','). Also "worker_exe":
// the `steadyocr` binary that serves worker rungs (default: steadyocr_executable()). threads = 0 means the CLI's
// default (all cores).
Result<engine::EngineOptions> engine_options(const nlohmann::json& options, Error* error);

// The `steadyocr` binary that GPU worker rungs and the doctor's layer 3-4 checks run (the bindings live in another
// process image): $STEADYOCR_EXE, else an installed one beside this library (bin/steadyocr in the Python package,
// ../bin/steadyocr for lib/libsteadyocr.so), else the one this library was built with.
std::string steadyocr_executable();
// Points $STEADYOCR_CUDA_PLUGIN at the CUDA plugin beside steadyocr_executable() (or in its ../lib/steadyocr) when it
// is unset and the file exists:
// the GPU pre-flight and the doctor look for the plugin beside this process's executable, which is Python's or the C
// program's here. Called before an engine is built and before the doctor runs.
void point_at_cuda_plugin();

// Sorts a status into an error; `input` names the image for errors reading one.
Error error_from_status(const Status& status, ErrorKind kind, const std::string& input = "");

// One image's outcome as the CLI keeps it (so that outcome_to_json gives the CLI's JSON), and its error when it
// could not be read.
struct Read {
  engine::ImageOutcome outcome;
  std::optional<Error> error;
};

class Session {
 public:
  // Builds the engine (qualifying rungs as OcrEngine::create does). Sets the thread count of the process's pool and
  // of OpenCV, as the CLI does. Null with `*error` set when it cannot.
  static std::unique_ptr<Session> create(const nlohmann::json& options, Error* error);

  // Reads encoded images (outcomes follow the input order). `inputs` name each for errors and for the outcome's name
  // (a path's base name is what the CLI's JSON is keyed by). Thread-safe.
  std::vector<Read> read(const std::vector<engine::ImageJob>& jobs, const std::vector<std::string>& inputs);

  // {"version", "rung", "backend", "events": [...], "workers": {...}}.
  nlohmann::ordered_json info() const;
  const engine::EngineOptions& options() const { return options_; }
  engine::OcrEngine& engine() { return *engine_; }

 private:
  Session(engine::EngineOptions options, std::unique_ptr<engine::OcrEngine> engine)
      : options_(std::move(options)), engine_(std::move(engine)) {}
  engine::EngineOptions options_;
  std::unique_ptr<engine::OcrEngine> engine_;
};

// Encodes an 8-bit picture (1, 3 or 4 channels, BGR order) losslessly for the engine, which reads encoded images: BMP
// for 1 and 3 channels (a header and the rows: about a copy of the pixels), PNG for 4 (BMP readers drop alpha).
Result<std::vector<uint8_t>> encode_pixels(const cv::Mat& picture);

// The visualisation (pipeline::Visualizer: boxes tinted on the left, text on the right; 2*width x height, 8-bit BGR) of
// `lines` over the picture `bytes` decode to: the same picture the engine read (EXIF orientation, alpha flattened).
Result<cv::Mat> draw(const std::vector<uint8_t>& bytes, const std::vector<pipeline::TextLine>& lines,
                     const pipeline::DecodeLimits& limits);

}  // namespace steadyocr::bindings

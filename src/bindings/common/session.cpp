#include "bindings/common/session.h"

#include <dlfcn.h>
#include <CLI/CLI.hpp>
#include <opencv2/imgcodecs.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "cli/engine_options.h"
#include "pipeline/image_decode.h"
#include "pipeline/visualize.h"
#include "runtime/cuda_plugin.h"

#ifndef STEADYOCR_EXE_PATH
#define STEADYOCR_EXE_PATH ""
#endif

namespace steadyocr::bindings {

namespace fs = std::filesystem;

const char* error_kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kError:
      return "Error";
    case ErrorKind::kUnknownOption:
      return "UnknownOption";
    case ErrorKind::kInvalidOption:
      return "InvalidOption";
    case ErrorKind::kBackendUnavailable:
      return "BackendUnavailable";
    case ErrorKind::kModel:
      return "ModelError";
    case ErrorKind::kImage:
      return "ImageError";
  }
  return "Error";
}

namespace {

constexpr const char* kModelFix =
    "pass models=DIR (a directory with the PP-OCR files) or det_model=, rec_model=, dict=, cls_model= PATH; "
    "scripts/setup.sh fetches the models into models/";

Error option_error(ErrorKind kind, std::string message, std::string fix) {
  return {kind, status_code_name(StatusCode::kInvalidArgument), std::move(message), std::move(fix), ""};
}

// One option's value as its command-line text; false when the value's type cannot be one.
bool value_text(const nlohmann::json& v, std::string* out) {
  if (v.is_string()) {
    *out = v.get<std::string>();
    return true;
  }
  if (v.is_number()) {
    *out = v.dump();
    return true;
  }
  if (v.is_array()) {  // a list option (ladder): comma-separated, as on the command line
    out->clear();
    for (const auto& e : v) {
      std::string part;
      if (!e.is_string() && !e.is_number()) return false;
      if (!value_text(e, &part)) return false;
      if (!out->empty()) *out += ',';
      *out += part;
    }
    return true;
  }
  return false;
}

}  // namespace

std::string steadyocr_executable() {
  if (const char* e = std::getenv("STEADYOCR_EXE"); e && *e) return e;
  // Installed (cmake/Install.cmake): the Python package holds bin/steadyocr beside _native, and the C library
  // lib/libsteadyocr.so has it in ../bin. The build tree's path compiled in comes last.
  Dl_info info{};
  if (::dladdr(reinterpret_cast<const void*>(&steadyocr_executable), &info) && info.dli_fname) {
    std::error_code ec;
    const fs::path here = fs::weakly_canonical(fs::path(info.dli_fname), ec).parent_path();
    for (const fs::path& cand : {here / "bin" / "steadyocr", here.parent_path() / "bin" / "steadyocr"}) {
      if (fs::is_regular_file(cand, ec)) return cand.string();
    }
  }
  return STEADYOCR_EXE_PATH;
}

void point_at_cuda_plugin() {
  const std::string exe = steadyocr_executable();
  if (exe.empty() || std::getenv("STEADYOCR_CUDA_PLUGIN")) return;
  // Beside the binary (the build tree) or in ../lib/steadyocr (the installed layout, cmake/Install.cmake): the folder,
  // so the runtime still picks the newest plugin there that the driver runs (runtime/cuda_plugin.h).
  const fs::path bin = fs::path(exe).parent_path();
  for (const fs::path& dir : {bin, bin.parent_path() / "lib/steadyocr"}) {
    for (const auto& flavour : runtime::cuda_plugin_flavours()) {
      std::error_code ec;
      if (fs::is_regular_file(dir / flavour.file, ec)) {
        ::setenv("STEADYOCR_CUDA_PLUGIN", dir.c_str(), 0);
        return;
      }
    }
  }
}

Error error_from_status(const Status& status, ErrorKind kind, const std::string& input) {
  Error e;
  e.kind = kind;
  e.code = status.finding() ? status.finding()->code : status_code_name(status.code());
  e.message = status.message();
  e.fix = status.finding() ? status.finding()->fix : "";
  e.input = input;
  return e;
}

Result<engine::EngineOptions> engine_options(const nlohmann::json& options, Error* error) {
  if (!options.is_object()) {
    *error = option_error(ErrorKind::kInvalidOption, "the options must be a JSON object", "");
    return invalid_argument(error->message);
  }
  // The CLI's own flag definitions check names, types and ranges.
  CLI::App app;
  cli::EngineArgs args;
  cli::add_engine_flags(&app, &args);
  // The CLI checks the rung names when it builds the options; here they are checked with the other values, so that
  // what engine_options_from refuses afterwards is the model files alone.
  std::vector<std::string> backends = {"auto"};
  backends.insert(backends.end(), engine::known_rungs().begin(), engine::known_rungs().end());
  app.get_option("--backend")->check(CLI::IsMember(backends));
  app.get_option("--ladder")->check(CLI::IsMember(engine::known_rungs()));

  std::string worker_exe = steadyocr_executable();
  std::vector<std::string> argv;
  for (const auto& [key, value] : options.items()) {
    if (key == "worker_exe") {
      if (!value.is_string()) {
        *error = option_error(ErrorKind::kInvalidOption, "worker_exe must be a path (a string)", "");
        return invalid_argument(error->message);
      }
      worker_exe = value.get<std::string>();
      continue;
    }
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    const CLI::Option* opt = key.find('-') == std::string::npos ? app.get_option_no_throw(flag) : nullptr;
    if (!opt) {
      *error = option_error(ErrorKind::kUnknownOption, "unknown option '" + key + "'",
                            "the options are the engine flags of `steadyocr ocr --help` with '_' for '-'");
      return invalid_argument(error->message);
    }
    if (opt->get_expected_max() == 0) {  // a flag: on or off
      if (!value.is_boolean()) {
        *error = option_error(ErrorKind::kInvalidOption, "option '" + key + "' takes true or false", "");
        return invalid_argument(error->message);
      }
      if (value.get<bool>()) argv.push_back(flag);
      continue;
    }
    if (key == "threads" && value.is_number_integer() && value.get<int64_t>() == 0) continue;  // 0: all cores
    std::string text;
    if (!value_text(value, &text)) {
      *error = option_error(
          ErrorKind::kInvalidOption,
          "option '" + key + "' takes a " + (opt->get_expected_max() > 1 ? "list" : "value") + ", not " + value.dump(),
          "");
      return invalid_argument(error->message);
    }
    argv.push_back(flag + "=" + text);
  }
  std::reverse(argv.begin(), argv.end());  // CLI11 reads a vector from its back
  try {
    app.parse(argv);
  } catch (const CLI::ParseError& e) {
    *error = option_error(ErrorKind::kInvalidOption, std::string("invalid option: ") + e.what(), "");
    return invalid_argument(error->message);
  }
  if (const char* f = std::getenv("STEADYOCR_FAULT"); f && *f) {
    if (auto rules = engine::parse_fault_spec(f); !rules.is_ok()) {
      *error = error_from_status(rules.status().with_context("$STEADYOCR_FAULT"), ErrorKind::kError);
      error->fix = "unset STEADYOCR_FAULT or give a valid fault plan (docs/FAULTS.md)";
      return rules.status();
    }
  }
  auto eo = cli::engine_options_from(args);
  if (!eo.is_ok()) {  // names and values are checked above: a model file the mode needs is missing
    *error = error_from_status(eo.status(), ErrorKind::kModel);
    error->fix = kModelFix;
    return eo.status();
  }
  eo->worker_exe = worker_exe;
  return eo;
}

std::unique_ptr<Session> Session::create(const nlohmann::json& options, Error* error) {
  auto eo = engine_options(options, error);
  if (!eo.is_ok()) return nullptr;
  point_at_cuda_plugin();
  cli::use_threads(eo->threads);
  auto engine = engine::OcrEngine::create(*eo);
  if (!engine.is_ok()) {
    const Status& s = engine.status();
    if (s.code() == StatusCode::kUnavailable) {
      // No rung can serve. Model files that do not load rule out every rung alike (finding LOAD_FAILED).
      const bool models = s.finding() && s.finding()->code == "LOAD_FAILED";
      *error = error_from_status(s, models ? ErrorKind::kModel : ErrorKind::kBackendUnavailable);
      if (models) error->fix = "fetch the models again (scripts/setup.sh) or " + std::string(kModelFix);
    } else if (s.code() == StatusCode::kInvalidArgument) {  // require_gpu with a CPU backend pinned
      *error = error_from_status(s, ErrorKind::kInvalidOption);
    } else {
      *error = error_from_status(s, ErrorKind::kError);
    }
    return nullptr;
  }
  return std::unique_ptr<Session>(new Session(std::move(*eo), std::move(*engine)));
}

std::vector<Read> Session::read(const std::vector<engine::ImageJob>& jobs, const std::vector<std::string>& inputs) {
  std::vector<engine::EngineOutcome> results = engine_->ocr_batch(jobs);
  std::vector<Read> reads(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    engine::ImageOutcome& o = reads[i].outcome;
    o.name = jobs[i].name;
    o.path = i < inputs.size() ? inputs[i] : jobs[i].name;
    o.fallbacks = results[i].events;
    o.rung = results[i].rung;
    o.gpu = results[i].gpu;
    const Status& s = results[i].status;
    if (s.is_ok()) {
      o.result = std::move(results[i].result);
      continue;
    }
    // As the CLI keeps a failed image.
    o.ok = false;
    o.result.backend = engine::backend_of_rung(results[i].rung);
    o.error = o.path + ": " + s.message();
    // The input's fault (damaged, unsupported, over a limit), or the engine's (a device lost with no rung left).
    const bool image = s.code() == StatusCode::kDataLoss || s.code() == StatusCode::kUnsupported ||
                       s.code() == StatusCode::kResourceExhausted || s.code() == StatusCode::kInvalidArgument ||
                       s.code() == StatusCode::kNotFound;
    reads[i].error = error_from_status(s, image ? ErrorKind::kImage : ErrorKind::kError, o.path);
    reads[i].error->message = o.error;
  }
  return reads;
}

nlohmann::ordered_json Session::info() const {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  for (const auto& e : engine_->events()) events.push_back(engine::event_to_json(e));
  nlohmann::ordered_json workers = nlohmann::ordered_json::object();
  for (const auto& [rung, st] : engine_->worker_stats()) {
    workers[rung] = {
        {"starts", st.worker_starts}, {"losses", st.worker_losses}, {"hangs", st.hangs}, {"retries", st.retries}};
  }
  const std::string rung = engine_->current_rung();
  nlohmann::ordered_json info = {{"version", STEADYOCR_VERSION},
                                 {"rung", rung},
                                 {"backend", rung.empty() ? "" : engine::backend_of_rung(rung)},
                                 {"events", events},
                                 {"workers", workers}};
  if (engine_->gpu_count() > 1) {
    nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
    for (const auto& g : engine_->gpus()) {
      gpus.push_back(engine::gpu_state_to_json(g));
    }
    info["gpus"] = gpus;
  }
  return info;
}

Result<std::vector<uint8_t>> encode_pixels(const cv::Mat& picture) {
  if (picture.depth() != CV_8U || (picture.channels() != 1 && picture.channels() != 3 && picture.channels() != 4)) {
    return invalid_argument("pictures must be 8-bit with 1, 3 or 4 channels");
  }
  if (picture.empty()) return invalid_argument("the picture is empty");
  std::vector<uint8_t> bytes;
  try {
    if (!cv::imencode(picture.channels() == 4 ? ".png" : ".bmp", picture, bytes)) {
      return internal_error("OpenCV could not encode the picture");
    }
  } catch (const cv::Exception& e) {
    return internal_error(std::string("OpenCV could not encode the picture: ") + e.err);
  }
  return bytes;
}

Result<cv::Mat> draw(const std::vector<uint8_t>& bytes, const std::vector<pipeline::TextLine>& lines,
                     const pipeline::DecodeLimits& limits) {
  static const pipeline::Visualizer visualizer;  // loads its font once
  ASSIGN_OR_RETURN(pipeline::DecodedImage img, pipeline::decode_image(bytes.data(), bytes.size(), limits));
  return visualizer.draw(img.bgr, lines);
}

}  // namespace steadyocr::bindings

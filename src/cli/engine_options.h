// What `ocr` and `bench` share: the engine and pipeline flags, their checks, and how inputs become image files.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/options.h"

namespace steadyocr::cli {

// Flags that decide how the engine is built and how it reads an image.
struct EngineArgs {
  std::string models = "models";
  std::string det_model, rec_model, cls_model, dict;
  std::string backend = "auto";
  bool require_gpu = false;
  int64_t gpu_mem_mb = -1;  // engine::kGpuMemAuto
  std::string gpus = "all";
  int watchdog_s = 0;               // 0: the rung's default (engine::worker_watchdog_ms)
  int reprobe_ms = 5000;            // engine::EngineOptions::reprobe_backoff_ms
  std::vector<std::string> ladder;  // hidden: explicit rungs, e.g. cpu-worker,cpu to drive fault paths without a GPU
  bool cls = false, det_only = false, rec_only = false;
  int threads = 0;
  int image_groups = 0;
  float drop_score = 0.5f;
  int det_limit_side = 960;
  int plan_cache = 0;
  bool host_ctc = false;
  bool rec_serial_calls = false;
  bool host_normalize = false;
  bool per_shape_plans = false;
  float det_thresh = 0.3f;
  double det_box_thresh = 0.6, unclip_ratio = 1.5;
  int rec_batch = 6, rec_min_width = 320;
  int rec_width_bucket = 0, det_bucket = 0;
  int rec_pad_rows = -1;
  bool no_cross_batch = false;
  int batch_slots = 0;
  std::string rec_interp = "lanczos";
  int64_t max_side = 20000, max_pixels = 100'000'000;
  int max_jpeg_scans = 100;
  int64_t decode_deadline_ms = 5000;
};

// Registers the engine and pipeline flags on `app`, writing into `args` (which must outlive the parse).
void add_engine_flags(CLI::App* app, EngineArgs* args);

// Checks the backend/ladder names and that the model files the mode needs exist; kInvalidArgument names the
// flag and the fix. Does not touch global state.
Result<engine::EngineOptions> engine_options_from(const EngineArgs& args);

// Sets the thread count of the pool and OpenCV (0: all cores), before the engine is created.
// Sizes the thread pool (--threads; OpenCV's too) and, unless STEADYOCR_SHARE_CORES=off, lets parallel regions
// shrink to the cores other processes leave free (core/cpu_share.h).
void use_threads(int threads);
bool share_cores_from_environment();

// True for engine creation errors that are the user's flags or files rather than the machine.
bool is_usage_error(const Status& s);

struct InputFile {
  std::string path;
  std::string missing;  // why it cannot be read at all (then it is a per-file failure)
};

bool has_image_extension(const std::string& path);

// Files as given, directories expanded to their image files (sorted; recursive with `recursive`). A directory
// without images sets `usage_error` and returns nothing.
std::vector<InputFile> expand_inputs(const std::vector<std::string>& inputs, bool recursive, std::string* usage_error);

}  // namespace steadyocr::cli

#include "cli/engine_options.h"

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "cli/cuda_plugin_flag.h"
#include "core/cpu_share.h"
#include "core/disk_cache.h"
#include "core/log.h"
#include "core/parallel.h"
#include "engine/reference_cache.h"

namespace steadyocr::cli {

namespace fs = std::filesystem;
using namespace steadyocr::pipeline;
using engine::EngineOptions;

void add_engine_flags(CLI::App* app, EngineArgs* args) {
  app->add_option("--models", args->models, "Directory with the PP-OCR models and dictionary")->capture_default_str();
  app->add_option("--det-model", args->det_model, "Detection model (ONNX); overrides --models");
  app->add_option("--rec-model", args->rec_model, "Recognition model (ONNX); overrides --models");
  app->add_option("--cls-model", args->cls_model, "Angle classifier model (ONNX); overrides --models");
  app->add_option("--dict", args->dict, "Recogniser dictionary, one character per line; overrides --models");
  app->add_option("--backend", args->backend,
                  "auto (the ladder cuda-fp32 > cuda-fp16 > cuda-fp32-nocudnn > vulkan > cpu > reference, every step "
                  "down reported), or pin one of cuda-fp32, cuda-fp16, cuda-fp32-nocudnn, cuda-fp16-nocudnn, vulkan "
                  "(compute shaders through the Vulkan driver, no CUDA), vulkan-fp16 (fp16 storage), cpu, reference")
      ->capture_default_str();
  add_cuda_plugin_flag(app);
  app->add_flag("--require-gpu", args->require_gpu,
                "Fail (with the doctor's finding) instead of falling back when no GPU backend can serve");
  app->add_option("--ladder", args->ladder,
                  "Explicit ladder rungs (testing: cpu-worker runs the CPU backend in a worker)")
      ->delimiter(',')
      ->group("");
  app->add_option("--watchdog", args->watchdog_s,
                  "Seconds one image may take on a GPU worker before the worker counts as hung and is replaced "
                  "(default 120; 600 on a Vulkan device that is a CPU implementation, such as lavapipe)")
      ->check(CLI::Range(1, 86400));
  app->add_option("--reprobe-ms", args->reprobe_ms,
                  "Milliseconds after a GPU rung degrades before it is re-probed (doubling while it keeps failing, up "
                  "to 5 minutes or this value if longer); it serves again once it passes")
      ->check(CLI::Range(100, 3600000))
      ->capture_default_str();
  app->add_option("--gpus", args->gpus,
                  "GPUs to serve on: all (default: every visible one; two or more get a ladder and workers each, "
                  "images going to the least loaded), or a comma list of visible device indices or GPU-/MIG- UUIDs "
                  "(one worker per MIG instance), e.g. 0,1; CUDA_VISIBLE_DEVICES narrows what is visible")
      ->capture_default_str();
  app->add_option("--gpu-mem", args->gpu_mem_mb,
                  "Device memory budget of the CUDA backend's pool in MiB; runs wait for memory rather than exceed it "
                  "(default: 576, scaled up with --det-limit-side above 960 and recognition merges above 48 rows; "
                  "0: none)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 24));
  app->add_flag("--cls", args->cls, "Turn upside-down text lines with the angle classifier");
  auto* det_only = app->add_flag("--det-only", args->det_only, "Detect text boxes only (text left empty)");
  auto* rec_only = app->add_flag("--rec-only", args->rec_only, "Each image is one text line: recognise it whole");
  det_only->excludes(rec_only);
  app->add_option("--threads", args->threads,
                  "Threads for models and image work (default: all cores; fewer while other processes keep cores "
                  "busy, unless STEADYOCR_SHARE_CORES=off)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--image-groups", args->image_groups,
                  "cpu backend: pictures read side by side in this many groups, each on its share of the threads "
                  "(default: one per thread from 8 threads up, at most 16, else 1; same results)")
      ->check(CLI::Range(1, 1024));
  app->add_option("--drop-score", args->drop_score, "Drop lines read with a lower score")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--plan-cache", args->plan_cache,
                  "Input shapes kept planned per model (0: 512 on GPU backends, 24 on the CPU)")
      ->check(CLI::Range(0, 100000))
      ->capture_default_str();
  app->add_flag("--host-ctc", args->host_ctc,
                "GPU backends: bring every class's probability back and pick the best on the host, instead of only "
                "each step's best (same results; for comparison)");
  app->add_flag("--rec-serial-calls", args->rec_serial_calls,
                "GPU backends: an image's recognition calls one after another, instead of all at once on the "
                "device's streams (same results; for comparison)");
  app->add_flag("--host-normalize", args->host_normalize,
                "GPU backends: normalise the detector's and the recogniser's inputs on the host and send floats, "
                "instead of the pictures' bytes normalised on the device (same results; for comparison)");
  app->add_flag(
      "--per-shape-plans", args->per_shape_plans,
      "Plan every new input shape (oneDNN primitives per shape on the cpu backend, a plan and arena per shape "
      "on vulkan, the graph passes and a plan per shape on cuda) instead of one plan for every shape where the "
      "backend makes one (cpu, vulkan, cuda; same results; for comparison)");
  app->add_option("--det-limit-side", args->det_limit_side, "Longer side of the detection input")
      ->check(CLI::Range(32, 8192))
      ->capture_default_str();
  app->add_option("--det-thresh", args->det_thresh, "Text probability threshold of the DB map")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--det-box-thresh", args->det_box_thresh, "Minimum mean probability inside a box")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  app->add_option("--unclip-ratio", args->unclip_ratio, "How far detected boxes grow")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  app->add_option("--rec-batch", args->rec_batch, "Text lines per recognition run")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app->add_option("--rec-min-width", args->rec_min_width,
                  "Minimum width of a recognition batch (at least 16: PP-OCR recognisers pool narrower inputs away; "
                  "--rec-batch 1 --rec-min-width 16 --rec-width-bucket 0 reads each line at its own width)")
      ->check(CLI::Range(16, 4096))
      ->capture_default_str();
  app->add_option("--rec-interp", args->rec_interp,
                  "Resize of text lines for recognition: lanczos keeps the gaps between Latin words (better spaces), "
                  "linear is PaddleOCR's exact output, cubic in between (docs/BENCHMARKS.md)")
      ->check(CLI::IsMember({"linear", "cubic", "lanczos"}))
      ->capture_default_str();
  app->add_option("--rec-width-bucket", args->rec_width_bucket,
                  "Round recognition batch widths up to min width + k*N (fewer shapes to plan; 0: exact, as PaddleOCR)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app->add_option("--rec-pad-rows", args->rec_pad_rows,
                  "Pad each recognition call's rows up to a multiple of N with blank rows (fewer shapes to plan, the "
                  "blank rows computed too; results unchanged; 0: none; -1: the profile's default)")
      ->check(CLI::Range(-1, 256))
      ->capture_default_str();
  app->add_option("--det-bucket", args->det_bucket,
                  "Pad detection inputs up to multiples of N (fewer shapes to plan; 0: none, as PaddleOCR)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app->add_flag("--no-cross-batch", args->no_cross_batch,
                "Do not stack model calls of images read at once (batching across images and requests; see "
                "docs/DESIGN.md); for measuring what it gives");
  app->add_option("--batch-slots", args->batch_slots,
                  "Model calls of one input shape in flight before further ones are stacked into one call (0: four "
                  "per plan instance on GPUs, 1 on the CPU)")
      ->check(CLI::Range(0, 1024))
      ->capture_default_str();
  app->add_option("--max-side", args->max_side, "Refuse images with a longer side (checked before decoding)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app->add_option("--max-pixels", args->max_pixels, "Refuse images with more pixels (checked before decoding)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  app->add_option("--max-jpeg-scans", args->max_jpeg_scans,
                  "Refuse progressive JPEGs with more scans (ordinary files have about 10; thousands of scans are a "
                  "denial of service)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app->add_option("--decode-deadline-ms", args->decode_deadline_ms,
                  "Stop decoding an image (JPEG, PNG) after this many milliseconds (0: no deadline)")
      ->check(CLI::Range(int64_t{0}, int64_t{3600} * 1000))
      ->capture_default_str();
}

Result<EngineOptions> engine_options_from(const EngineArgs& a) {
  const std::vector<std::string>& rungs = engine::known_rungs();
  for (const auto& r : a.ladder) {
    if (std::find(rungs.begin(), rungs.end(), r) == rungs.end()) {
      return invalid_argument("unknown ladder rung '" + r + "'");
    }
  }
  if (a.backend != "auto" && std::find(rungs.begin(), rungs.end(), a.backend) == rungs.end()) {
    return invalid_argument(
        "--backend must be auto, cuda-fp32, cuda-fp16, cuda-fp32-nocudnn, cuda-fp16-nocudnn, cpu or reference (got '" +
        a.backend + "')");
  }

  ModelPaths paths = model_paths_in(a.models);
  if (!a.det_model.empty()) paths.det = a.det_model;
  if (!a.rec_model.empty()) paths.rec = a.rec_model;
  if (!a.cls_model.empty()) paths.cls = a.cls_model;
  if (!a.dict.empty()) paths.dict = a.dict;
  struct Needed {
    const char* what;
    const char* flag;
    const std::string* path;
    bool needed;
  };
  const Needed needed[] = {{"detection model", "--det-model", &paths.det, !a.rec_only},
                           {"recognition model", "--rec-model", &paths.rec, !a.det_only},
                           {"dictionary", "--dict", &paths.dict, !a.det_only},
                           {"angle classifier model", "--cls-model", &paths.cls, a.cls && !a.det_only}};
  for (const auto& n : needed) {
    if (n.needed && !fs::is_regular_file(*n.path)) {
      return invalid_argument(std::string(n.what) + " " + *n.path +
                              " not found: pass --models DIR (a directory with the PP-OCR files) or " + n.flag +
                              " PATH; scripts/setup.sh fetches the models into models/");
    }
  }

  PipelineOptions opts;
  opts.mode = a.det_only ? OcrMode::kDetOnly : a.rec_only ? OcrMode::kRecOnly : OcrMode::kFull;
  opts.use_cls = a.cls;
  opts.drop_score = a.drop_score;
  opts.det_limit_side = a.det_limit_side;
  opts.plan_cache = a.plan_cache;
  opts.host_groups = a.image_groups;
  opts.rec_top1 = !a.host_ctc;
  opts.rec_concurrent_calls = !a.rec_serial_calls;
  opts.det_device_normalize = !a.host_normalize;
  opts.rec_device_normalize = !a.host_normalize;
  opts.symbolic_plans = !a.per_shape_plans;
  opts.db.thresh = a.det_thresh;
  opts.db.box_thresh = a.det_box_thresh;
  opts.db.unclip_ratio = a.unclip_ratio;
  opts.rec.batch = a.rec_batch;
  opts.rec.min_width = a.rec_min_width;
  opts.rec.width_bucket = a.rec_width_bucket;
  opts.rec.pad_rows = a.rec_pad_rows;
  if (!parse_rec_interp(a.rec_interp, &opts.rec.interp)) {
    return invalid_argument("--rec-interp must be linear, cubic or lanczos (got '" + a.rec_interp + "')");
  }
  opts.det_bucket = a.det_bucket;
  opts.batching.enabled = !a.no_cross_batch;
  opts.batching.slots = a.batch_slots;
  EngineOptions eo;
  eo.models = paths;
  eo.pipeline = opts;
  eo.limits.max_side = a.max_side;
  eo.limits.max_pixels = a.max_pixels;
  eo.limits.max_jpeg_scans = a.max_jpeg_scans;
  eo.limits.decode_deadline_ms = a.decode_deadline_ms;
  eo.backend = a.backend;
  eo.require_gpu = a.require_gpu;
  eo.gpu_mem_mb = a.gpu_mem_mb;
  eo.gpus = a.gpus;
  eo.threads = a.threads;
  eo.share_cores = share_cores_from_environment();
  eo.cache_dir = cache_dir_from_environment();
  eo.ladder = a.ladder;
  eo.job_timeout_ms = a.watchdog_s * 1000;
  eo.reprobe_backoff_ms = a.reprobe_ms;
  // Documented user overrides, read once here (the front door) and handed down as options.
  if (const char* f = std::getenv("STEADYOCR_FAULT"); f && *f) {  // fault injection (docs/FAULTS.md)
    auto rules = engine::parse_fault_spec(f);
    if (!rules.is_ok()) return rules.status();
    eo.faults = *rules;
  }
  // Images in flight per worker (benchmarks; docs/BENCHMARKS.md).
  if (const char* c = std::getenv("STEADYOCR_WORKER_CONCURRENCY"); c && std::atoi(c) > 0) {
    eo.worker_concurrency = std::atoi(c);
  }
  eo.log_level = log::level_name(log::level());  // workers log at the level of this process
  return eo;
}

bool share_cores_from_environment() {
  const char* v = std::getenv("STEADYOCR_SHARE_CORES");
  return !(v && std::string_view(v) == "off");
}

void use_threads(int threads) {
  if (threads > 0) set_num_threads(threads);
  cpu_share::set_enabled(share_cores_from_environment());
  cv::setNumThreads(num_threads());
}

bool is_usage_error(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound;
}

bool has_image_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* kExts[] = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"};
  return std::any_of(std::begin(kExts), std::end(kExts), [&](const char* e) { return ext == e; });
}

std::vector<InputFile> expand_inputs(const std::vector<std::string>& inputs, bool recursive, std::string* usage_error) {
  std::vector<InputFile> files;
  for (const auto& in : inputs) {
    std::error_code ec;
    fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) {
      files.push_back({in, "no such file or directory"});
      continue;
    }
    if (!fs::is_directory(st)) {
      files.push_back({in, ""});
      continue;
    }
    std::vector<std::string> found;
    auto add = [&](const fs::directory_entry& e) {
      std::error_code fe;
      if (e.is_regular_file(fe) && has_image_extension(e.path().string())) found.push_back(e.path().string());
    };
    if (recursive) {
      for (const auto& e : fs::recursive_directory_iterator(in, fs::directory_options::skip_permission_denied, ec)) {
        add(e);
      }
    } else {
      for (const auto& e : fs::directory_iterator(in, ec)) add(e);
    }
    if (ec) {
      files.push_back({in, "cannot list directory: " + ec.message()});
      continue;
    }
    if (found.empty()) {
      *usage_error = "no image files (jpg, jpeg, png, bmp, webp, tif, tiff) in directory " + in +
                     (recursive ? "" : " (use -r for subdirectories)");
      return {};
    }
    std::sort(found.begin(), found.end());
    for (auto& f : found) files.push_back({std::move(f), ""});
  }
  return files;
}

}  // namespace steadyocr::cli

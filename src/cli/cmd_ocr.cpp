// `steadyocr ocr`: read text in image files and directories with the PP-OCR pipeline.
#include <unistd.h>

#include <opencv2/core.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "pipeline/engine.h"
#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "pipeline/result_format.h"
#include "pipeline/visualize.h"
#include "runtime/backend_registry.h"

namespace steadyocr::cli {
namespace {

namespace fs = std::filesystem;
using namespace steadyocr::pipeline;

struct OcrArgs {
  std::vector<std::string> inputs;
  std::string models = "models";
  std::string det_model, rec_model, cls_model, dict;
  std::string backend = "auto";
  bool require_gpu = false;
  size_t gpu_mem_mb = 0;
  int watchdog_s = 120;
  std::vector<std::string> ladder;  // hidden: explicit rungs, e.g. cpu-worker,cpu to drive fault paths without a GPU
  bool cls = false, det_only = false, rec_only = false, recursive = false, quiet = false;
  std::string format = "json";
  std::string output;
  std::string vis_dir;
  int threads = 0;
  float drop_score = 0.5f;
  int det_limit_side = 960;
  float det_thresh = 0.3f;
  double det_box_thresh = 0.6, unclip_ratio = 1.5;
  int rec_batch = 6, rec_min_width = 320;
  int rec_width_bucket = 0, det_bucket = 0;
  int64_t max_side = 20000, max_pixels = 100'000'000;
};

bool has_image_extension(const fs::path& p) {
  std::string ext = p.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  static const char* kExts[] = {".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"};
  return std::any_of(std::begin(kExts), std::end(kExts), [&](const char* e) { return ext == e; });
}

struct InputFile {
  std::string path;
  std::string missing;  // why it cannot be read at all (then it is a per-file failure)
};

// Files as given, directories expanded to their image files (sorted; recursive with -r).
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
      if (e.is_regular_file(fe) && has_image_extension(e.path())) found.push_back(e.path().string());
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

// Output keys: base names, or the path as given when two inputs share a base name.
std::vector<std::string> output_names(const std::vector<InputFile>& files) {
  std::map<std::string, int> count;
  for (const auto& f : files) ++count[fs::path(f.path).filename().string()];
  std::vector<std::string> names;
  for (const auto& f : files) {
    std::string base = fs::path(f.path).filename().string();
    names.push_back(count[base] > 1 ? f.path : base);
  }
  return names;
}

class Progress {
 public:
  Progress(size_t total, bool enabled) : total_(total), enabled_(enabled) {}
  void update(size_t done) {
    if (!enabled_) return;
    const int width = 30;
    int filled = static_cast<int>(width * done / std::max<size_t>(total_, 1));
    double secs = clock_.elapsed_ms() / 1000.0;
    double rate = secs > 0 ? done / secs : 0;
    std::string bar(filled, '=');
    bar.resize(width, ' ');
    std::fprintf(stderr, "\r[%s] %zu/%zu  %.2f img/s", bar.c_str(), done, total_, rate);
    if (rate > 0 && done < total_) std::fprintf(stderr, "  ETA %.0fs ", (total_ - done) / rate);
    std::fflush(stderr);
    shown_ = true;
  }
  // Clears the bar so that a message can be printed on a clean line.
  void clear() {
    if (!shown_) return;
    std::fprintf(stderr, "\r\033[K");
    shown_ = false;
  }

 private:
  size_t total_;
  bool enabled_;
  bool shown_ = false;
  Stopwatch clock_;
};

bool is_usage_error(const Status& s) {
  return s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kNotFound;
}

int run_ocr(const OcrArgs& a) {
  OutputFormat format;
  if (!parse_output_format(a.format, &format)) {
    std::fprintf(stderr, "error: --format must be json, jsonl, tsv or text (got '%s')\n", a.format.c_str());
    return kExitUsage;
  }
  std::string usage_error;
  std::vector<InputFile> files = expand_inputs(a.inputs, a.recursive, &usage_error);
  if (!usage_error.empty()) {
    std::fprintf(stderr, "error: %s\n", usage_error.c_str());
    return kExitUsage;
  }

  if (a.threads > 0) set_num_threads(a.threads);
  cv::setNumThreads(num_threads());

  static const char* kRungs[] = {"auto", "cuda-fp16", "cuda-fp32", "cpu", "reference", "cpu-worker"};
  for (const auto& r : a.ladder) {
    if (std::none_of(std::begin(kRungs) + 1, std::end(kRungs), [&](const char* k) { return r == k; })) {
      std::fprintf(stderr, "error: unknown ladder rung '%s'\n", r.c_str());
      return kExitUsage;
    }
  }
  if (std::none_of(std::begin(kRungs), std::end(kRungs), [&](const char* r) { return a.backend == r; })) {
    std::fprintf(stderr, "error: --backend must be auto, cuda-fp16, cuda-fp32, cpu or reference (got '%s')\n",
                 a.backend.c_str());
    return kExitUsage;
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
      std::fprintf(stderr,
                   "error: %s %s not found: pass --models DIR (a directory with the PP-OCR files) or %s PATH; "
                   "scripts/setup.sh fetches the models into models/\n",
                   n.what, n.path->c_str(), n.flag);
      return kExitUsage;
    }
  }

  std::unique_ptr<std::ofstream> file_out;
  if (!a.output.empty()) {
    file_out = std::make_unique<std::ofstream>(a.output, std::ios::binary | std::ios::trunc);
    if (!*file_out) {
      std::fprintf(stderr, "error: cannot write output file %s\n", a.output.c_str());
      return kExitUsage;
    }
  }
  std::ostream& out = file_out ? static_cast<std::ostream&>(*file_out) : std::cout;
  if (!a.vis_dir.empty()) {
    std::error_code ec;
    fs::create_directories(a.vis_dir, ec);
    if (ec) {
      std::fprintf(stderr, "error: cannot create --vis directory %s: %s\n", a.vis_dir.c_str(), ec.message().c_str());
      return kExitUsage;
    }
  }

  PipelineOptions opts;
  opts.mode = a.det_only ? OcrMode::kDetOnly : a.rec_only ? OcrMode::kRecOnly : OcrMode::kFull;
  opts.use_cls = a.cls;
  opts.drop_score = a.drop_score;
  opts.det_limit_side = a.det_limit_side;
  opts.db.thresh = a.det_thresh;
  opts.db.box_thresh = a.det_box_thresh;
  opts.db.unclip_ratio = a.unclip_ratio;
  opts.rec.batch = a.rec_batch;
  opts.rec.min_width = a.rec_min_width;
  opts.rec.width_bucket = a.rec_width_bucket;
  opts.det_bucket = a.det_bucket;
  DecodeLimits limits;
  limits.max_side = a.max_side;
  limits.max_pixels = a.max_pixels;
  EngineOptions eo;
  eo.models = paths;
  eo.pipeline = opts;
  eo.limits = limits;
  eo.backend = a.backend;
  eo.require_gpu = a.require_gpu;
  eo.gpu_mem_mb = a.gpu_mem_mb;
  eo.threads = a.threads;
  eo.ladder = a.ladder;
  eo.job_timeout_ms = a.watchdog_s * 1000;
  auto engine_or = OcrEngine::create(eo);
  if (!engine_or.is_ok()) {
    std::fprintf(stderr, "error: %s\n", engine_or.status().message().c_str());
    return is_usage_error(engine_or.status()) ? kExitUsage : kExitFailed;
  }
  OcrEngine& engine = **engine_or;
  std::unique_ptr<Visualizer> vis;
  if (!a.vis_dir.empty()) vis = std::make_unique<Visualizer>();

  const std::vector<std::string> names = output_names(files);
  std::vector<ImageOutcome> outcomes;
  size_t failed = 0;
  Progress progress(files.size(), !a.quiet && files.size() > 3 && isatty(STDERR_FILENO));
  Stopwatch wall;
  if (format == OutputFormat::kTsv) out << tsv_header();

  // Chunks: files are read in parallel, then the engine runs them together (in parallel where the backend
  // allows); results are written as each chunk completes.
  const size_t chunk = static_cast<size_t>(std::max(8, 2 * num_threads()));
  for (size_t start = 0; start < files.size(); start += chunk) {
    const size_t n = std::min(chunk, files.size() - start);
    std::vector<ImageOutcome> batch(n);
    std::vector<ImageJob> jobs(n);
    parallel_for_each(static_cast<int64_t>(n), [&](int64_t k) {
      const InputFile& f = files[start + k];
      ImageOutcome& o = batch[k];
      o.name = names[start + k];
      o.path = f.path;
      jobs[k].name = o.name;
      if (!f.missing.empty()) {
        o.ok = false;
        o.error = f.path + ": " + f.missing;
        return;
      }
      auto bytes = read_file_bytes(f.path, limits.max_file_bytes);
      if (!bytes.is_ok()) {
        o.ok = false;
        o.error = bytes.status().message();
        return;
      }
      jobs[k].bytes = std::move(*bytes);
    });
    std::vector<ImageJob> to_run;
    std::vector<size_t> index;
    for (size_t k = 0; k < n; ++k) {
      if (batch[k].ok) {
        to_run.push_back(std::move(jobs[k]));
        index.push_back(k);
      }
    }
    std::vector<EngineOutcome> results = engine.ocr_batch(to_run);
    for (size_t r = 0; r < results.size(); ++r) {
      ImageOutcome& o = batch[index[r]];
      o.fallbacks = results[r].events;
      if (!results[r].status.is_ok()) {
        o.ok = false;
        o.result.backend = results[r].backend;
        o.error = o.path + ": " + results[r].status.message();
        continue;
      }
      o.result = std::move(results[r].result);
      if (vis) {
        std::string file = o.name;
        std::replace(file.begin(), file.end(), '/', '_');
        if (!has_image_extension(file)) file += ".jpg";
        auto img = decode_image(to_run[r].bytes.data(), to_run[r].bytes.size(), limits);
        Status s =
            img.is_ok() ? vis->write((fs::path(a.vis_dir) / file).string(), img->bgr, o.result.lines) : img.status();
        if (!s.is_ok()) {
          progress.clear();
          std::fprintf(stderr, "warning: %s\n", s.message().c_str());
        }
      }
    }
    for (auto& o : batch) {
      if (!o.ok) {
        ++failed;
        progress.clear();
        std::fprintf(stderr, "error: %s\n", o.error.c_str());
      }
      if (format != OutputFormat::kJson) {
        out << format_outcome(o, format);
        out.flush();
      }
      outcomes.push_back(std::move(o));
    }
    progress.update(outcomes.size());
  }
  if (format == OutputFormat::kJson) out << format_outcomes(outcomes, format);
  out.flush();
  progress.clear();
  const double secs = wall.elapsed_ms() / 1000.0;
  if (!a.quiet) {
    std::fprintf(stderr, "ocr: %zu images, %zu failed, %.2f s, %.2f images/s, backend %s, %d threads\n",
                 outcomes.size(), failed, secs, secs > 0 ? outcomes.size() / secs : 0.0,
                 engine.current_backend().c_str(), num_threads());
  }
  // Every move on the backend ladder, also with --quiet: a slower backend is never silent.
  for (const auto& e : engine.events()) {
    std::fprintf(stderr, "ocr: backend event %s: %s -> %s: %s%s%s\n", e.time.c_str(), e.from.c_str(),
                 e.to.empty() ? "(none)" : e.to.c_str(), e.reason.c_str(),
                 e.detail.empty() ? "" : (" - " + e.detail).c_str(), e.fix.empty() ? "" : ("; fix: " + e.fix).c_str());
  }
  for (const auto& [rung, st] : engine.worker_stats()) {
    if (st.worker_losses || st.retries) {
      std::fprintf(stderr, "ocr: %s worker: %llu lost (%llu hung), %llu jobs retried, %llu started\n", rung.c_str(),
                   static_cast<unsigned long long>(st.worker_losses), static_cast<unsigned long long>(st.hangs),
                   static_cast<unsigned long long>(st.retries), static_cast<unsigned long long>(st.worker_starts));
    }
  }
  if (file_out && !*file_out) {
    std::fprintf(stderr, "error: writing %s failed\n", a.output.c_str());
    return kExitFailed;
  }
  return failed > 0 ? kExitFailed : kExitOk;
}

}  // namespace

Command add_ocr_command(CLI::App& root) {
  auto args = std::make_shared<OcrArgs>();
  Command c;
  CLI::App* app = root.add_subcommand("ocr", "Read text in images (PP-OCR: detection, optional angle, recognition)");
  c.app = app;
  app->add_option("inputs", args->inputs, "Image files or directories (jpg, png, bmp, webp, tiff)")->required();
  app->add_option("--models", args->models, "Directory with the PP-OCR models and dictionary")->capture_default_str();
  app->add_option("--det-model", args->det_model, "Detection model (ONNX); overrides --models");
  app->add_option("--rec-model", args->rec_model, "Recognition model (ONNX); overrides --models");
  app->add_option("--cls-model", args->cls_model, "Angle classifier model (ONNX); overrides --models");
  app->add_option("--dict", args->dict, "Recogniser dictionary, one character per line; overrides --models");
  app->add_option("--backend", args->backend,
                  "auto (the ladder cuda-fp16 > cuda-fp32 > cpu > reference, every step down reported), or pin one "
                  "of cuda-fp16, cuda-fp32, cpu, reference")
      ->capture_default_str();
  app->add_flag("--require-gpu", args->require_gpu,
                "Fail (with the doctor's finding) instead of falling back when no GPU backend can serve");
  app->add_option("--ladder", args->ladder,
                  "Explicit ladder rungs (testing: cpu-worker runs the CPU backend in a worker)")
      ->delimiter(',')
      ->group("");
  app->add_option("--watchdog", args->watchdog_s,
                  "Seconds one image may take on a GPU worker before the worker counts as hung and is replaced")
      ->check(CLI::Range(1, 86400))
      ->capture_default_str();
  app->add_option("--gpu-mem", args->gpu_mem_mb, "Device memory budget of the CUDA backend in MB (0: none)");
  app->add_flag("--cls", args->cls, "Turn upside-down text lines with the angle classifier");
  auto* det_only = app->add_flag("--det-only", args->det_only, "Detect text boxes only (text left empty)");
  auto* rec_only = app->add_flag("--rec-only", args->rec_only, "Each image is one text line: recognise it whole");
  det_only->excludes(rec_only);
  app->add_option("--format", args->format, "Output format")
      ->check(CLI::IsMember({"json", "jsonl", "tsv", "text"}))
      ->capture_default_str();
  app->add_option("-o,--output", args->output, "Write results to FILE instead of stdout");
  app->add_option("--vis", args->vis_dir, "Write each image with its boxes and text drawn into DIR");
  app->add_flag("-r,--recursive", args->recursive, "Look for images in subdirectories too");
  app->add_option("--threads", args->threads, "Threads for models and image work (default: all cores)")
      ->check(CLI::Range(1, 1024));
  app->add_flag("-q,--quiet", args->quiet, "No progress bar and no summary line");
  app->add_option("--drop-score", args->drop_score, "Drop lines read with a lower score")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
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
  app->add_option("--rec-min-width", args->rec_min_width, "Minimum width of a recognition batch")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app->add_option("--rec-width-bucket", args->rec_width_bucket,
                  "Round recognition batch widths up to min width + k*N (fewer shapes to plan; 0: exact, as PaddleOCR)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app->add_option("--det-bucket", args->det_bucket,
                  "Pad detection inputs up to multiples of N (fewer shapes to plan; 0: none, as PaddleOCR)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  app->add_option("--max-side", args->max_side, "Refuse images with a longer side (checked before decoding)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 20))
      ->capture_default_str();
  app->add_option("--max-pixels", args->max_pixels, "Refuse images with more pixels (checked before decoding)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  c.run = [args] { return run_ocr(*args); };
  return c;
}

}  // namespace steadyocr::cli

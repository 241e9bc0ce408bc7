// The PP-OCR pipeline: detection (DB) -> optional angle classification -> recognition (CTC), with
// PaddleOCR predict_system semantics and per-stage timings. Decoding is separate (image_decode.h).
#pragma once

#include <opencv2/core.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"
#include "pipeline/db_postprocess.h"
#include "pipeline/dictionary.h"
#include "pipeline/recognizer.h"
#include "pipeline/time_profile.h"
#include "runtime/model.h"

namespace steadyocr::pipeline {

// Model files of one PP-OCR set.
struct ModelPaths {
  std::string det;
  std::string rec;
  std::string cls;
  std::string dict;
};

// The standard file names inside a models directory (PP-OCRv4 det/rec, mobile v2.0 cls, ppocr_keys_v1.txt).
ModelPaths model_paths_in(const std::string& dir);

enum class OcrMode {
  kFull,     // detect, then read every box
  kDetOnly,  // boxes only (text empty, score = detection box score)
  kRecOnly,  // each picture is one text line: no detection, read the whole picture
};

// How the work is spread over the machine; never changes results.
enum class ExecutionProfile {
  kAuto,    // kDevice for GPU backends, kHost otherwise
  kHost,    // model stages one picture at a time with all threads (CPU kernels use every core)
  kDevice,  // whole pictures in parallel (models run concurrently on their own streams), full recognition batches,
            // several prepared instances per shape, the bucketed shapes planned at load
};

struct PipelineOptions {
  OcrMode mode = OcrMode::kFull;
  bool use_cls = false;
  int det_limit_side = 960;  // longer side of the detector input
  // Detector input sides padded (zeros, right and bottom) up to multiples of this (0: none, as PaddleOCR); the map is
  // read back inside the resized picture only. Few distinct input shapes for GPU backends.
  int det_bucket = 0;
  DbOptions db;
  RecOptions rec;
  ClsOptions cls;
  float drop_score = 0.5f;  // lines read with a lower score are dropped (full mode)
  // Load the angle classifier even when use_cls is off, so that single images can ask for it (ImageOptions::use_cls).
  bool load_cls = false;
  ExecutionProfile execution = ExecutionProfile::kAuto;
  int plan_instances = 4;  // kDevice: prepared instances per input shape (concurrent pictures)
  // kHost on the cpu backend: the pictures of one call run side by side in this many groups, each group's model runs
  // and image work on its share of the threads (parallel regions over one page's tensors scale poorly past a few
  // cores). 0: one group per thread from 8 threads up (at most 16), else 1 (every stage of a picture on all threads).
  // Load
  // sets the value it resolved. Never changes results.
  int host_groups = 0;
  // Plans (input shapes) kept per model, least recently used dropped first; 0: 512 on kDevice (a plan holds no
  // device memory of its own: runs lease arenas), the runtime's default on the host.
  int plan_cache = 0;
  // kDevice: the recogniser returns each step's top-1 pair, decoded as the full probabilities would be (where the
  // backend runs Top1); false: every class's probability comes back and the host picks (--host-ctc, to compare).
  bool rec_top1 = true;
  // kDevice: an image's recognition calls go out at once (RecOptions::concurrent_calls); false: one after another
  // (--rec-serial-calls, to compare). Same results either way.
  bool rec_concurrent_calls = true;
  // kDevice: the detector takes the resized picture's bytes and normalises them on the backend with the host's table
  // (the same floats) where the backend runs ImageLut and --det-bucket is 0; false: the host normalises
  // (--host-normalize, to compare).
  bool det_device_normalize = true;
  // kDevice: the recogniser takes each row's bytes with a mask for the padding and normalises them on the backend
  // (RecOptions::bytes) where the backend runs ImageLut; false: the host normalises (--host-normalize, to compare).
  bool rec_device_normalize = true;
  // One plan for every input shape where the backend makes one (cpu, vulkan, cuda: runtime::ModelOptions::
  // symbolic_plans); false: every new shape is planned (--per-shape-plans, to compare).
  bool symbolic_plans = true;
  // Where the models remember between processes that their symbolic graph passed its check
  // (runtime::ModelOptions::cache_dir; "" for nowhere). The engine sets it from its own cache_dir.
  std::string cache_dir;
  // Set by load: the detector model takes bytes (u8 [1, H, W, 3]); not an option.
  bool det_bytes = false;
  bool warm_up = true;            // kDevice: plan the bucketed det/rec shapes at load
  int warm_rec_max_width = 1280;  // kDevice: widest recognition bucket planned at load (wider ones on demand)
  // Batching across concurrent calls (runtime/batching.h): model runs of one shape that arrive while that shape's
  // call slots are busy go out as one stacked call. Results are the rows each image gets alone.
  struct Batching {
    bool enabled = true;
    int det_images = 4;  // pictures of one detector input shape per call
    int rec_rows = 0;    // crops per recognition call (0: rec.merge_rows when set, else 8 * rec.batch)
    int cls_rows = 0;    // crops per classifier call (0: 8 * cls.batch)
    int slots = 0;       // calls of one shape in flight (0: 4 * plan_instances on kDevice, host_groups on the host)
  } batching;
};

// The groups PipelineOptions::host_groups resolves to for `backend` with `threads` threads and `memory_bytes` of
// memory available (-1: unknown): 1 on a device's backend (and on the host profile's other backends), the option when
// set (at most `threads`), else one per thread from 8 threads up, at most 16 and at most one per 256 MiB available
// (each group's runs hold their own activations, about 100 MB at the default detector side).
int host_groups_for(const PipelineOptions& options, const std::string& backend, int threads, int64_t memory_bytes = -1);
// host_groups_for with this process's threads (num_threads()) and available memory (core/host_memory.h).
int host_groups_here(const PipelineOptions& options, const std::string& backend);
// Writes the cpu backend's group count here (host_groups_here: the automatic one, or the count set, at most the
// threads) into options.host_groups, logging when the memory available lowered the automatic one, so that everything
// loaded from these options (the pipeline, the engine's workers, bench's and ocr's report) uses the same number.
void resolve_host_groups(PipelineOptions& options);

// One image's changes to the pipeline's options (a server request's options); unset fields keep the pipeline's.
// Only what needs no other models or plans: the mode (its models must be loaded), the classifier (loaded, see
// load_cls), the DB thresholds and the drop score.
struct ImageOptions {
  std::optional<OcrMode> mode;
  std::optional<bool> use_cls;
  std::optional<float> det_thresh;
  std::optional<double> det_box_thresh;
  std::optional<double> unclip_ratio;
  std::optional<float> drop_score;
  std::optional<RecInterp> rec_interp;
  bool empty() const {
    return !mode && !use_cls && !det_thresh && !det_box_thresh && !unclip_ratio && !drop_score && !rec_interp;
  }
  bool operator==(const ImageOptions&) const = default;
};

// `base` with `changes` applied.
PipelineOptions with_image_options(const PipelineOptions& base, const ImageOptions& changes);

struct TextLine {
  std::string text;
  float score = 0;
  Quad box;  // in the decoded picture's pixels: TL, TR, BR, BL
};

// Milliseconds per stage for one picture: det = pre-processing + model, post = DB + crops,
// rec = pre-processing + model + CTC. total is their sum (plus decode when the caller sets it).
struct StageTimes {
  double decode = 0, det = 0, post = 0, cls = 0, rec = 0, total = 0;
};

// The model calls that read one image, with what other images shared them (batching across callers).
struct CallStats {
  int det_images = 0;    // images in the detector call (1: alone)
  int rec_calls = 0;     // recognition calls that read this image's crops
  int64_t rec_rows = 0;  // rows of those calls, this image's and other images'
  int rec_shared = 0;    // of those calls, the ones shared with other images
};

struct OcrResult {
  std::vector<TextLine> lines;
  StageTimes timings;
  TimeProfile profile;  // inside det, cls and rec: waits, planning, copies, device time
  CallStats calls;
  std::string backend;  // where the models ran
  int width = 0, height = 0;
};

class Pipeline {
 public:
  // Loads the models the mode needs from `paths` onto `backend` and checks they fit together (dictionary
  // size vs recogniser classes, input heights). Errors name the file and the fix.
  // `wrap`, when given, wraps each loaded model ("det", "rec", "cls") in another runner (the engine's fault
  // injection and out-of-memory recovery).
  using RunnerWrapper =
      std::function<std::shared_ptr<runtime::Runner>(const std::string& stage, std::shared_ptr<runtime::Model> model)>;
  static Result<std::unique_ptr<Pipeline>> load(const ModelPaths& paths, std::shared_ptr<Backend> backend,
                                                const PipelineOptions& options, const RunnerWrapper& wrap = nullptr);

  // From runners built elsewhere (tests, the engine's fallback-aware runners). det may be null in rec-only
  // mode, rec in det-only mode, cls when options.use_cls is false.
  Pipeline(std::shared_ptr<runtime::Runner> det, std::shared_ptr<runtime::Runner> rec,
           std::shared_ptr<runtime::Runner> cls, Dictionary dict, PipelineOptions options);

  // Runs every stage on one 8-bit BGR picture. Thread-safe.
  Result<OcrResult> run(const cv::Mat& bgr) const;
  // Runs several pictures stage by stage: host stages (DB post-processing, crops) in parallel across
  // pictures, model stages one picture at a time with all threads. Results follow the input order.
  // `options`, when given, holds each picture's changes to the options (same length as `images`); a picture
  // asking for a model this pipeline did not load fails with kInvalidArgument naming it.
  std::vector<Result<OcrResult>> run_many(const std::vector<cv::Mat>& images,
                                          const std::vector<ImageOptions>* options = nullptr) const;

  const PipelineOptions& options() const { return options_; }
  std::string backend_name() const;
  // Whether `options` can run here: the models its mode and classifier need are loaded. The error names the one
  // missing.
  Status can_run(const PipelineOptions& options) const;

 private:
  struct Work;
  Status detect(Work& w) const;
  void post_process(Work& w) const;
  Status read_lines(Work& w) const;

  std::shared_ptr<runtime::Runner> det_;
  std::unique_ptr<Recognizer> rec_;
  std::unique_ptr<AngleClassifier> cls_;
  PipelineOptions options_;
};

}  // namespace steadyocr::pipeline

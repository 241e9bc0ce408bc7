#include "pipeline/pipeline.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <future>
#include <map>
#include <thread>
#include <utility>
#include <vector>

#include "core/host_memory.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "pipeline/crop.h"
#include "pipeline/det_preprocess.h"
#include "pipeline/warm_up.h"
#include "runtime/backend_registry.h"
#include "runtime/batching.h"

namespace steadyocr::pipeline {

struct Pipeline::Work {
  const cv::Mat* image = nullptr;
  PipelineOptions opts;  // the pipeline's options with the picture's changes
  Status status;
  OcrResult result;
  Tensor prob;               // detector output
  int map_h = 0, map_w = 0;  // the resized picture inside `prob` (smaller than prob when the input was padded)
  std::vector<DetBox> boxes;
  std::vector<cv::Mat> crops;
};

ModelPaths model_paths_in(const std::string& dir) {
  std::filesystem::path d(dir);
  return {(d / "ch_PP-OCRv4_det_infer.onnx").string(), (d / "ch_PP-OCRv4_rec_infer.onnx").string(),
          (d / "ch_ppocr_mobile_v2.0_cls_infer.onnx").string(), (d / "ppocr_keys_v1.txt").string()};
}

namespace {
constexpr int kMaxAutoHostGroups = 16;
constexpr int64_t kHostGroupBytes = int64_t{256} << 20;  // available memory asked per automatic group
}  // namespace

int host_groups_for(const PipelineOptions& options, const std::string& backend, int threads, int64_t memory_bytes) {
  const bool host = options.execution == ExecutionProfile::kHost ||
                    (options.execution == ExecutionProfile::kAuto && backend.rfind("cuda", 0) != 0);
  if (!host || backend != "cpu") return 1;  // a device's runs are not on the host's cores
  if (options.host_groups > 0) return std::min(options.host_groups, std::max(1, threads));
  // One picture per thread: measured on a 16-core host, 16 groups read 1.9-7.5x the images/s of one group of 16
  // threads and 1.2-1.6x those of 8 groups of 2 (docs/BENCHMARKS.md); at most kMaxAutoHostGroups (each group's plan
  // instances hold their own activations, about 100 MB with PP-OCRv4 at --det-limit-side 960).
  if (threads < 8) return 1;
  const int by_memory =
      memory_bytes < 0 ? kMaxAutoHostGroups : static_cast<int>(std::max<int64_t>(1, memory_bytes / kHostGroupBytes));
  return std::min({threads, kMaxAutoHostGroups, by_memory});
}

int host_groups_here(const PipelineOptions& options, const std::string& backend) {
  const int threads = num_threads();
  // The memory files are read only where they can lower the count (the automatic one on 8 threads or more).
  const bool needs_memory = options.host_groups == 0 && threads >= 8;
  return host_groups_for(options, backend, threads, needs_memory ? host_memory::available_bytes() : -1);
}

void resolve_host_groups(PipelineOptions& options) {
  const int threads = num_threads();
  if (options.host_groups > 0 || threads < 8) {  // the user's count (at most the threads), or one group
    options.host_groups = host_groups_for(options, "cpu", threads);
    return;
  }
  const int uncapped = host_groups_for(options, "cpu", threads);
  const int64_t memory = host_memory::available_bytes();
  options.host_groups = host_groups_for(options, "cpu", threads, memory);
  if (options.host_groups < uncapped) {
    log::info("pipeline",
              "{} image groups, not {}: {:.0f} MiB of memory available, 256 MiB asked per group (--image-groups sets "
              "the count)",
              options.host_groups, uncapped, memory / 1048576.0);
  }
}

namespace {

// Recognition rows per call on the device profile are padded to a multiple of this (RecOptions::pad_rows; 0: none).
// Padding to the batch (6) made fewer shapes, but the GPU computes the blank rows: a quarter of synth-dev's rows.
// Without it an H100 read 385 against 323 synth-dev images/s with 16 in flight, 173-180 against 164 on sroie-dev,
// the texts identical and cold processes no slower (docs/BENCHMARKS.md, "Recognition rows without padding").
constexpr int kDeviceRecPadRows = 0;

Result<std::unique_ptr<runtime::Model>> load_model(const std::string& what, const std::string& path,
                                                   const std::shared_ptr<Backend>& backend,
                                                   const runtime::ModelOptions& options) {
  if (!std::filesystem::exists(path)) {
    return not_found(what + " model " + path + " not found: pass --models DIR or --" + what +
                     "-model PATH (scripts/setup.sh fetches the PP-OCR models into models/)");
  }
  auto m = runtime::Model::load(path, backend, options);
  if (!m.is_ok()) return m.status().with_context("loading " + what + " model " + path);
  return m;
}

// A static dimension of the model's single input/output, or -1 when it is dynamic or unknown.
int64_t static_dim(const std::vector<graph::Value*>& values, int axis) {
  if (values.size() != 1 || values[0] == nullptr) return -1;
  const Shape& s = values[0]->shape;
  if (axis < 0) axis += static_cast<int>(s.size());
  if (axis < 0 || axis >= static_cast<int>(s.size())) return -1;
  return s[axis] > 0 ? s[axis] : -1;
}

}  // namespace

Result<std::unique_ptr<Pipeline>> Pipeline::load(const ModelPaths& paths, std::shared_ptr<Backend> backend,
                                                 const PipelineOptions& options, const RunnerWrapper& wrap) {
  PipelineOptions opts = options;
  if (opts.execution == ExecutionProfile::kAuto) {
    opts.execution = backend->name().rfind("cuda", 0) == 0 ? ExecutionProfile::kDevice : ExecutionProfile::kHost;
  }
  const bool device = opts.execution == ExecutionProfile::kDevice;
  runtime::ModelOptions model_options;
  // Exact det sizes and rec widths: most requests plan a new shape, and the shape-independent passes need not run
  // again for each (every backend: they are the larger part of a new shape's host time on the cpu too).
  model_options.reuse_generic_passes = true;
  model_options.symbolic_plans = opts.symbolic_plans;
  model_options.cache_dir = opts.cache_dir;
  model_options.fallbacks = runtime::fallback_chain(backend->name());  // where the nodes it declines run
  if (device) {
    if (opts.rec.pad_rows < 0) opts.rec.pad_rows = kDeviceRecPadRows;
    opts.rec.concurrent_calls = opts.rec_concurrent_calls;
    if (opts.rec.merge_rows == 0) opts.rec.merge_rows = 8 * std::max(opts.rec.batch, 1);
    model_options.max_replicas = std::max(1, opts.plan_instances);
    // Plans hold no device memory of their own (runs lease arenas): every shape a set repeats skips planning.
    model_options.max_cached_shapes = 512;
  }
  if (backend->name() == "cpu") resolve_host_groups(opts);  // no-op where the engine resolved it already
  opts.host_groups = host_groups_for(opts, backend->name(), num_threads());
  if (opts.host_groups > 1) model_options.max_replicas = opts.host_groups;  // one plan instance per group
  if (opts.plan_cache > 0) model_options.max_cached_shapes = static_cast<size_t>(opts.plan_cache);
  std::map<std::string, std::shared_ptr<runtime::Model>> raw;
  auto wrapped = [&](const char* stage, std::unique_ptr<runtime::Model> m) -> std::shared_ptr<runtime::Runner> {
    std::shared_ptr<runtime::Model> shared = std::move(m);
    raw[stage] = shared;
    if (wrap) return wrap(stage, std::move(shared));
    return shared;
  };
  std::shared_ptr<runtime::Runner> det, rec, cls;
  Dictionary dict;
  // The models load side by side (import, passes and plans of one model use a core while the other's wait on memory
  // and the parser): a cold process reaches its first image sooner. Their results are taken in order, so the first
  // error named is the one a sequential load would name.
  using Loaded = Result<std::unique_ptr<runtime::Model>>;
  std::future<Loaded> rec_load, cls_load;
  const bool want_det = opts.mode != OcrMode::kRecOnly, want_rec = opts.mode != OcrMode::kDetOnly;
  const bool want_cls = (opts.use_cls || opts.load_cls) && opts.mode != OcrMode::kDetOnly;
  if (want_rec) {
    runtime::ModelOptions rec_options = model_options;
    // On a device only each step's top-1 pair comes back (6625 classes stay there) where the backend runs Top1.
    rec_options.top1_output = device && opts.rec_top1;
    // And each row's bytes cross with a mask for its zero padding, normalised there (ImageLut), where it runs.
    if (device && opts.rec_device_normalize) {
      rec_options.image_lut = rec_normalize_table();
      rec_options.image_lut_masked = true;
    }
    rec_load = std::async(std::launch::async, [=] { return load_model("rec", paths.rec, backend, rec_options); });
  }
  if (want_cls) {
    cls_load = std::async(std::launch::async, [=] { return load_model("cls", paths.cls, backend, model_options); });
  }
  // Every launched load is waited for before returning (an early return must not leave one running).
  struct Joiner {
    std::future<Loaded>* f[2];
    ~Joiner() {
      for (auto* x : f) {
        if (x->valid()) x->wait();
      }
    }
  } joiner{{&rec_load, &cls_load}};
  if (want_det) {
    runtime::ModelOptions det_options = model_options;
    // On a device the picture's bytes cross and are normalised there, where the backend runs ImageLut (a padded
    // bucket would need zeros after normalisation, which no byte gives: --det-bucket keeps the host's floats).
    if (device && opts.det_device_normalize && opts.det_bucket == 0) det_options.image_lut = det_normalize_table();
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::Model> m, load_model("det", paths.det, backend, det_options));
    opts.det_bytes = m->options().image_lut.defined();
    det = wrapped("det", std::move(m));
  }
  if (want_rec) {
    if (!std::filesystem::exists(paths.dict)) {
      return not_found("dictionary " + paths.dict +
                       " not found: pass --models DIR or --dict PATH (the character list of the recognition model)");
    }
    ASSIGN_OR_RETURN(dict, Dictionary::load(paths.dict));
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::Model> m, rec_load.get());
    opts.rec.top1 = m->options().top1_output;
    opts.rec.bytes = m->options().image_lut.defined();
    const graph::Value* out = m->graph().outputs()[0];
    if (opts.rec.top1 && out->producer) out = out->producer->input(0);  // the class probabilities Top1 reads
    int64_t classes = static_dim({const_cast<graph::Value*>(out)}, -1);
    if (classes > 0 && classes != dict.num_classes()) {
      return invalid_argument("recognition model " + paths.rec + " has " + std::to_string(classes) +
                              " output classes but dictionary " + paths.dict + " gives " +
                              std::to_string(dict.num_classes()) + " (" + std::to_string(dict.num_classes() - 2) +
                              " lines + blank + space); pass the model's own dictionary with --dict");
    }
    int64_t height = static_dim(m->graph().inputs(), 2);
    if (height > 0) opts.rec.height = static_cast<int>(height);
    rec = wrapped("rec", std::move(m));
  }
  if (want_cls) {
    ASSIGN_OR_RETURN(std::unique_ptr<runtime::Model> m, cls_load.get());
    int64_t h = static_dim(m->graph().inputs(), 2), w = static_dim(m->graph().inputs(), 3);
    if (h > 0) opts.cls.height = static_cast<int>(h);
    if (w > 0) opts.cls.width = static_cast<int>(w);
    cls = wrapped("cls", std::move(m));
  }
  if (device && opts.warm_up) {
    // On the models themselves, not through `wrap` (fault injection counts requests, and this is none).
    RETURN_IF_ERROR(warm_up_models(raw["det"].get(), raw["rec"].get(), opts));
  }
  return std::make_unique<Pipeline>(std::move(det), std::move(rec), std::move(cls), std::move(dict), opts);
}

Pipeline::Pipeline(std::shared_ptr<runtime::Runner> det, std::shared_ptr<runtime::Runner> rec,
                   std::shared_ptr<runtime::Runner> cls, Dictionary dict, PipelineOptions options)
    : det_(std::move(det)), options_(options) {
  const PipelineOptions::Batching& b = options_.batching;
  if (b.enabled) {
    // Device: four calls per plan instance of a shape (the device's streams take calls beyond the instances; on the
    // H200 bench was 84.0 / 85.0 / 83.3 images/s with four per instance / stacking off / one per instance, within
    // noise: docs/BENCHMARKS.md). Host: one (each call uses every core; further calls of that shape would wait).
    const int slots = b.slots > 0                                       ? b.slots
                      : options_.execution == ExecutionProfile::kDevice ? 4 * std::max(1, options_.plan_instances)
                                                                        : std::max(1, options_.host_groups);
    auto batched = [&](const char* stage, std::shared_ptr<runtime::Runner>& r, int64_t rows) {
      if (r && rows > 1) r = std::make_shared<runtime::BatchingRunner>(r, runtime::BatchingOptions{stage, rows, slots});
    };
    const int rec_batch = std::max(options_.rec.batch, 1), cls_batch = std::max(options_.cls.batch, 1);
    batched("det", det_, b.det_images);
    batched("rec", rec,
            b.rec_rows > 0 ? b.rec_rows : (options_.rec.merge_rows > 0 ? options_.rec.merge_rows : 8 * rec_batch));
    batched("cls", cls, b.cls_rows > 0 ? b.cls_rows : 8 * cls_batch);
  }
  if (rec) rec_ = std::make_unique<Recognizer>(std::move(rec), std::move(dict), options_.rec);
  if (cls && (options_.use_cls || options_.load_cls))
    cls_ = std::make_unique<AngleClassifier>(std::move(cls), options_.cls);
}

PipelineOptions with_image_options(const PipelineOptions& base, const ImageOptions& c) {
  PipelineOptions o = base;
  if (c.mode) o.mode = *c.mode;
  if (c.use_cls) o.use_cls = *c.use_cls;
  if (c.det_thresh) o.db.thresh = *c.det_thresh;
  if (c.det_box_thresh) o.db.box_thresh = *c.det_box_thresh;
  if (c.unclip_ratio) o.db.unclip_ratio = *c.unclip_ratio;
  if (c.drop_score) o.drop_score = *c.drop_score;
  if (c.rec_interp) o.rec.interp = *c.rec_interp;
  return o;
}

Status Pipeline::can_run(const PipelineOptions& o) const {
  if (o.mode != OcrMode::kRecOnly && !det_) {
    return invalid_argument("detection needs the detection model, which this pipeline did not load (built rec-only)");
  }
  if (o.mode != OcrMode::kDetOnly && !rec_) {
    return invalid_argument(
        "reading text needs the recognition model, which this pipeline did not load (built det-only)");
  }
  if (o.use_cls && o.mode != OcrMode::kDetOnly && !cls_) {
    return invalid_argument("the angle classifier was not loaded (built without use_cls or load_cls)");
  }
  return Status::ok();
}

std::string Pipeline::backend_name() const {
  if (det_) return det_->backend_name();
  if (rec_) return rec_->model().backend_name();
  return "none";
}

Status Pipeline::detect(Work& w) const {
  if (!det_) return internal_error("pipeline built without a detection model");
  Stopwatch sw;
  DetInput in = det_preprocess(*w.image, w.opts.det_limit_side, w.opts.det_bucket,
                               options_.det_bytes ? DetTensor::kBytes : DetTensor::kNormalized);
  w.result.profile.det.prep = sw.elapsed_ms();
  runtime::CallInfo call;
  ASSIGN_OR_RETURN(w.prob, det_->run_call(in.tensor, &call));
  w.result.profile.det.add_call(call.profile);
  w.result.calls.det_images = static_cast<int>(call.rows);
  w.map_h = in.resized_h;
  w.map_w = in.resized_w;
  if (w.prob.dtype() != DType::kF32 || w.prob.numel() != int64_t{in.input_h} * in.input_w ||
      w.prob.dim(-1) != in.input_w) {
    return internal_error("detection model returned " + w.prob.describe() + " for input " + in.tensor.describe() +
                          "; expected a f32[1, 1, H, W] probability map");
  }
  w.result.timings.det = sw.elapsed_ms();
  return Status::ok();
}

void Pipeline::post_process(Work& w) const {
  Stopwatch sw;
  const cv::Mat& img = *w.image;
  const int stride = static_cast<int>(w.prob.dim(-1));
  const float* map = w.prob.data<float>();
  std::vector<float> inner;
  if (stride != w.map_w) {  // padded input: the part of the map that covers the picture, contiguous
    inner.resize(static_cast<size_t>(w.map_h) * w.map_w);
    for (int y = 0; y < w.map_h; ++y)
      std::copy_n(map + static_cast<size_t>(y) * stride, w.map_w, &inner[y * size_t(w.map_w)]);
    map = inner.data();
  }
  w.boxes = db_postprocess(map, w.map_h, w.map_w, img.rows, img.cols, w.opts.db);
  w.prob = Tensor();
  if (w.opts.mode == OcrMode::kFull) {
    w.crops.resize(w.boxes.size());
    // The dearest crops first, taken one at a time by the threads (a page's few warps cost 30 times its copies: in
    // equal chunks of box order, one thread got several). Runs inline when pictures are already processed in parallel
    // (nested regions are serial).
    std::vector<std::pair<double, size_t>> by_cost(w.boxes.size());
    for (size_t i = 0; i < w.boxes.size(); ++i) by_cost[i] = {-crop_cost(img, w.boxes[i].quad), i};
    std::sort(by_cost.begin(), by_cost.end());
    parallel_for_each(static_cast<int64_t>(by_cost.size()), [&](int64_t j) {
      const size_t i = by_cost[static_cast<size_t>(j)].second;
      w.crops[i] = crop_text_region(img, w.boxes[i].quad);
    });
  }
  w.result.timings.post = sw.elapsed_ms();
}

Status Pipeline::read_lines(Work& w) const {
  const cv::Mat& img = *w.image;
  if (w.opts.mode == OcrMode::kDetOnly) {
    for (const auto& b : w.boxes) w.result.lines.push_back({"", b.score, b.quad});
    return Status::ok();
  }
  if (!rec_) return internal_error("pipeline built without a recognition model");
  if (w.opts.mode == OcrMode::kRecOnly) {
    w.crops = {img};
    const float r = static_cast<float>(img.cols), b = static_cast<float>(img.rows);
    w.boxes = {DetBox{{cv::Point2f(0, 0), cv::Point2f(r, 0), cv::Point2f(r, b), cv::Point2f(0, b)}, 1.f}};
  }
  if (w.opts.use_cls && cls_ && !w.crops.empty()) {
    Stopwatch sw;
    ASSIGN_OR_RETURN(int turned, cls_->apply(w.crops, &w.result.profile.cls));
    if (turned > 0) log::debug("pipeline", "angle classifier turned {} of {} crops", turned, w.crops.size());
    w.result.timings.cls = sw.elapsed_ms();
  }
  Stopwatch sw;
  std::vector<runtime::CallInfo> calls;
  ASSIGN_OR_RETURN(std::vector<RecText> texts,
                   rec_->recognize(w.crops, &calls, w.opts.rec.interp, &w.result.profile.rec));
  for (const runtime::CallInfo& c : calls) {
    ++w.result.calls.rec_calls;
    w.result.calls.rec_rows += c.rows;
    if (c.callers > 1) ++w.result.calls.rec_shared;
  }
  w.result.timings.rec = sw.elapsed_ms();
  for (size_t i = 0; i < texts.size(); ++i) {
    if (w.opts.mode == OcrMode::kFull && texts[i].score < w.opts.drop_score) continue;
    w.result.lines.push_back({std::move(texts[i].text), texts[i].score, w.boxes[i].quad});
  }
  w.crops.clear();
  return Status::ok();
}

std::vector<Result<OcrResult>> Pipeline::run_many(const std::vector<cv::Mat>& images,
                                                  const std::vector<ImageOptions>* options) const {
  std::vector<Work> work(images.size());
  const std::string backend = backend_name();
  for (size_t i = 0; i < images.size(); ++i) {
    work[i].image = &images[i];
    work[i].opts = options_;
    if (options && i < options->size() && !(*options)[i].empty()) {
      work[i].opts = with_image_options(options_, (*options)[i]);
      work[i].status = can_run(work[i].opts);
    }
    work[i].result.width = images[i].cols;
    work[i].result.height = images[i].rows;
    work[i].result.backend = backend;
    if (work[i].status.is_ok() && (images[i].empty() || images[i].type() != CV_8UC3)) {
      work[i].status = invalid_argument("the pipeline takes 8-bit BGR pictures (got an empty or other-type image)");
    }
  }
  auto whole_picture = [&](Work& w) {  // every stage of one picture, on the calling thread
    if (w.status.is_ok() && w.opts.mode != OcrMode::kRecOnly) {
      w.status = detect(w);
      if (w.status.is_ok()) post_process(w);
    }
    if (w.status.is_ok()) w.status = read_lines(w);
  };
  if (options_.execution == ExecutionProfile::kDevice) {
    // Each thread takes whole pictures: one picture's host stages overlap others' model runs, which go to separate
    // prepared instances (streams) of the device.
    parallel_for_each(static_cast<int64_t>(work.size()), [&](int64_t i) { whole_picture(work[i]); });
  } else if (const int groups = std::min<int>(options_.host_groups, static_cast<int>(work.size())); groups > 1) {
    // Many cores: the pictures side by side in groups, each group's regions on its share of the threads and its own
    // plan instances (models load with max_replicas = host_groups).
    std::atomic<size_t> next{0};
    auto group = [&] {
      ThreadShareScope share(groups);
      for (size_t i; (i = next++) < work.size();) whole_picture(work[i]);
    };
    // All groups on threads of their own: a run sets its thread's OpenMP team size, which the caller keeps.
    std::vector<std::thread> threads;
    for (int g = 0; g < groups; ++g) threads.emplace_back(group);
    for (auto& t : threads) t.join();
  } else {
    auto detects = [](const Work& w) { return w.status.is_ok() && w.opts.mode != OcrMode::kRecOnly; };
    for (auto& w : work) {
      if (detects(w)) w.status = detect(w);
    }
    parallel_for_each(static_cast<int64_t>(work.size()), [&](int64_t i) {
      if (detects(work[i])) post_process(work[i]);
    });
    for (auto& w : work) {
      if (w.status.is_ok()) w.status = read_lines(w);
    }
  }
  std::vector<Result<OcrResult>> out;
  out.reserve(work.size());
  for (auto& w : work) {
    if (!w.status.is_ok()) {
      out.emplace_back(w.status);
      continue;
    }
    StageTimes& t = w.result.timings;
    t.total = t.decode + t.det + t.post + t.cls + t.rec;
    out.emplace_back(std::move(w.result));
  }
  return out;
}

Result<OcrResult> Pipeline::run(const cv::Mat& bgr) const {
  std::vector<cv::Mat> one{bgr};
  return std::move(run_many(one)[0]);
}

}  // namespace steadyocr::pipeline

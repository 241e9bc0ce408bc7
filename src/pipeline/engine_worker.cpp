// The engine's per-rung pipeline (fault injection, OOM recovery, numerical self-test) and the worker process
// that serves a GPU rung under the supervisor.
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <random>

#include "backends/reference/reference_backend.h"
#include "core/compare.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "pipeline/det_preprocess.h"
#include "pipeline/engine.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda_plugin.h"
#include "runtime/fault_injection.h"

namespace steadyocr::pipeline {
namespace {

using json = nlohmann::json;

Tensor self_test_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// The detector's self-test input: two lines of dark text on white, preprocessed like a page. On noise the detector's
// map is ~0 everywhere (sigmoid saturated), where a relative error measures nothing; text gives it a real map.
Tensor det_self_test_input() {
  cv::Mat page(96, 320, CV_8UC3, cv::Scalar(245, 245, 245));
  cv::putText(page, "steadyocr 2026", {10, 38}, cv::FONT_HERSHEY_SIMPLEX, 1.0, cv::Scalar(20, 20, 20), 2, cv::LINE_AA);
  cv::putText(page, "self-test 0123", {10, 80}, cv::FONT_HERSHEY_DUPLEX, 0.9, cv::Scalar(40, 30, 30), 2, cv::LINE_AA);
  return det_preprocess(page, 320).tensor;
}

// Runs `model` on a fixed input and compares with the same model on the reference backend.
Status self_test_model(const std::string& stage, runtime::Model& model, const Shape& shape, double tolerance,
                       std::string* summary) {
  Tensor x = stage == "det" ? det_self_test_input() : self_test_input(shape, 20261130);
  ASSIGN_OR_RETURN(Tensor got, model.run(x));
  auto ref_model = runtime::Model::load(model.path(), std::shared_ptr<Backend>(make_reference_backend()));
  if (!ref_model.is_ok()) return ref_model.status();
  ASSIGN_OR_RETURN(Tensor want, (*ref_model)->run(x));
  double e = compare_tensors(got, want).nmse;
  *summary += fmt::format("{} {} nmse={:.2e} (tolerance {:.0e}", stage, shape_str(x.shape()), e, tolerance);
  if (stage == "det") {
    int64_t text = 0;
    for (int64_t i = 0; i < want.numel(); ++i) text += want.data<float>()[i] > 0.3f;
    *summary += fmt::format(", {} text pixels", text);
  }
  *summary += "); ";
  if (!(e <= tolerance)) {
    return Status(StatusCode::kDeviceError,
                  fmt::format("self-test: {} model output on {} differs from the reference (nmse {:.3e} > {:.0e})",
                              stage, model.backend_name(), e, tolerance));
  }
  return Status::ok();
}

}  // namespace

bool is_rung_failure(const Status& s) {
  switch (s.code()) {
    case StatusCode::kDeviceFault:
    case StatusCode::kDeviceError:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kOutOfMemory:
      return true;
    default:
      return false;
  }
}

Result<std::unique_ptr<Pipeline>> build_rung_pipeline(const std::string& backend_name, const EngineOptions& options,
                                                      bool self_test, std::string* self_test_summary,
                                                      bool inject_faults) {
  std::shared_ptr<runtime::FaultInjector> injector =
      std::make_shared<runtime::FaultInjector>(std::vector<runtime::FaultRule>{});
  if (inject_faults) {
    ASSIGN_OR_RETURN(injector, runtime::FaultInjector::from_env());
  }
  std::shared_ptr<Backend> backend;
  bool cuda = backend_name.rfind("cuda", 0) == 0;
  if (cuda) {
    auto config = runtime::cuda_backend_config(backend_name == "cuda-fp32" ? "fp32" : "fp16",
                                               options.gpu_mem_mb * (size_t{1} << 20));
    config.lanes = options.worker_concurrency + 2;  // one execution lane per image in flight, made before serving
    ASSIGN_OR_RETURN(backend, runtime::create_cuda_backend(config));
    // Faults on a real device are real: the plugin launches the faulting kernel / fails the allocation.
    injector->set_device_hook([](const std::string& kind) {
      std::string k = kind == "sticky" || kind == "launch_failure" ? "illegal_address" : kind;
      if (k != "oom" && k != "illegal_address" && k != "hang" && k != "no_kernel_image" && k != "cudnn_not_supported") {
        return false;
      }
      // A hang must outlast the supervisor's watchdog (the plugin's own release is a safety net).
      Status s = runtime::set_cuda_fault(k == "hang" ? "hang@any:1,timeout_ms=600000" : k + "@any:1");
      if (!s.is_ok()) log::warn("fault", "could not arm {} in the CUDA plugin: {}", k, s.message());
      return s.is_ok();
    });
  } else {
    ASSIGN_OR_RETURN(backend, runtime::create_backend(backend_name));
  }
  std::map<std::string, std::shared_ptr<runtime::Model>> models;
  auto wrap = [&](const std::string& stage, std::shared_ptr<runtime::Model> m) -> std::shared_ptr<runtime::Runner> {
    models[stage] = m;
    std::shared_ptr<runtime::Runner> r = m;
    if (!injector->empty()) r = std::make_shared<runtime::FaultInjectingRunner>(stage, r, injector);
    return std::make_shared<runtime::OomResilientRunner>(stage, r, [m] { m->clear_plans(); });
  };
  ASSIGN_OR_RETURN(std::unique_ptr<Pipeline> p, Pipeline::load(options.models, backend, options.pipeline, wrap));
  if (self_test && backend_name != "reference") {
    // Reduced precision is judged by a looser bound; fp32 backends must match the oracle closely.
    double tol = backend_name == "cuda-fp16" ? 2e-3 : 1e-5;
    std::string summary;
    if (models.count("det")) RETURN_IF_ERROR(self_test_model("det", *models["det"], {1, 3, 64, 96}, tol, &summary));
    if (models.count("rec")) RETURN_IF_ERROR(self_test_model("rec", *models["rec"], {2, 3, 48, 96}, tol, &summary));
    if (models.count("cls")) RETURN_IF_ERROR(self_test_model("cls", *models["cls"], {1, 3, 48, 192}, tol, &summary));
    if (self_test_summary) *self_test_summary = summary;
    log::info("engine", "{} self-test passed: {}", backend_name, summary);
  }
  return p;
}

Result<OcrResult> process_image(const Pipeline& pipeline, const uint8_t* data, size_t size,
                                const DecodeLimits& limits) {
  Stopwatch sw;
  ASSIGN_OR_RETURN(DecodedImage img, decode_image(data, size, limits));
  double decode_ms = sw.elapsed_ms();
  ASSIGN_OR_RETURN(OcrResult r, pipeline.run(img.bgr));
  r.timings.decode = decode_ms;
  r.timings.total += decode_ms;
  return r;
}

// ---- wire formats ---------------------------------------------------------------------------------------

std::string ocr_result_to_json(const OcrResult& r) {
  json lines = json::array();
  for (auto& l : r.lines) {
    json box = json::array();
    for (auto& p : l.box) box.push_back({p.x, p.y});
    lines.push_back({{"text", l.text}, {"score", l.score}, {"box", box}});
  }
  const StageTimes& t = r.timings;
  return json{
      {"lines", lines},
      {"backend", r.backend},
      {"width", r.width},
      {"height", r.height},
      {"timings_ms",
       {{"decode", t.decode}, {"det", t.det}, {"post", t.post}, {"cls", t.cls}, {"rec", t.rec}, {"total", t.total}}}}
      .dump();
}

Result<OcrResult> ocr_result_from_json(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return data_loss("worker sent a malformed result");
  OcrResult r;
  try {
    for (auto& l : j.at("lines")) {
      TextLine t;
      t.text = l.at("text").get<std::string>();
      t.score = l.at("score").get<float>();
      auto& b = l.at("box");
      for (size_t i = 0; i < 4 && i < b.size(); ++i) t.box[i] = cv::Point2f(b[i][0].get<float>(), b[i][1].get<float>());
      r.lines.push_back(std::move(t));
    }
    r.backend = j.value("backend", "");
    r.width = j.value("width", 0);
    r.height = j.value("height", 0);
    auto& t = j.at("timings_ms");
    r.timings = {t.value("decode", 0.0), t.value("det", 0.0), t.value("post", 0.0),
                 t.value("cls", 0.0),    t.value("rec", 0.0), t.value("total", 0.0)};
  } catch (const json::exception& e) {
    return data_loss(std::string("worker result is missing fields: ") + e.what());
  }
  return r;
}

std::string engine_options_to_json(const EngineOptions& o, const std::string& rung, bool inject_faults) {
  const PipelineOptions& p = o.pipeline;
  return json{
      {"rung", rung},
      {"inject_faults", inject_faults},
      {"models", {{"det", o.models.det}, {"rec", o.models.rec}, {"cls", o.models.cls}, {"dict", o.models.dict}}},
      {"mode", static_cast<int>(p.mode)},
      {"use_cls", p.use_cls},
      {"det_limit_side", p.det_limit_side},
      {"db", {{"thresh", p.db.thresh}, {"box_thresh", p.db.box_thresh}, {"unclip_ratio", p.db.unclip_ratio}}},
      {"rec", {{"batch", p.rec.batch}, {"min_width", p.rec.min_width}, {"width_bucket", p.rec.width_bucket}}},
      {"det_bucket", p.det_bucket},
      {"worker_jobs", worker_jobs(o, rung)},
      {"drop_score", p.drop_score},
      {"limits", {{"max_side", o.limits.max_side}, {"max_pixels", o.limits.max_pixels}}},
      {"gpu_mem_mb", o.gpu_mem_mb},
      {"threads", o.threads},
      {"self_test", o.self_test}}
      .dump();
}

Result<EngineOptions> engine_options_from_json(const std::string& text, std::string* rung, bool* inject_faults) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return invalid_argument("worker configuration is not JSON");
  EngineOptions o;
  try {
    *rung = j.at("rung").get<std::string>();
    *inject_faults = j.value("inject_faults", false);
    *inject_faults = j.value("inject_faults", false);
    auto& m = j.at("models");
    o.models = {m.at("det"), m.at("rec"), m.at("cls"), m.at("dict")};
    PipelineOptions& p = o.pipeline;
    p.mode = static_cast<OcrMode>(j.at("mode").get<int>());
    p.use_cls = j.at("use_cls");
    p.det_limit_side = j.at("det_limit_side");
    p.db.thresh = j.at("db").at("thresh");
    p.db.box_thresh = j.at("db").at("box_thresh");
    p.db.unclip_ratio = j.at("db").at("unclip_ratio");
    p.rec.batch = j.at("rec").at("batch");
    p.rec.min_width = j.at("rec").at("min_width");
    p.rec.width_bucket = j.at("rec").value("width_bucket", 0);
    p.det_bucket = j.value("det_bucket", 0);
    o.worker_concurrency = j.value("worker_jobs", 2);
    p.drop_score = j.at("drop_score");
    o.limits.max_side = j.at("limits").at("max_side");
    o.limits.max_pixels = j.at("limits").at("max_pixels");
    o.gpu_mem_mb = j.at("gpu_mem_mb");
    o.threads = j.at("threads");
    o.self_test = j.at("self_test");
  } catch (const json::exception& e) {
    return invalid_argument(std::string("worker configuration: ") + e.what());
  }
  return o;
}

int worker_main(const std::string& config_json) {
  std::string rung;
  bool inject = false;
  auto options = engine_options_from_json(config_json, &rung, &inject);
  if (!options.is_ok()) return runtime::refuse_worker(options.status());
  set_num_threads(options->threads);
  if (const char* level = std::getenv("STEADYOCR_LOG_LEVEL")) {
    log::Level lvl;
    if (log::parse_level(level, &lvl)) log::set_level(lvl);
  }
  Stopwatch sw;
  std::string summary;
  auto pipeline = build_rung_pipeline(backend_of_rung(rung), *options, options->self_test, &summary, inject);
  if (!pipeline.is_ok()) return runtime::refuse_worker(pipeline.status());
  json ready = {{"ready", true},
                {"rung", rung},
                {"backend", (*pipeline)->backend_name()},
                {"pid", static_cast<int>(::getpid())},
                {"self_test", summary},
                {"startup_ms", sw.elapsed_ms()}};
  const Pipeline& p = **pipeline;
  const DecodeLimits limits = options->limits;
  const int jobs = std::max(1, options->worker_concurrency);
  auto handler = [&p, &limits, jobs](const runtime::Message& m) -> Result<runtime::Message> {
    // With many jobs at once, each reads its image on its own thread (no nested thread teams).
    std::optional<SerialScope> serial;
    if (jobs > 2) serial.emplace();
    ASSIGN_OR_RETURN(OcrResult r,
                     process_image(p, reinterpret_cast<const uint8_t*>(m.payload.data()), m.payload.size(), limits));
    return runtime::Message{"{}", ocr_result_to_json(r)};
  };
  int rc = runtime::serve_worker(ready.dump(), handler, jobs);
  // Planning and device stage totals of this worker's life, for benchmarks (STEADYOCR_LOG_LEVEL=debug).
  std::string text = metrics::prometheus_text(), totals;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    if (line.rfind("steadyocr_cuda_", 0) == 0 || line.rfind("steadyocr_model_", 0) == 0) totals += "\n  " + line;
  }
  if (!totals.empty()) log::debug("worker", "{} totals:{}", rung, totals);
  return rc;
}

}  // namespace steadyocr::pipeline

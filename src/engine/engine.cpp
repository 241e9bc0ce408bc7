#include "engine/engine.h"

#include <chrono>

#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "runtime/vulkan_plugin.h"

namespace steadyocr::engine {

OcrEngine::OcrEngine(const EngineOptions& options, std::vector<std::string> rungs)
    : options_(options), ladder_(std::move(rungs)) {}

OcrEngine::~OcrEngine() {
  stop_ = true;
  if (reprobe_thread_.joinable()) reprobe_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, r] : rungs_) r->stop();
}

Rung* OcrEngine::rung(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = rungs_.find(name);
  return it == rungs_.end() ? nullptr : it->second.get();
}

Status OcrEngine::qualify(const std::string& name) {
  Rung* r = rung(name);
  if (!r) {
    std::unique_ptr<Rung> made = make_rung(name, options_, name == ladder_.rungs().front());
    std::lock_guard<std::mutex> lock(mu_);
    r = made.get();
    rungs_[name] = std::move(made);
  }
  return r->start();
}

namespace {
// Whether a cuDNN-free rung may serve where these rungs failed: yes unless every failure is of the driver, the device,
// the plugin or the runtime (layers 1-2 of the doctor other than cuDNN's own findings).
bool cudnn_could_explain(const std::vector<std::pair<std::string, Finding>>& ruled_out) {
  for (const auto& [rung, f] : ruled_out) {
    const bool gpu_out =
        (f.code.rfind("L1_", 0) == 0 || f.code.rfind("L2_", 0) == 0 || f.code.rfind("PLUGIN_", 0) == 0) &&
        f.code.rfind("L2_CUDNN", 0) != 0;
    if (!gpu_out) return true;
  }
  return false;
}
}  // namespace

Result<std::unique_ptr<OcrEngine>> OcrEngine::create(const EngineOptions& options) {
  std::vector<std::string> rungs = options.ladder;
  if (rungs.empty()) {
    if (options.backend == "auto" || options.backend.empty()) {
      for (auto& r : default_ladder()) {
        if (!options.require_gpu || is_device_rung(r)) rungs.push_back(r);
      }
    } else {
      if (options.require_gpu && !is_device_rung(options.backend)) {
        return invalid_argument("--require-gpu with --backend " + options.backend +
                                ": pin a cuda-* or the vulkan backend, or drop --require-gpu");
      }
      rungs.push_back(options.backend);
    }
  }
  for (auto& r : rungs) {
    if (std::find(known_rungs().begin(), known_rungs().end(), r) == known_rungs().end()) {
      return invalid_argument("unknown rung '" + r + "'");
    }
  }
  if (options.threads > 0) set_num_threads(options.threads);
  std::unique_ptr<OcrEngine> e(new OcrEngine(options, rungs));
  e->ladder_.set_backoff(std::chrono::milliseconds(options.reprobe_backoff_ms),
                         std::chrono::milliseconds(std::max(options.reprobe_backoff_ms, 300000)));
  std::vector<std::pair<std::string, Finding>> ruled_out;
  std::string serving;
  for (auto& r : rungs) {
    if (options.ladder.empty() && r.size() > 8 && r.compare(r.size() - 8, 8, "-nocudnn") == 0 && !ruled_out.empty() &&
        !cudnn_could_explain(ruled_out)) {
      // The GPU itself is out (no driver, no device, no plugin...): the cuDNN-free rung would fail the same way.
      log::info("engine", "{} not tried at start: the CUDA rungs above failed for a cause cuDNN does not explain ({})",
                r, ruled_out.back().second.code);
      continue;
    }
    if (options.ladder.empty() && rungs.size() > 1 && r == "vulkan") {
      std::string why;
      if (runtime::vulkan_ladder_device(&why) < 0) {
        // No Vulkan GPU here (no plugin, no loader or driver, or only lavapipe): nothing for the rung to serve on.
        log::info("engine", "vulkan not tried at start: {}", why);
        continue;
      }
    }
    Status s = e->qualify(r);
    if (s.is_ok()) {
      serving = r;
      break;
    }
    Finding f = s.finding() ? *s.finding() : Finding{"UNAVAILABLE", s.message(), ""};
    if (f.detail.empty()) f.detail = s.message();
    log::info("engine", "{} cannot serve: {} ({})", r, f.code, s.message());
    ruled_out.emplace_back(r, f);
  }
  if (serving.empty() && ruled_out.empty()) {
    return unavailable("no backend can serve: every rung was skipped at start (see the INFO lines above)");
  }
  if (serving.empty()) {
    std::string why;
    for (auto& [r, f] : ruled_out)
      why += "\n  " + r + ": " + f.code + " — " + f.detail + (f.fix.empty() ? "" : " (fix: " + f.fix + ")");
    // The finding of the last rung ruled out (the bottom of the ladder: what stopped the last way out) travels with
    // the status, for callers that sort errors by finding (the bindings: LOAD_FAILED is a model error).
    return unavailable(
               std::string(options.require_gpu ? "--require-gpu: no GPU backend can serve" : "no backend can serve") +
               ":" + why)
        .with_finding(ruled_out.back().second);
  }
  e->ladder_.mark_healthy(serving);
  for (auto& [r, f] : ruled_out) e->ladder_.mark_failed(r, f);
  if (options.reprobe && serving != rungs.front())
    e->reprobe_thread_ = std::thread([p = e.get()] { p->reprobe_loop(); });
  return e;
}

void OcrEngine::step_down(const std::string& name, const Finding& why) {
  std::lock_guard<std::mutex> qualify_lock(step_mu_);
  if (ladder_.state(name) == RungState::kFailed) return;  // another image already moved us
  // Qualify the next rung first so that the event names where the work goes.
  bool below = false;
  for (auto& r : ladder_.rungs()) {
    if (r == name) {
      below = true;
      continue;
    }
    if (!below) continue;
    if (ladder_.state(r) == RungState::kHealthy) break;
    if (ladder_.state(r) == RungState::kFailed) continue;
    Status s = qualify(r);
    if (s.is_ok()) {
      ladder_.mark_healthy(r);
      break;
    }
    ladder_.mark_failed(r, s.finding() ? *s.finding() : Finding{"UNAVAILABLE", s.message(), ""});
  }
  ladder_.mark_failed(name, why);
  if (options_.reprobe && !reprobe_thread_.joinable() && name != ladder_.rungs().back()) {
    reprobe_thread_ = std::thread([this] { reprobe_loop(); });
  }
}

namespace {

// Per image, wherever its models ran (in process or in a worker): how many images shared its detector call and how
// many rows its recognition calls carried on average (batching across callers, runtime/batching.h).
void observe_calls(const pipeline::CallStats& c) {
  static const std::vector<double> kBuckets = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
  if (c.det_images > 0) {
    metrics::observe("steadyocr_image_det_batch_images", {}, c.det_images, kBuckets);
  }
  if (c.rec_calls > 0) {
    metrics::observe("steadyocr_image_rec_batch_rows", {}, static_cast<double>(c.rec_rows) / c.rec_calls, kBuckets);
    metrics::inc("steadyocr_rec_calls_total", {{"shared", "yes"}}, c.rec_shared);
    metrics::inc("steadyocr_rec_calls_total", {{"shared", "no"}}, c.rec_calls - c.rec_shared);
  }
}

}  // namespace

std::vector<EngineOutcome> OcrEngine::ocr_batch(const std::vector<ImageJob>& jobs) {
  uint64_t seq = ladder_.last_seq();
  std::vector<EngineOutcome> out(jobs.size());
  std::vector<size_t> todo(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) todo[i] = i;
  std::vector<int> attempts(jobs.size(), 0), attempts_here(jobs.size(), 0);
  std::vector<std::string> last_rung(jobs.size());
  const int max_attempts = static_cast<int>(ladder_.rungs().size()) * std::max(1, options_.retry.attempts_per_rung);
  while (!todo.empty()) {
    const std::string name = ladder_.current();
    Rung* r = name.empty() ? nullptr : rung(name);
    if (!r) {
      for (size_t i : todo) {
        out[i].status = unavailable("no backend left to serve: every rung of the ladder failed (see the events)");
      }
      break;
    }
    std::vector<const ImageJob*> batch;
    for (size_t i : todo) batch.push_back(&jobs[i]);
    std::vector<EngineOutcome> res = r->run(batch);
    std::vector<size_t> again;
    std::optional<Finding> failure;
    bool failure_is_loss = false;
    for (size_t k = 0; k < todo.size(); ++k) {
      const size_t i = todo[k];
      if (last_rung[i] != name) attempts_here[i] = 0;
      last_rung[i] = name;
      ++attempts[i];
      NextStep step = next_step(options_.retry, res[k].status, ++attempts_here[i]);
      if (step == NextStep::kDone || attempts[i] >= max_attempts) {
        out[i] = std::move(res[k]);
        continue;
      }
      again.push_back(i);
      if (step == NextStep::kRetryHere) {
        log::warn("engine", "{}: {} on {}; retrying it there (attempt {})", jobs[i].name, res[k].status.to_string(),
                  name, attempts_here[i] + 1);
        metrics::inc("steadyocr_jobs_retried_total", {{"rung", name}});
      } else if (!failure || res[k].status.code() == StatusCode::kDeviceFault) {
        // Errors seen around a context loss belong to it: the step down is recorded with the loss itself.
        if (!failure || !failure_is_loss) failure = failure_finding(res[k].status, is_gpu_rung(name));
        failure_is_loss |= res[k].status.code() == StatusCode::kDeviceFault;
      }
    }
    if (failure) step_down(name, *failure);
    todo = std::move(again);
  }
  auto events = ladder_.events_since(seq);
  // A result served below the top rung also carries the standing step-downs that put the ladder there before this
  // batch (at startup, say): a result read on the CPU always says why it was not read on the GPU.
  std::vector<LadderEvent> standing;
  {
    auto all = ladder_.events();
    size_t from = 0;
    for (size_t k = 0; k < all.size(); ++k) {
      if (all[k].climb) from = k + 1;
    }
    for (size_t k = from; k < all.size(); ++k) {
      if (!all[k].climb && all[k].seq <= seq) standing.push_back(all[k]);
    }
  }
  const std::string top = ladder_.rungs().empty() ? std::string() : ladder_.rungs().front();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].attempts = attempts[i];
    out[i].events = events;
    if (!standing.empty() && !out[i].rung.empty() && out[i].rung != top) {
      out[i].events.insert(out[i].events.begin(), standing.begin(), standing.end());
    }
    metrics::inc("steadyocr_images_total", {{"rung", out[i].rung}, {"status", out[i].status.is_ok() ? "ok" : "error"}});
    if (out[i].status.is_ok()) observe_calls(out[i].result.calls);
  }
  return out;
}

EngineOutcome OcrEngine::ocr(const ImageJob& job) {
  return std::move(ocr_batch({job})[0]);
}

std::map<std::string, SupervisorStats> OcrEngine::worker_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, SupervisorStats> s;
  for (auto& [name, r] : rungs_) {
    if (auto st = r->worker_stats()) s[name] = *st;
  }
  return s;
}

void OcrEngine::reprobe_loop() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (const std::string& name : ladder_.due_for_reprobe(std::chrono::steady_clock::now())) {
      if (stop_) return;
      Status s;
      {
        std::lock_guard<std::mutex> step(step_mu_);
        Rung* r = rung(name);
        s = r ? r->reprobe() : qualify(name);
      }
      if (s.is_ok()) {
        ladder_.mark_healthy(name);
      } else {
        ladder_.reprobe_failed(name, s.message());
      }
    }
  }
}

}  // namespace steadyocr::engine

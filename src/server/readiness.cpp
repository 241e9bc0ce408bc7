#include "server/readiness.h"

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/log.h"
#include "core/metrics.h"
#include "core/thread_name.h"
#include "core/timer.h"
#include "engine/result_format.h"

namespace steadyocr::server {

using Steady = std::chrono::steady_clock;

std::vector<uint8_t> probe_image() {
  cv::Mat page(48, 200, CV_8UC3, cv::Scalar(250, 250, 250));
  cv::putText(page, "ready 42", {8, 34}, cv::FONT_HERSHEY_SIMPLEX, 1.0, cv::Scalar(20, 20, 20), 2, cv::LINE_AA);
  std::vector<uint8_t> png;
  cv::imencode(".png", page, png);
  return png;
}

Readiness::Readiness(ReadinessOptions options) : options_(options) {}

Readiness::~Readiness() {
  stop();
}

void Readiness::start(std::shared_ptr<engine::OcrEngine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  engine_ = std::move(engine);
  if (!thread_.joinable())
    thread_ = std::thread([this] {
      name_this_thread("so-ready");
      probe_loop();
    });
}

void Readiness::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  engine_.reset();
}

void Readiness::note_success() {
  std::lock_guard<std::mutex> lock(mu_);
  last_success_ = Steady::now();
}

double Readiness::ms_since(Steady::time_point t) const {
  if (t == Steady::time_point{}) return -1;
  return std::chrono::duration<double, std::milli>(Steady::now() - t).count();
}

void Readiness::probe_loop() {
  engine::ImageJob job;
  job.name = "readiness-probe";
  job.bytes = probe_image();
  std::unique_lock<std::mutex> lock(mu_);
  for (bool first = true; !stop_; first = false) {
    if (!first) cv_.wait_for(lock, std::chrono::milliseconds(std::max(50, options_.probe_interval_ms / 4)));
    if (stop_) return;
    if (draining_) continue;
    std::shared_ptr<engine::OcrEngine> e = engine_;
    if (!e) continue;
    if (e->gpu_count() > 1) {
      // Several GPUs: each in service is probed when its own traffic is idle, so that a dead device is seen on its
      // own (an out-of-service one is the engine's to re-probe).
      lock.unlock();
      const std::vector<engine::GpuState> gpus = e->gpus();
      for (size_t k = 0; k < gpus.size(); ++k) {
        const auto& g = gpus[k];
        if (!g.in_service) continue;
        if (!first && g.last_ok_age_ms >= 0 && g.last_ok_age_ms < options_.probe_interval_ms) continue;
        Stopwatch sw;
        engine::EngineOutcome o = e->ocr_on_gpu(k, job);
        record_probe(o, sw.elapsed_ms(), lock);
        lock.unlock();
      }
      lock.lock();
      continue;
    }
    const double idle = ms_since(last_success_);
    if (!first && idle >= 0 && idle < options_.probe_interval_ms) continue;  // traffic proves the rung works
    lock.unlock();
    Stopwatch sw;
    engine::EngineOutcome o = e->ocr(job);
    record_probe(o, sw.elapsed_ms(), lock);
  }
}

void Readiness::record_probe(const engine::EngineOutcome& o, double ms, std::unique_lock<std::mutex>& lock) {
  metrics::inc("steadyocr_readiness_probes_total", {{"rung", o.rung}, {"status", o.status.is_ok() ? "ok" : "error"}});
  lock.lock();
  ++probes_;
  last_probe_ = Steady::now();
  last_probe_ok_ = o.status.is_ok();
  last_probe_ms_ = ms;
  last_probe_error_ = o.status.is_ok() ? "" : o.status.to_string();
  if (!o.gpu.empty()) gpu_probes_[o.gpu] = {o.status.is_ok(), ms, last_probe_error_};
  if (o.status.is_ok()) {
    last_success_ = last_probe_;
  } else {
    log::warn("server", "readiness probe failed on {}{}: {}", o.gpu.empty() ? "" : "GPU " + o.gpu + " ",
              o.rung.empty() ? "(no rung)" : o.rung, last_probe_error_);
  }
}

Readiness::Report Readiness::report() const {
  Report r;
  nlohmann::ordered_json& b = r.body;
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<engine::OcrEngine> e = engine_;
  const double age = ms_since(last_success_);
  if (draining_) {
    r.reason = "DRAINING";
  } else if (!e) {
    r.reason = "STARTING";
  } else if (e->current_rung().empty()) {
    r.reason = "NO_RUNG";
  } else if (options_.require_top_rung && e->current_rung() != e->ladder().rungs().front()) {
    r.reason = "STEPPED_DOWN";
  } else if (age < 0 && probes_ == 0) {
    r.reason = "STARTING";  // the engine is up; its first inference (the start-up probe) is running
  } else if (age < 0 || age > options_.max_age_ms) {
    r.reason = probes_ > 0 && !last_probe_ok_ ? "PROBE_FAILED" : "STALE";
  } else {
    r.reason = "READY";
    r.ready = true;
  }
  b["ready"] = r.ready;
  b["reason"] = r.reason;
  if (e) {
    b["rung"] = e->current_rung();
    b["backend"] = engine::backend_of_rung(e->current_rung());
    b["requested_rung"] = e->ladder().rungs().front();
    nlohmann::ordered_json fallbacks = nlohmann::ordered_json::array();
    for (const auto& ev : engine::standing_events(e->events())) fallbacks.push_back(engine::event_to_json(ev));
    b["fallbacks"] = fallbacks;
    if (e->gpu_count() > 1) {
      // Each GPU: the rung it serves on (or out of service, and why: its standing events), its traffic and probe.
      nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
      for (const auto& g : e->gpus()) {
        nlohmann::ordered_json j = engine::gpu_state_to_json(g);
        if (auto it = gpu_probes_.find(g.gpu); it != gpu_probes_.end()) {
          j["probe"] = {{"ok", it->second.ok}, {"ms", std::round(it->second.ms * 100) / 100}};
          if (!it->second.ok) j["probe"]["error"] = it->second.error;
        }
        gpus.push_back(std::move(j));
      }
      b["gpus"] = gpus;
    }
  }
  b["last_inference_age_ms"] = age < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(std::lround(age));
  nlohmann::ordered_json probe = {{"count", probes_}};
  if (probes_ > 0) {
    probe["age_ms"] = std::lround(ms_since(last_probe_));
    probe["ok"] = last_probe_ok_;
    probe["ms"] = std::round(last_probe_ms_ * 100) / 100;
    if (!last_probe_ok_) probe["error"] = last_probe_error_;
  }
  b["last_probe"] = probe;
  b["max_age_ms"] = options_.max_age_ms;
  b["probe_interval_ms"] = options_.probe_interval_ms;
  return r;
}

}  // namespace steadyocr::server

// Readiness: the models are loaded AND the serving rung finished a real inference within the last few seconds. When
// traffic is idle a background probe reads a small rendered picture through the engine (the whole path: the worker
// process, the device), so a dead device is not "ready". Starting up, draining, no rung left, and (with
// --require-gpu) serving below the requested rung are not ready either.
#pragma once

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "engine/engine.h"

namespace steadyocr::server {

struct ReadinessOptions {
  int probe_interval_ms = 2000;   // idle this long: probe
  int max_age_ms = 10000;         // the last good inference may be this old
  bool require_top_rung = false;  // --require-gpu: serving below the ladder's top rung is not ready
};

class Readiness {
 public:
  explicit Readiness(ReadinessOptions options);
  ~Readiness();

  // The engine serves from now on; probes start (the first at once).
  void start(std::shared_ptr<engine::OcrEngine> engine);
  // Stops probing and lets go of the engine.
  void stop();
  void set_draining() { draining_ = true; }
  bool draining() const { return draining_; }
  // A real inference finished well (a request or a probe).
  void note_success();

  struct Report {
    bool ready = false;
    std::string reason;  // READY, STARTING, DRAINING, NO_RUNG, STEPPED_DOWN, STALE, PROBE_FAILED
    nlohmann::ordered_json body;
  };
  Report report() const;
  bool ready() const { return report().ready; }

 private:
  void probe_loop();
  double ms_since(std::chrono::steady_clock::time_point t) const;
  // Records a probe's outcome; called unlocked, returns with `lock` held.
  void record_probe(const engine::EngineOutcome& o, double ms, std::unique_lock<std::mutex>& lock);

  ReadinessOptions options_;
  std::shared_ptr<engine::OcrEngine> engine_;  // guarded by mu_
  std::atomic<bool> draining_{false};
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::chrono::steady_clock::time_point last_success_{};
  std::chrono::steady_clock::time_point last_probe_{};
  bool last_probe_ok_ = false;
  double last_probe_ms_ = 0;
  std::string last_probe_error_;
  uint64_t probes_ = 0;
  struct GpuProbe {
    bool ok = false;
    double ms = 0;
    std::string error;
  };
  std::map<std::string, GpuProbe> gpu_probes_;  // the last probe of each GPU, with several
  std::thread thread_;
};

// The probe's picture: a short line of dark text on white, PNG-encoded.
std::vector<uint8_t> probe_image();

}  // namespace steadyocr::server

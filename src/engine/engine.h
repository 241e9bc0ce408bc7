// The OCR engine: chooses where to run (the fallback ladder of rungs), runs GPU work in supervised worker processes,
// degrades only visibly (events built from findings in logs, counters and every result), survives device faults
// under one retry policy (engine/recovery.h), and climbs back when a degraded device heals. The CLI, the server and
// the bindings talk to this.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/ladder.h"
#include "engine/options.h"
#include "engine/rung.h"
#include "engine/supervisor.h"

namespace steadyocr::engine {

class OcrEngine {
 public:
  // Qualifies the rungs best first (doctor layers 1-2 for GPU rungs, then model load and numerical self-test)
  // until one can serve; rungs ruled out become events with their findings. Fails when none can (or, with
  // require_gpu, when no GPU rung can), naming each rung's finding.
  static Result<std::unique_ptr<OcrEngine>> create(const EngineOptions& options);
  ~OcrEngine();

  // Reads one encoded image. Thread-safe.
  EngineOutcome ocr(const ImageJob& job);
  // Reads several images, in parallel where the rung allows; outcomes follow the input order.
  std::vector<EngineOutcome> ocr_batch(const std::vector<ImageJob>& jobs);

  // The rung serving now ("" when none is left).
  std::string current_rung() const { return ladder_.current(); }
  std::vector<LadderEvent> events() const { return ladder_.events(); }
  const Ladder& ladder() const { return ladder_; }
  // Worker statistics per worker rung (restarts, retries, hangs).
  std::map<std::string, SupervisorStats> worker_stats() const;

 private:
  explicit OcrEngine(const EngineOptions& options, std::vector<std::string> rungs);
  // Makes `rung` ready to serve (creates and starts it). The failure carries the finding that rules it out.
  Status qualify(const std::string& rung);
  // Marks `rung` failed after qualifying the next usable rung below it, so the event names the real target.
  void step_down(const std::string& rung, const Finding& why);
  Rung* rung(const std::string& name) const;
  void reprobe_loop();

  EngineOptions options_;
  Ladder ladder_;
  mutable std::mutex mu_;  // guards rungs_
  std::mutex step_mu_;     // one ladder move (or re-probe) at a time
  std::map<std::string, std::unique_ptr<Rung>> rungs_;
  std::atomic<bool> stop_{false};
  std::thread reprobe_thread_;
};

}  // namespace steadyocr::engine

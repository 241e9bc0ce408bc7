// The fallback ladder: rungs best first (cuda-fp32 → cuda-fp16 → cuda-fp32-nocudnn → vulkan → cpu → reference). A rung
// is used only once qualified; every step down and every climb back is an event with a reason code, logged at WARN,
// counted in steadyocr_fallback_total{from,to,reason} and kept for results. Degraded rungs are re-probed with back-off.
#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace steadyocr::engine {

struct LadderEvent {
  std::string time;    // UTC, ISO 8601
  std::string from;    // rung left ("" when starting)
  std::string to;      // rung now serving ("" when none is left)
  std::string reason;  // stable code: a doctor finding (L1_NO_DRIVER, ...), SELF_TEST_MISMATCH, WORKER_FAULT, ...
  std::string detail;  // the values seen
  std::string fix;     // what the user can do
  bool climb = false;  // true when moving back up
  uint64_t seq = 0;    // increasing; lets a caller pick the events that happened during its job
  std::string gpu;     // with several GPUs, the engine's GPU whose ladder moved ("0", "1", ...); "" otherwise
  Finding finding() const { return {reason, detail, fix}; }
};

// The step-downs that still stand: every event after the last climb back (none when the last move was a climb).
std::vector<LadderEvent> standing_events(const std::vector<LadderEvent>& events);

enum class RungState { kUntested, kHealthy, kFailed };

class Ladder {
 public:
  explicit Ladder(std::vector<std::string> rungs);

  const std::vector<std::string>& rungs() const { return rungs_; }
  // The best healthy rung, or "" when none is.
  std::string current() const;
  RungState state(const std::string& rung) const;
  // The reason code a rung failed with ("" when it did not).
  std::string failure_reason(const std::string& rung) const;

  // Records that `rung` passed qualification; when it is better than the current rung, that is a climb.
  void mark_healthy(const std::string& rung);
  // Records that `rung` cannot serve, and why; when it was current, the step down is an event built from `why`.
  void mark_failed(const std::string& rung, const Finding& why);

  std::vector<LadderEvent> events() const;
  std::vector<LadderEvent> events_since(uint64_t seq) const;
  uint64_t last_seq() const;

  // Failed rungs above the current one whose re-probe is due now (back-off 5 s doubling up to 5 min).
  std::vector<std::string> due_for_reprobe(std::chrono::steady_clock::time_point now) const;
  // Called when a re-probe of `rung` failed again: pushes its next probe further out.
  void reprobe_failed(const std::string& rung, const std::string& detail);
  void set_backoff(std::chrono::milliseconds first, std::chrono::milliseconds max);
  // With several GPUs each has its own ladder: events and log lines then name the GPU.
  void set_gpu(std::string gpu) { gpu_ = std::move(gpu); }

 private:
  struct Rung {
    std::string name;
    RungState state = RungState::kUntested;
    std::string reason;
    std::chrono::steady_clock::time_point next_probe{};
    std::chrono::milliseconds backoff{0};
  };
  std::string current_locked() const;
  void record(std::string from, std::string to, std::string reason, std::string detail, std::string fix, bool climb);
  Rung* find(const std::string& name);
  const Rung* find(const std::string& name) const;

  std::vector<std::string> rungs_;
  std::string gpu_;
  std::vector<Rung> state_;
  std::vector<LadderEvent> events_;
  uint64_t seq_ = 0;
  std::chrono::milliseconds first_backoff_{5000}, max_backoff_{300000};
  mutable std::mutex mu_;
};

}  // namespace steadyocr::engine

#include "engine/ladder.h"

#include <ctime>

#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::engine {
namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

std::vector<LadderEvent> standing_events(const std::vector<LadderEvent>& events) {
  size_t from = 0;
  for (size_t k = 0; k < events.size(); ++k) {
    if (events[k].climb) from = k + 1;
  }
  return std::vector<LadderEvent>(events.begin() + static_cast<std::ptrdiff_t>(from), events.end());
}

Ladder::Ladder(std::vector<std::string> rungs) : rungs_(std::move(rungs)) {
  for (auto& r : rungs_) {
    Rung rung;
    rung.name = r;
    state_.push_back(rung);
  }
  metrics::describe("steadyocr_fallback_total", "Moves on the backend ladder, by from, to and reason");
}

Ladder::Rung* Ladder::find(const std::string& name) {
  for (auto& r : state_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

const Ladder::Rung* Ladder::find(const std::string& name) const {
  for (auto& r : state_) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::string Ladder::current_locked() const {
  for (auto& r : state_) {
    if (r.state == RungState::kHealthy) return r.name;
  }
  return "";
}

std::string Ladder::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_locked();
}

RungState Ladder::state(const std::string& rung) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Rung* r = find(rung);
  return r ? r->state : RungState::kFailed;
}

std::string Ladder::failure_reason(const std::string& rung) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Rung* r = find(rung);
  return r && r->state == RungState::kFailed ? r->reason : "";
}

void Ladder::record(std::string from, std::string to, std::string reason, std::string detail, std::string fix,
                    bool climb) {
  LadderEvent e{utc_now(), std::move(from), std::move(to), std::move(reason), std::move(detail), std::move(fix),
                climb,     ++seq_,          gpu_};
  metrics::inc("steadyocr_fallback_total", {{"from", e.from}, {"to", e.to}, {"reason", e.reason}});
  const std::string where = gpu_.empty() ? "" : "GPU " + gpu_ + ": ";
  if (climb) {
    log::warn("engine", "{}back on {} (from {}): {} healthy again", where, e.to, e.from, e.to);
  } else {
    log::warn("engine", "{}falling back from {} to {}: {} — {}{}", where, e.from.empty() ? "(start)" : e.from,
              e.to.empty() ? "(nothing)" : e.to, e.reason, e.detail, e.fix.empty() ? "" : "; fix: " + e.fix);
  }
  events_.push_back(std::move(e));
}

void Ladder::mark_healthy(const std::string& rung) {
  std::lock_guard<std::mutex> lock(mu_);
  Rung* r = find(rung);
  if (!r || r->state == RungState::kHealthy) return;
  std::string before = current_locked();
  bool was_failed = r->state == RungState::kFailed;
  r->state = RungState::kHealthy;
  r->reason.clear();
  r->backoff = std::chrono::milliseconds(0);
  std::string after = current_locked();
  if (was_failed && after == rung && before != rung) record(before, after, "RECOVERED", "re-probe passed", "", true);
}

void Ladder::mark_failed(const std::string& rung, const Finding& why) {
  const std::string& reason = why.code;
  std::lock_guard<std::mutex> lock(mu_);
  Rung* r = find(rung);
  if (!r) return;
  std::string before = current_locked();
  bool already_failed = r->state == RungState::kFailed;
  r->state = RungState::kFailed;
  r->reason = reason;
  r->backoff = first_backoff_;
  r->next_probe = std::chrono::steady_clock::now() + first_backoff_;
  std::string after = current_locked();
  // A step down is an event when the failed rung was serving, or when a rung better than the one serving was
  // ruled out (at start-up: the user must learn why they do not get the better one).
  bool better_than_after = true;
  for (auto& s : state_) {
    if (s.name == after) {
      better_than_after = false;
      break;
    }
    if (s.name == rung) break;
  }
  if (!already_failed && (before == rung || better_than_after))
    record(rung, after, why.code, why.detail, why.fix, false);
}

std::vector<LadderEvent> Ladder::events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return events_;
}

std::vector<LadderEvent> Ladder::events_since(uint64_t seq) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LadderEvent> out;
  for (auto& e : events_) {
    if (e.seq > seq) out.push_back(e);
  }
  return out;
}

uint64_t Ladder::last_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return seq_;
}

std::vector<std::string> Ladder::due_for_reprobe(std::chrono::steady_clock::time_point now) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> due;
  std::string cur = current_locked();
  for (auto& r : state_) {
    if (r.name == cur) break;  // only rungs better than the one serving are worth climbing to
    if (r.state == RungState::kFailed && now >= r.next_probe) due.push_back(r.name);
  }
  return due;
}

void Ladder::reprobe_failed(const std::string& rung, const std::string& detail) {
  std::lock_guard<std::mutex> lock(mu_);
  Rung* r = find(rung);
  if (!r) return;
  r->backoff = std::min(max_backoff_, r->backoff * 2 > first_backoff_ ? r->backoff * 2 : first_backoff_);
  r->next_probe = std::chrono::steady_clock::now() + r->backoff;
  log::info("engine", "re-probe of {} failed ({}); next in {} s", rung, detail, r->backoff.count() / 1000.0);
}

void Ladder::set_backoff(std::chrono::milliseconds first, std::chrono::milliseconds max) {
  std::lock_guard<std::mutex> lock(mu_);
  first_backoff_ = first;
  max_backoff_ = max;
}

}  // namespace steadyocr::engine

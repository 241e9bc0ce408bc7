// When a plan instance captures its steps into a CUDA graph (prepared_graph.cpp). A graph replays only on the
// activation arena it was captured on; with many runs in flight that arena is often held by another run, so the
// graph is dropped after two runs elsewhere and the plan captures again on the next arena. Each capture costs the
// host ~3 ms (capture, instantiation, later destruction, under the driver's locks that other threads' launches
// wait on) and pays only after a few replays. A graph dropped before it paid makes the next capture wait: 4 runs,
// then 8, 16, ... up to 256; one that paid clears the wait. One image at a time the arena stays the same, the
// graph keeps replaying and nothing changes. Host logic only, so it is tested without a device.
#pragma once

#include <algorithm>

namespace steadyocr::cuda {

class GraphCapturePolicy {
 public:
  static constexpr int kPaysAfter = 4;  // replays that make a capture worth its cost
  static constexpr int kMinWait = 4;    // runs to wait after the first graph that did not pay
  static constexpr int kMaxWait = 256;

  // Whether to capture now, before good run number `good_runs` (0-based count of good runs so far), no graph held.
  bool should_capture(int good_runs) const { return good_runs >= 1 && good_runs >= capture_after_; }
  void captured() { replays_ = 0; }
  void replayed() { ++replays_; }
  // The graph is dropped because runs kept getting other arenas; true when it had not paid (capturing backs off).
  bool dropped(int good_runs) {
    if (replays_ >= kPaysAfter) {
      wait_ = 0;
      capture_after_ = 0;
      return false;
    }
    wait_ = std::clamp(wait_ * 2, kMinWait, kMaxWait);
    capture_after_ = good_runs + wait_;
    return true;
  }
  int wait() const { return wait_; }

 private:
  int replays_ = 0;        // of the graph held now
  int wait_ = 0;           // runs the next capture waits after a graph that did not pay
  int capture_after_ = 0;  // no capture before this many good runs
};

}  // namespace steadyocr::cuda

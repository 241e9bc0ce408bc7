// Which CUDA graphs a plan instance keeps, and when it captures another (prepared_graph.cpp). A graph bakes in the
// addresses of the activation arena it was captured on, so it replays only on that arena; with many runs in flight
// the arena a run leases keeps changing. So an instance keeps up to `capacity` graphs, one per arena it ran on, and
// its runs ask for those arenas first (CudaDevice::acquire_arena): a run replays whenever one of them is free.
//
// A run that finds no graph for its arena captures one there while there is room; when all are taken, only after two
// such runs in a row, in place of the graph used least recently. Each capture costs the host ~3 ms (capture,
// instantiation, later destruction, under the driver's locks that other threads' launches wait on) and pays only
// after a few replays. A graph dropped before it paid makes the next capture wait: 4 runs, then 8, 16, ... up to 256;
// one that paid clears the wait. One image at a time the arena stays the same and one graph keeps replaying.
// Host logic only (the handle is a template parameter), so it is tested without a device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

namespace steadyocr::cuda {

template <class Handle>
class ArenaGraphs {
 public:
  static constexpr int kPaysAfter = 4;  // replays that make a capture worth its cost
  static constexpr int kMinWait = 4;    // runs to wait after the first graph that did not pay
  static constexpr int kMaxWait = 256;
  static constexpr int kMissesBeforeEvict = 2;

  explicit ArenaGraphs(int capacity = 1) : capacity_(std::max(1, capacity)) {}

  // The graph captured on `arena`, counted as replayed; null when there is none.
  const Handle* replay(uint64_t arena) {
    for (Slot& s : slots_) {
      if (s.arena == arena) {
        ++s.replays;
        s.used = ++clock_;
        misses_ = 0;
        return &s.handle;
      }
    }
    return nullptr;
  }
  // A good run that found no graph for its arena (while holding some).
  void missed() {
    if (!slots_.empty()) ++misses_;
  }
  // The arenas with a graph, the most recently replayed first (the ones to ask for).
  std::vector<uint64_t> arenas() const {
    std::vector<const Slot*> by_use;
    for (const Slot& s : slots_) by_use.push_back(&s);
    std::sort(by_use.begin(), by_use.end(), [](const Slot* a, const Slot* b) { return a->used > b->used; });
    std::vector<uint64_t> out;
    for (const Slot* s : by_use) out.push_back(s->arena);
    return out;
  }
  // When all slots are taken and runs kept missing: the least recently used graph, taken out (the caller destroys
  // it). A graph that had not paid makes later captures wait.
  std::optional<Handle> evict(int good_runs) {
    if (static_cast<int>(slots_.size()) < capacity_ || misses_ < kMissesBeforeEvict) return std::nullopt;
    auto lru =
        std::min_element(slots_.begin(), slots_.end(), [](const Slot& a, const Slot& b) { return a.used < b.used; });
    Handle h = lru->handle;
    if (lru->replays >= kPaysAfter) {
      wait_ = 0;
      capture_after_ = 0;
    } else {
      wait_ = std::clamp(wait_ * 2, kMinWait, kMaxWait);
      capture_after_ = good_runs + wait_;
      ++waits_;
    }
    slots_.erase(lru);
    misses_ = 0;
    return h;
  }
  // Whether to capture on this run's arena before good run number `good_runs` (0-based count of good runs so far).
  bool should_capture(int good_runs) const {
    return static_cast<int>(slots_.size()) < capacity_ && good_runs >= 1 && good_runs >= capture_after_;
  }
  void add(uint64_t arena, Handle h) { slots_.push_back(Slot{h, arena, 0, ++clock_}); }
  // Every graph, taken out (a rebuild, the instance's end).
  std::vector<Handle> clear() {
    std::vector<Handle> out;
    for (const Slot& s : slots_) out.push_back(s.handle);
    slots_.clear();
    misses_ = 0;
    return out;
  }
  // Forgets the waits too (a plan rebuilt from scratch).
  void reset() {
    wait_ = 0;
    capture_after_ = 0;
  }
  size_t size() const { return slots_.size(); }
  int capacity() const { return capacity_; }
  int wait() const { return wait_; }
  int waits() const { return waits_; }  // evictions that made captures wait

 private:
  struct Slot {
    Handle handle;
    uint64_t arena = 0;
    int replays = 0;
    uint64_t used = 0;
  };
  int capacity_;
  std::vector<Slot> slots_;
  uint64_t clock_ = 0;
  int misses_ = 0;         // consecutive good runs without a graph for their arena
  int wait_ = 0;           // runs the next capture waits after a graph that did not pay
  int capture_after_ = 0;  // no capture before this many good runs
  int waits_ = 0;
};

}  // namespace steadyocr::cuda

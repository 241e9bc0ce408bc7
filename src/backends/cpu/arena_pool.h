// Internal to the oneDNN CPU backend: the activation memory of running plans. A plan only knows how many
// bytes its liveness plan needs; it takes a block for the duration of a run and gives it back, so the
// cached plans of every input shape share a few blocks (no per-plan arenas, no page faults per new shape).
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <vector>

namespace steadyocr::cpu {

class ArenaPool {
 public:
  struct Block {
    void* ptr = nullptr;
    size_t bytes = 0;
  };
  // `max_free_blocks`: blocks kept for reuse while no run holds them (one per concurrently running plan).
  explicit ArenaPool(size_t max_free_blocks = 2) : max_free_(max_free_blocks) {}
  ~ArenaPool();
  ArenaPool(const ArenaPool&) = delete;
  ArenaPool& operator=(const ArenaPool&) = delete;

  // A block of at least `bytes` (4 KiB aligned); ptr is null when memory is exhausted.
  Block acquire(size_t bytes);
  // Returns a block taken with acquire().
  void release(Block b);
  // Bytes held by free blocks.
  size_t free_bytes() const;
  // Blocks taken and not given back: the runs in progress on this backend (used to split the threads).
  int in_use() const { return in_use_.load(std::memory_order_relaxed); }

 private:
  Block take(size_t bytes);

  mutable std::mutex mu_;
  std::vector<Block> free_;
  size_t max_free_;
  std::atomic<int> in_use_{0};
};

}  // namespace steadyocr::cpu

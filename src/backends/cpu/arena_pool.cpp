#include "backends/cpu/arena_pool.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>

namespace steadyocr::cpu {
namespace {

constexpr size_t kGranule = size_t{2} << 20;  // 2 MiB: huge-page friendly, and a little headroom for growth

void* allocate(size_t bytes) {
  void* p = std::aligned_alloc(kGranule, bytes);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, bytes, MADV_HUGEPAGE);  // fewer page faults and TLB misses on big activations
#endif
  return p;
}

}  // namespace

ArenaPool::~ArenaPool() {
  for (Block& b : free_) std::free(b.ptr);
}

ArenaPool::Block ArenaPool::acquire(size_t bytes) {
  Block b = take(std::max<size_t>(bytes, 1));
  if (b.ptr) in_use_.fetch_add(1, std::memory_order_relaxed);
  return b;
}

ArenaPool::Block ArenaPool::take(size_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    // The smallest free block that fits.
    auto best = free_.end();
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->bytes >= bytes && (best == free_.end() || it->bytes < best->bytes)) best = it;
    }
    if (best != free_.end()) {
      Block b = *best;
      free_.erase(best);
      return b;
    }
    // None fits: drop the largest free one (it is too small) before growing.
    if (!free_.empty()) {
      auto largest = std::max_element(free_.begin(), free_.end(),
                                      [](const Block& a, const Block& b) { return a.bytes < b.bytes; });
      std::free(largest->ptr);
      free_.erase(largest);
    }
  }
  Block b;
  b.bytes = (bytes + kGranule - 1) / kGranule * kGranule;
  b.ptr = allocate(b.bytes);
  if (!b.ptr) b.bytes = 0;
  return b;
}

void ArenaPool::release(Block b) {
  if (!b.ptr) return;
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(b);
  while (free_.size() > max_free_) {
    auto smallest =
        std::min_element(free_.begin(), free_.end(), [](const Block& a, const Block& b) { return a.bytes < b.bytes; });
    std::free(smallest->ptr);
    free_.erase(smallest);
  }
}

size_t ArenaPool::free_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const Block& b : free_) n += b.bytes;
  return n;
}

}  // namespace steadyocr::cpu

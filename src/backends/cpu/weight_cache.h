// Internal to the oneDNN CPU backend: weights reordered into the layout a primitive chose, once, and
// shared by every plan (input shape) of a model that asks for the same weights in the same layout.
#pragma once

#include <list>
#include <mutex>

#include "backends/cpu/dnnl_util.h"
#include "core/tensor.h"

namespace steadyocr::cpu {

class WeightCache {
 public:
  explicit WeightCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // `src` (host bytes in layout `src_md`) reordered into `dst_md`. Entries are found by content, so
  // plans built from different graph clones share them; evicted entries live on in the plans using them.
  Result<dnnl::memory> get(const Tensor& src, const Md& src_md, const Md& dst_md);
  size_t bytes() const;
  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    uint64_t hash;
    Tensor src;
    Md src_md, dst_md;
    dnnl::memory mem;
    size_t bytes;
  };
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recently used first
  size_t bytes_ = 0;
  size_t max_bytes_;
  uint64_t hits_ = 0, misses_ = 0;
};

}  // namespace steadyocr::cpu

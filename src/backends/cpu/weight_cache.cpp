#include "backends/cpu/weight_cache.h"

#include <cstring>

#include "core/content_hash.h"

namespace steadyocr::cpu {

Result<dnnl::memory> WeightCache::get(const Tensor& src, const Md& src_md, const Md& dst_md) {
  {
    // The same storage again (graph clones share unmodified constants, which are never mutated): no hashing.
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->src.raw() == src.raw() && it->src.nbytes() == src.nbytes() && it->src_md == src_md &&
          it->dst_md == dst_md) {
        lru_.splice(lru_.begin(), lru_, it);
        ++hits_;
        return lru_.front().mem;
      }
    }
  }
  uint64_t h = hash_bytes(src.raw(), src.nbytes());
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = lru_.begin(); it != lru_.end(); ++it) {
      if (it->hash == h && it->src_md == src_md && it->dst_md == dst_md && it->src.nbytes() == src.nbytes() &&
          (it->src.raw() == src.raw() || std::memcmp(it->src.raw(), src.raw(), src.nbytes()) == 0)) {
        lru_.splice(lru_.begin(), lru_, it);
        ++hits_;
        return lru_.front().mem;
      }
    }
  }
  dnnl::memory out;
  RETURN_IF_ERROR(dnnl_try("reordering weights into the primitive's layout", [&] {
    auto& eng = cpu_engine();
    dnnl::memory in(src_md, eng, const_cast<void*>(src.raw()));
    out = dnnl::memory(dst_md, eng);
    dnnl::stream s(eng);
    dnnl::reorder(in, out).execute(s, in, out);
    s.wait();
  }));
  std::lock_guard<std::mutex> lock(mu_);
  ++misses_;
  size_t nb = dst_md.get_size();
  lru_.push_front(Entry{h, src, src_md, dst_md, out, nb});
  bytes_ += nb;
  while (bytes_ > max_bytes_ && lru_.size() > 1) {
    bytes_ -= lru_.back().bytes;
    lru_.pop_back();
  }
  return out;
}

size_t WeightCache::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

uint64_t WeightCache::hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

uint64_t WeightCache::misses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return misses_;
}

}  // namespace steadyocr::cpu

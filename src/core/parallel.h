// The one thread pool: OpenMP's, shared by pipeline stages, our kernels and oneDNN (built on OpenMP),
// sized once by --threads. Nested parallel regions run serially, so nothing oversubscribes.
#pragma once

#include <cstdint>
#include <functional>

namespace steadyocr {

void set_num_threads(int n);
int num_threads();
// The threads a parallel region uses now: num_threads(), fewer while other processes keep cores busy
// (core/cpu_share.h). parallel_for, parallel_for_each and the cpu backend's runs take it.
int threads_now();
bool in_parallel_region();

// While alive, parallel_for / parallel_for_each called from this thread run inline: for threads that already run
// one job each in parallel with others (a worker's concurrent images), where nested teams would oversubscribe.
class SerialScope {
 public:
  SerialScope();
  ~SerialScope();
  SerialScope(const SerialScope&) = delete;
  SerialScope& operator=(const SerialScope&) = delete;

 private:
  bool previous_;
};

// Calls fn(begin, end) on disjoint chunks covering [0, n). Chunks hold at least `grain` items.
// Runs inline when n is small, one thread is configured, or we are already inside a parallel region.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn, int64_t grain = 1);

// Calls fn(i) for i in [0, n) with dynamic scheduling (items of uneven cost, e.g. images).
void parallel_for_each(int64_t n, const std::function<void(int64_t i)>& fn, int max_threads = 0);

}  // namespace steadyocr

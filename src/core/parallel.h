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

// While alive, this thread's parallel regions take a 1/`groups` share of threads_now(): for `groups` threads that
// each run whole pictures side by side (the cpu pipeline's image groups on many cores), each leading its own OpenMP
// team. When more group threads are alive at once (several calls each with its groups), the share is 1/(all of them).
// A run's share is then fixed by its group, not divided again by the runs in progress (threads_for_run).
class ThreadShareScope {
 public:
  explicit ThreadShareScope(int groups);
  ~ThreadShareScope();
  ThreadShareScope(const ThreadShareScope&) = delete;
  ThreadShareScope& operator=(const ThreadShareScope&) = delete;

 private:
  int previous_;
};

// Threads for one model run while `concurrent_runs` runs (this one included) are in progress on the backend:
// threads_now() divided among them, or this thread's share inside a ThreadShareScope.
int threads_for_run(int concurrent_runs);

// Calls fn(begin, end) on disjoint chunks covering [0, n). Chunks hold at least `grain` items.
// Runs inline when n is small, one thread is configured, or we are already inside a parallel region.
void parallel_for(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn, int64_t grain = 1);

// Calls fn(i) for i in [0, n) with dynamic scheduling (items of uneven cost, e.g. images).
void parallel_for_each(int64_t n, const std::function<void(int64_t i)>& fn, int max_threads = 0);

}  // namespace steadyocr

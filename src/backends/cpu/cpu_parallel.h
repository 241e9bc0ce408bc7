// Internal to the oneDNN CPU backend: parallel loops sized like oneDNN's, i.e. by the calling thread's OpenMP
// setting, which CpuPlan::run sets to this run's share of --threads (so our kernels and oneDNN's agree when
// several runs share the cores).
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace steadyocr::cpu {

// Calls fn(begin, end) on disjoint chunks of [0, n) of at least `grain` items; inline with one thread, for
// small n, or inside a parallel region.
template <typename F>
void parallel_chunks(int64_t n, F&& fn, int64_t grain = 1) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int threads = static_cast<int>(std::min<int64_t>(omp_get_max_threads(), (n + grain - 1) / grain));
  if (threads <= 1 || omp_in_parallel()) {
    fn(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num(), nt = omp_get_num_threads();
    const int64_t chunk = (n + nt - 1) / nt, b = t * chunk, e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

}  // namespace steadyocr::cpu

#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

#include "core/cpu_share.h"

namespace steadyocr {
namespace {
std::atomic<int> g_threads{0};
thread_local bool t_serial = false;
thread_local int t_groups = 1;        // ThreadShareScope
std::atomic<int> g_group_threads{0};  // threads inside a ThreadShareScope now, over all calls
}  // namespace

ThreadShareScope::ThreadShareScope(int groups) : previous_(t_groups) {
  t_groups = std::max(1, groups);
  ++g_group_threads;
}
ThreadShareScope::~ThreadShareScope() {
  --g_group_threads;
  t_groups = previous_;
}

SerialScope::SerialScope() : previous_(t_serial) {
  t_serial = true;
}
SerialScope::~SerialScope() {
  t_serial = previous_;
}

void set_num_threads(int n) {
  if (n <= 0) n = omp_get_num_procs();
  g_threads = n;
  omp_set_num_threads(n);
  omp_set_max_active_levels(1);
}

int num_threads() {
  int n = g_threads.load();
  return n > 0 ? n : omp_get_max_threads();
}

int threads_now() {
  const int n = cpu_share::threads_now(num_threads());
  if (t_groups <= 1) return n;
  // The group's share, smaller while other calls' groups run too (a server's concurrent calls): every group thread
  // alive counts, so that the teams together stay within the threads.
  return std::max(1, n / std::max(t_groups, g_group_threads.load(std::memory_order_relaxed)));
}

int threads_for_run(int concurrent_runs) {
  if (t_groups > 1) return threads_now();
  return std::max(1, threads_now() / std::max(1, concurrent_runs));
}

bool in_parallel_region() {
  return omp_in_parallel() != 0;
}

void parallel_for(int64_t n, const std::function<void(int64_t, int64_t)>& fn, int64_t grain) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  if (omp_in_parallel() || t_serial) {
    fn(0, n);
    return;
  }
  int threads = static_cast<int>(std::min<int64_t>(threads_now(), (n + grain - 1) / grain));
  if (threads <= 1) {
    fn(0, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = t * chunk;
    int64_t e = std::min(n, b + chunk);
    if (b < e) fn(b, e);
  }
}

void parallel_for_each(int64_t n, const std::function<void(int64_t)>& fn, int max_threads) {
  if (n <= 0) return;
  const bool inline_only = omp_in_parallel() || t_serial;
  int threads = inline_only ? 1 : static_cast<int>(std::min<int64_t>(max_threads > 0 ? max_threads : threads_now(), n));
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads)
  for (int64_t i = 0; i < n; ++i) fn(i);
}

}  // namespace steadyocr

#include "core/cpu_share.h"

#include <dirent.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::cpu_share {
namespace {

constexpr int64_t kSampleEveryNs = 25'000'000;
constexpr int kAgree = 3;
std::atomic<bool> g_enabled{true};  // samples that must show a core busy before the team shrinks

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Reads a small /proc file into buf; the bytes read, 0 on failure.
size_t read_small(const char* path, char* buf, size_t size) {
  FILE* f = std::fopen(path, "re");
  if (!f) return 0;
  const size_t n = std::fread(buf, 1, size - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  return n;
}

// This process's tasks in state R (running or runnable), from /proc/self/task/*/stat.
int own_running() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 1;
  int running = 0;
  char path[64], buf[512];
  while (const dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
    if (read_small(path, buf, sizeof buf) == 0) continue;
    // "tid (comm) S ...": the state follows the last ')' (comm may hold spaces and parentheses).
    const char* close = std::strrchr(buf, ')');
    if (close && close[1] == ' ' && close[2] == 'R') ++running;
  }
  closedir(d);
  return std::max(running, 1);  // the caller runs
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  return CPU_COUNT(&set);
}

struct State {
  std::mutex mu;
  std::atomic<int64_t> next_sample_ns{0};
  std::atomic<int> threads{0};  // the last decision (0: none yet)
  int busy[kAgree] = {0, 0, 0};
  int samples = 0;
  int wanted = 0;
  int cores = 0;
  bool checked = false, on = false;
};

State& state() {
  static State s;
  return s;
}

}  // namespace

bool parse_loadavg(std::string_view text, int* runnable) {
  // "0.52 0.58 0.59 3/1234 5678"
  const size_t slash = text.find('/');
  if (slash == std::string_view::npos) return false;
  size_t start = text.rfind(' ', slash);
  start = start == std::string_view::npos ? 0 : start + 1;
  int v = 0;
  const auto r = std::from_chars(text.data() + start, text.data() + slash, v);
  if (r.ec != std::errc() || r.ptr != text.data() + slash || v < 0) return false;
  *runnable = v;
  return true;
}

int busy_elsewhere(const Sample& s) {
  return std::max(0, s.runnable - std::max(s.own_running, 1));
}

int threads_for(int wanted, int cores, int busy) {
  if (busy <= 0) return std::max(1, wanted);  // as asked, even beyond the cores
  return std::max(1, std::min(wanted, cores - busy));
}

void set_enabled(bool on) {
  g_enabled = on;
  reset_for_testing();  // decided again at the next region
}

bool applies(int wanted, std::string* why) {
  if (!g_enabled) {
    if (why) *why = "turned off (STEADYOCR_SHARE_CORES=off)";
    return false;
  }
  if (wanted <= 1) {
    if (why) *why = "one thread wanted";
    return false;
  }
  const int online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  if (affinity_cores() < online) {
    if (why)
      *why =
          "the process is bound to a subset of the CPUs (cpuset), where the machine's runnable count says "
          "nothing about its cores";
    return false;
  }
  char buf[128];
  int runnable = 0;
  if (read_small("/proc/loadavg", buf, sizeof buf) == 0 || !parse_loadavg(buf, &runnable)) {
    if (why) *why = "/proc/loadavg is not readable";
    return false;
  }
  return true;
}

int threads_now(int wanted) {
  State& st = state();
  const int64_t t = now_ns();
  const int last = st.threads.load(std::memory_order_relaxed);
  if (t < st.next_sample_ns.load(std::memory_order_relaxed) && last > 0 && st.wanted == wanted) {
    return std::min(last, wanted);
  }
  std::unique_lock<std::mutex> lock(st.mu, std::try_to_lock);
  if (!lock.owns_lock()) return last > 0 ? std::min(last, wanted) : wanted;  // another thread samples
  st.next_sample_ns.store(t + kSampleEveryNs, std::memory_order_relaxed);
  if (!st.checked || st.wanted != wanted) {
    std::string why;
    st.on = applies(wanted, &why);
    if (!st.on && wanted > 1 && !st.checked) {
      log::debug("cpu", "parallel regions keep {} threads whatever other processes do: {}", wanted, why);
    }
    st.checked = true;
    st.wanted = wanted;
    st.cores = affinity_cores();
    st.samples = 0;
    st.threads.store(wanted);
  }
  if (!st.on) return wanted;
  char buf[128];
  Sample s;
  if (read_small("/proc/loadavg", buf, sizeof buf) == 0 || !parse_loadavg(buf, &s.runnable)) return wanted;
  s.own_running = own_running();
  st.busy[st.samples++ % kAgree] = busy_elsewhere(s);
  // A core is taken when every one of the last kAgree samples shows it taken; freed as soon as one sample does.
  int busy = st.busy[0];
  for (int i = 1; i < kAgree; ++i) busy = std::min(busy, st.busy[i]);
  if (st.samples < kAgree) busy = 0;
  const int threads = threads_for(wanted, st.cores, busy);
  const int before = st.threads.exchange(threads);
  if (threads != before) {
    if (threads < before) {
      log::info("cpu",
                "other processes keep {} of {} cores busy: parallel regions use {} thread{} instead of {} (a team "
                "larger than the free cores waits at every barrier; STEADYOCR_SHARE_CORES=off keeps {})",
                busy, st.cores, threads, threads == 1 ? "" : "s", wanted, wanted);
    } else {
      log::info("cpu", "cores free again: parallel regions use {} threads of {}", threads, wanted);
    }
    metrics::inc("steadyocr_cpu_thread_changes_total", {{"to", threads < before ? "fewer" : "more"}});
  }
  metrics::set_gauge("steadyocr_cpu_threads", {}, threads);
  return threads;
}

void reset_for_testing() {
  State& st = state();
  std::lock_guard<std::mutex> lock(st.mu);
  st.next_sample_ns = 0;
  st.threads = 0;
  st.samples = 0;
  st.checked = false;
  std::fill(std::begin(st.busy), std::end(st.busy), 0);
}

}  // namespace steadyocr::cpu_share

// A device timeline summary for machines without Nsight Systems: loaded by the CUDA driver into every process that
// initialises CUDA (CUDA_INJECTION64_PATH), it records every kernel, copy and memset and every CUDA runtime call
// through CUPTI's activity API and writes, per process, what the device did in the last SO_CUPTI_LAST_S seconds
// (default 3) before its last activity (the steady part of a bench): how much of that time any kernel ran, how many ran
// at once, the kernels and runtime calls by total time, the kernels' durations, and the idle gaps inside each stream's
// runs.
//
//   SO_CUPTI_OUT=DIR CUDA_INJECTION64_PATH=/abs/libso_cupti_trace.so steadyocr bench ...   ->  DIR/cupti.PID.txt
//
// The summary is rewritten every second, so a worker that is killed at the end still leaves one. A measuring
// tool (docs/BENCHMARKS.md), never linked into steadyocr.
#include <cupti.h>

#include <unistd.h>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

struct Interval {
  uint64_t start, end;
  uint32_t stream;
  uint32_t name;   // kernels: index into names; copies: CUpti_ActivityMemcpyKind + 1000; memsets: 2000
  uint64_t bytes;  // copies and memsets: bytes; kernels: blocks in the grid
};

struct ApiCall {
  uint64_t start, end;
  uint32_t cbid;
};

struct Trace {
  std::mutex mu;
  std::vector<Interval> device;
  std::vector<ApiCall> api;
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> name_index;
  std::string out_path;
  double last_s = 3.0;
};

Trace* g_trace = nullptr;

#define CUPTI_OK(call)                                                            \
  do {                                                                            \
    CUptiResult r_ = (call);                                                      \
    if (r_ != CUPTI_SUCCESS) {                                                    \
      const char* s_ = nullptr;                                                   \
      cuptiGetResultString(r_, &s_);                                              \
      std::fprintf(stderr, "cupti_trace: %s failed: %s\n", #call, s_ ? s_ : "?"); \
    }                                                                             \
  } while (0)

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = size_t{8} << 20;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(64, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  Trace& t = *g_trace;
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(t.mu);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      case CUPTI_ACTIVITY_KIND_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        const std::string name = k->name ? k->name : "?";
        auto it = t.name_index.find(name);
        if (it == t.name_index.end()) {
          it = t.name_index.emplace(name, static_cast<uint32_t>(t.names.size())).first;
          t.names.push_back(name);
        }
        t.device.push_back({k->start, k->end, k->streamId, it->second,
                            uint64_t(k->gridX) * k->gridY * k->gridZ});  // kernels: blocks in `bytes`
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec);
        t.device.push_back({m->start, m->end, m->streamId, 1000u + m->copyKind, m->bytes});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMSET: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(rec);
        t.device.push_back({m->start, m->end, m->streamId, 2000u, m->bytes});
        break;
      }
      case CUPTI_ACTIVITY_KIND_RUNTIME: {
        const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(rec);
        t.api.push_back({a->start, a->end, a->cbid});
        break;
      }
      default:
        break;
    }
  }
  std::free(buffer);
}

// Total length of the union of [start, end) intervals (sorted by start).
uint64_t union_ns(const std::vector<std::pair<uint64_t, uint64_t>>& iv) {
  uint64_t total = 0, cur_s = 0, cur_e = 0;
  bool open = false;
  for (const auto& [s, e] : iv) {
    if (!open || s > cur_e) {
      if (open) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
      open = true;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (open) total += cur_e - cur_s;
  return total;
}

std::string short_name(const std::string& n) {
  std::string s = n;
  if (s.size() > 90) s = s.substr(0, 90) + "...";
  return s;
}

void write_summary() {
  Trace& t = *g_trace;
  std::vector<Interval> dev;
  std::vector<ApiCall> api;
  std::vector<std::string> names;
  {
    std::lock_guard<std::mutex> lock(t.mu);
    dev = t.device;
    api = t.api;
    names = t.names;
  }
  if (dev.empty()) return;
  uint64_t last = 0;
  for (const auto& d : dev) last = std::max(last, d.end);
  const uint64_t from = last - static_cast<uint64_t>(t.last_s * 1e9);
  std::vector<Interval> w;
  for (const auto& d : dev) {
    if (d.start >= from) w.push_back(d);
  }
  if (w.empty()) return;
  std::sort(w.begin(), w.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  const double span_ms = (last - w.front().start) / 1e6;
  std::vector<std::pair<uint64_t, uint64_t>> kern, any;
  uint64_t kern_sum = 0, copy_sum = 0, copy_bytes = 0, copies = 0;
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_name;  // count, ns
  std::map<uint32_t, uint64_t> blocks_by_name;
  uint64_t hist_n[8] = {}, hist_ns[8] = {};
  const uint64_t edges[7] = {5000, 10000, 20000, 50000, 100000, 500000, 2000000};
  for (const auto& d : w) {
    any.emplace_back(d.start, d.end);
    const uint64_t ns = d.end - d.start;
    if (d.name < 1000) {
      kern.emplace_back(d.start, d.end);
      kern_sum += ns;
      auto& b = by_name[d.name];
      ++b.first;
      b.second += ns;
      blocks_by_name[d.name] += d.bytes;
      int h = 0;
      while (h < 7 && ns >= edges[h]) ++h;
      ++hist_n[h];
      hist_ns[h] += ns;
    } else {
      copy_sum += ns;
      copy_bytes += d.bytes;
      ++copies;
    }
  }
  const uint64_t kern_union = union_ns(kern), any_union = union_ns(any);
  // Idle time inside each stream's runs: gaps under 1 ms between consecutive device work on one stream.
  std::map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> per_stream;
  for (const auto& d : w) per_stream[d.stream].emplace_back(d.start, d.end);
  uint64_t gap_ns = 0, gaps = 0, busy_stream_ns = 0;
  for (auto& [s, v] : per_stream) {
    busy_stream_ns += union_ns(v);
    for (size_t i = 1; i < v.size(); ++i) {
      if (v[i].first > v[i - 1].second && v[i].first - v[i - 1].second < 1000000) {
        gap_ns += v[i].first - v[i - 1].second;
        ++gaps;
      }
    }
  }
  // Busy fraction per 100 ms bin of the window (kernels only).
  std::vector<double> bins;
  for (uint64_t b = w.front().start; b < last; b += 100000000) {
    std::vector<std::pair<uint64_t, uint64_t>> clip;
    for (const auto& [s, e] : kern) {
      if (e <= b || s >= b + 100000000) continue;
      clip.emplace_back(std::max(s, b), std::min(e, b + 100000000));
    }
    std::sort(clip.begin(), clip.end());
    bins.push_back(union_ns(clip) / 1e8);
  }
  std::sort(bins.begin(), bins.end());
  auto q = [&](double p) { return bins.empty() ? 0.0 : bins[static_cast<size_t>(p * (bins.size() - 1))]; };

  const std::string tmp = t.out_path + ".tmp";
  FILE* f = std::fopen(tmp.c_str(), "w");
  if (!f) return;
  std::fprintf(f, "window: last %.3f s of device activity (%.1f ms from its first record)\n", t.last_s, span_ms);
  std::fprintf(f,
               "kernels: %zu, %.1f ms summed, any kernel running %.1f ms (%.1f %% of the window), %.2f at once on "
               "average while any runs\n",
               kern.size(), kern_sum / 1e6, kern_union / 1e6, 100.0 * kern_union / 1e6 / span_ms,
               kern_union ? double(kern_sum) / kern_union : 0.0);
  std::fprintf(f, "kernel busy per 100 ms bin: p10 %.2f p50 %.2f p90 %.2f (%zu bins)\n", q(0.1), q(0.5), q(0.9),
               bins.size());
  std::fprintf(f, "copies+memsets: %llu, %.1f ms summed, %.1f MB; device busy (any record) %.1f %% of the window\n",
               static_cast<unsigned long long>(copies), copy_sum / 1e6, copy_bytes / 1e6,
               100.0 * any_union / 1e6 / span_ms);
  std::fprintf(
      f, "streams: %zu; summed stream busy %.1f ms; gaps under 1 ms inside streams: %llu, %.1f ms (%.1f us each)\n",
      per_stream.size(), busy_stream_ns / 1e6, static_cast<unsigned long long>(gaps), gap_ns / 1e6,
      gaps ? gap_ns / 1e3 / gaps : 0.0);
  std::fprintf(f, "kernel durations (count, share of kernel time):");
  const char* labels[8] = {"<5us", "5-10us", "10-20us", "20-50us", "50-100us", "0.1-0.5ms", "0.5-2ms", ">2ms"};
  for (int h = 0; h < 8; ++h)
    std::fprintf(f, " %s %llu %.0f%%;", labels[h], static_cast<unsigned long long>(hist_n[h]),
                 kern_sum ? 100.0 * hist_ns[h] / kern_sum : 0.0);
  std::fprintf(f, "\n");
  std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>> top(by_name.begin(), by_name.end());
  std::sort(top.begin(), top.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::fprintf(f, "top kernels by time (ms, count, mean us, share, mean blocks):\n");
  for (size_t i = 0; i < top.size() && i < 30; ++i) {
    const auto& [n, cs] = top[i];
    std::fprintf(f, "  %8.2f %7llu %8.1f %5.1f%% %8.0f  %s\n", cs.second / 1e6,
                 static_cast<unsigned long long>(cs.first), cs.second / 1e3 / cs.first, 100.0 * cs.second / kern_sum,
                 double(blocks_by_name[n]) / cs.first, short_name(names[n]).c_str());
  }
  // Runtime calls in the same window, by total host time.
  std::map<uint32_t, std::pair<uint64_t, uint64_t>> by_api;
  uint64_t api_max[1024] = {};
  for (const auto& a : api) {
    if (a.start < from) continue;
    auto& b = by_api[a.cbid];
    ++b.first;
    b.second += a.end - a.start;
    if (a.cbid < 1024) api_max[a.cbid] = std::max(api_max[a.cbid], a.end - a.start);
  }
  std::vector<std::pair<uint32_t, std::pair<uint64_t, uint64_t>>> apis(by_api.begin(), by_api.end());
  std::sort(apis.begin(), apis.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::fprintf(f, "runtime calls by host time (ms, count, mean us, max us):\n");
  for (size_t i = 0; i < apis.size() && i < 20; ++i) {
    const char* nm = nullptr;
    cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, apis[i].first, &nm);
    std::fprintf(f, "  %8.2f %7llu %8.1f %8.1f  %s\n", apis[i].second.second / 1e6,
                 static_cast<unsigned long long>(apis[i].second.first),
                 apis[i].second.second / 1e3 / apis[i].second.first,
                 apis[i].first < 1024 ? api_max[apis[i].first] / 1e3 : 0.0, nm ? nm : "?");
  }
  std::fclose(f);
  std::rename(tmp.c_str(), t.out_path.c_str());
}

}  // namespace

// Called by the CUDA driver in every process that initialises CUDA when CUDA_INJECTION64_PATH names this library
// (the driver's documented injection point): shells and processes that never touch the GPU are left alone. Nothing
// runs at exit (a flush while the process tears CUDA down can hang); the summary is rewritten every second.
extern "C" int InitializeInjection(void) {
  const char* dir = std::getenv("SO_CUPTI_OUT");
  if (!dir || !*dir || g_trace) return 1;
  g_trace = new Trace;
  g_trace->out_path = std::string(dir) + "/cupti." + std::to_string(getpid()) + ".txt";
  if (const char* s = std::getenv("SO_CUPTI_LAST_S")) g_trace->last_s = std::max(0.1, std::atof(s));
  CUPTI_OK(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET));
  CUPTI_OK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      cuptiActivityFlushAll(0);
      write_summary();
    }
  }).detach();
  return 1;
}

// `steadyocr bench`: images/s and per-stage milliseconds of the whole engine on a set of images, with `ocr`'s flags
// and a pass in one engine call (--chunk N: calls of N), with the backend that served and every ladder move in the
// report.
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/engine_options.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/proc_children.h"
#include "core/timer.h"
#include "engine/engine.h"
#include "engine/result_format.h"
#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"

namespace steadyocr::cli {
namespace {

using namespace steadyocr::pipeline;
using namespace steadyocr::engine;
using nlohmann::json;

constexpr const char* kStages[] = {"decode", "det", "post", "cls", "rec", "total"};

constexpr const char* kJsonSchema = R"(--json prints one object:
  images            images sent to the engine in each pass (all that could be read into memory)
  failed            inputs that could not be read or failed in any pass (each named on stderr; exit 1)
  warmup, passes    untimed and timed passes over all images
  threads           threads used
  image_groups      groups of pictures read side by side, each on its share of the threads (--image-groups; 1 on GPU
                    backends)
  chunk_images      images per engine call (--chunk; a whole pass by default)
  rung              the rung serving at the end; backend: the backend it runs (cpu-worker runs cpu)
  backends_used     {rung: results it produced in timed passes}
  startup_ms        engine creation (model load and self-test), not part of any pass
  pass_ms           wall time of each timed pass; pass_ms_median, pass_ms_best
  images_per_s      images / median pass wall; images_per_s_best: images / best pass wall
  stage_ms          {decode|det|post|cls|rec|total: {mean, median, p90, p99}}: ms per image over every
                    successful image of the timed passes (samples: how many); percentiles interpolate linearly
                    between ranks
  first_pass_ms     wall time of the process's first pass (the first warm-up pass, or the first timed one with
                    --warmup 0): every input shape is new to the engine then, unless an earlier image had it
  first_pass_stage_ms  as stage_ms, over that first pass only
  time_table_ms     {det|cls|rec: {calls, prep, wait, plan, acquire, staging, upload, compute, download, sync,
                    run, finish}}: mean ms per image inside each model stage over the timed passes (prep/finish:
                    host work before and after the calls; wait: for stacking partners, a call slot, a plan instance;
                    plan: plan lookup and planning; acquire: stream and arena; staging: host copy into page-locked
                    memory; upload/compute/download: the device's own events; sync: host blocked on the device; run:
                    the backend's run, wall). A call shared with other images counts whole for each
  new_shape_ms_per_image  (first_pass_ms - pass_ms_median) / images: what a new shape costs an image on top of
                    its steady cost (planning, algorithm choice, allocation), averaged over the set
  host_cpu_ms_per_image  CPU time (user + system) of this process and its worker processes over the timed passes,
                    per image: the host's cost of an image, waits for the device included where they spin
  host_cpu_cores    the same CPU time / the timed passes' wall: how many of the host's cores were busy on average
  fell_back         true when the ladder stepped down (at startup or during the run): the figures are then
                    not those of the backend asked for
  gpu_memory        GPU rungs only: {after_warmup, end: {in_use, cached, mapped, mapped_peak, device_used,
                    device_used_at_start}, growth_pct, budget} in MiB (budget: the pool's, --gpu-mem or its default;
                    0: none), the worker's device pool after the warm-up passes (with
                    --warmup 0: after the first timed pass) and after the last pass. in_use: given out by the pool
                    (weights, the lanes' cuBLAS workspaces, activation arenas, leased or kept for the next runs);
                    cached: blocks kept for reuse; mapped: what the driver's pool keeps mapped for the process,
                    mapped_peak its high-water mark; device_used: the device's used memory (context, libraries and
                    other processes included); device_used_at_start: the same when the backend was made. growth_pct:
                    how much mapped grew from after the warm-up to the end
  gpus              with several GPUs (--gpus): [{gpu, device, name, rung, in_service, images, gpu_memory}]:
                    each GPU's results in the timed passes and its worker's device pool at the end (MiB, as
                    gpu_memory's end); gpu_memory above is then GPU 0's
  events            [{time, from, to, reason, detail, fix, climb, gpu}] every ladder move (gpu: with several)
  workers           {rung: {starts, losses, hangs, retries}} for worker rungs that lost a worker or retried)";

struct BenchArgs {
  std::vector<std::string> inputs;
  EngineArgs engine;
  bool recursive = false;
  int warmup = 1;
  int repeat = 3;
  int chunk = 0;  // images per engine call; 0: a whole pass in one call
  bool json = false;
};

struct Spread {
  double mean = 0, median = 0, p90 = 0, p99 = 0;
};

// Percentile by linear interpolation between the closest ranks (numpy's default), p in [0, 1].
double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  double pos = p * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

// Milliseconds to the microsecond: enough for a report, and the JSON stays readable.
double round_us(double ms) {
  return std::round(ms * 1000.0) / 1000.0;
}

Spread spread(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = round_us(sum / static_cast<double>(v.size()));
  s.median = round_us(percentile(v, 0.5));
  s.p90 = round_us(percentile(v, 0.9));
  s.p99 = round_us(percentile(v, 0.99));
  return s;
}

double stage_of(const StageTimes& t, const std::string& stage) {
  if (stage == "decode") return t.decode;
  if (stage == "det") return t.det;
  if (stage == "post") return t.post;
  if (stage == "cls") return t.cls;
  if (stage == "rec") return t.rec;
  return t.total;
}

std::string event_line(const LadderEvent& e) {
  std::string s = e.time + ": " + (e.gpu.empty() ? "" : "GPU " + e.gpu + ": ") + (e.from.empty() ? "(start)" : e.from) +
                  " -> " + (e.to.empty() ? "(none)" : e.to) + (e.climb ? " (back up)" : "") + ": " + e.reason;
  if (!e.detail.empty()) s += " - " + e.detail;
  if (!e.fix.empty()) s += "; fix: " + e.fix;
  return s;
}

constexpr const char* kModels[] = {"det", "cls", "rec"};
constexpr const char* kTimeFields[] = {"prep",    "wait",     "plan", "acquire", "staging", "upload",
                                       "compute", "download", "sync", "run",     "finish"};

// Sums of the ModelTimes of every image, per model, for the time table.
struct TimeTable {
  std::map<std::string, json> sum;  // model -> {field: ms}
  size_t images = 0;
  void add(const TimeProfile& p) {
    ++images;
    const ModelTimes* of[] = {&p.det, &p.cls, &p.rec};
    for (size_t m = 0; m < std::size(kModels); ++m) {
      json one = *of[m];
      json& total = sum[kModels[m]];
      if (!total.is_object()) total = json::object();
      for (auto& [field, v] : one.items()) total[field] = total.value(field, 0.0) + v.get<double>();
    }
  }
  json means() const {
    json out = json::object();
    for (const auto& [model, fields] : sum) {
      json& o = out[model];
      for (auto& [field, v] : fields.items()) o[field] = round_us(v.get<double>() / static_cast<double>(images));
    }
    return out;
  }
};

void print_time_table(const json& t) {
  std::printf("\n%-8s %6s", "ms/image", "calls");
  for (const char* f : kTimeFields) std::printf(" %8s", f);
  std::printf("\n");
  for (const char* m : kModels) {
    if (!t.contains(m) || t[m].value("calls", 0.0) == 0) continue;
    std::printf("%-8s %6.2f", m, t[m].value("calls", 0.0));
    for (const char* f : kTimeFields) std::printf(" %8.2f", t[m].value(f, 0.0));
    std::printf("\n");
  }
  std::printf(
      "(inside run: acquire, staging, sync and the enqueueing; upload/compute/download are the device's\n"
      " events and overlap other images' runs; a call shared with other images counts whole for each)\n");
}

// The serving GPU rung's device memory as its worker last reported it (steadyocr_gpu_memory_bytes), MiB; null
// where the rung reports none (cpu rungs).
json gpu_memory_mib(const std::string& rung, const std::string& gpu = "0") {
  json j = json::object();
  bool any = false;
  for (const char* state : kGpuMemoryStates) {
    const double bytes = metrics::value("steadyocr_gpu_memory_bytes", {{"gpu", gpu}, {"rung", rung}, {"state", state}});
    any = any || bytes > 0;
    j[state] = std::round(bytes / 1048576.0 * 10) / 10;
  }
  return any ? j : json();
}

void print_gpu_memory(const json& m) {
  if (m.is_null()) return;
  const json& a = m["after_warmup"];
  const json& e = m["end"];
  std::printf(
      "\n%-18s %10.1f MiB mapped (peak %.1f; %.1f in use, %.1f cached); after the warm-up %.1f mapped: "
      "%+.2f %% over the timed passes\n",
      "device memory", e["mapped"].get<double>(), e["mapped_peak"].get<double>(), e["in_use"].get<double>(),
      e["cached"].get<double>(), a["mapped"].get<double>(), m["growth_pct"].get<double>());
  std::printf(
      "%-18s %10.1f MiB used on the device (%.1f when the backend was made: context, libraries and other "
      "processes)\n",
      "", e["device_used"].get<double>(), e["device_used_at_start"].get<double>());
  const double budget = m["budget"].get<double>();
  if (budget > 0) {
    std::printf("%-18s %10.1f MiB budget of the pool (--gpu-mem; runs wait for memory rather than exceed it)\n", "",
                budget);
  } else {
    std::printf("%-18s %10s no budget (--gpu-mem 0)\n", "", "");
  }
}

// CPU time (user + system) of this process and of its worker processes, ms: the direct children still running (from
// /proc, in clock ticks) and those that ended and were waited for (RUSAGE_CHILDREN).
double process_tree_cpu_ms() {
  auto ms = [](const timeval& t) { return t.tv_sec * 1e3 + t.tv_usec / 1e3; };
  rusage self{}, ended{};
  ::getrusage(RUSAGE_SELF, &self);
  ::getrusage(RUSAGE_CHILDREN, &ended);
  double total = ms(self.ru_utime) + ms(self.ru_stime) + ms(ended.ru_utime) + ms(ended.ru_stime);
  for (const ChildProcess& c : child_processes(::getpid())) total += c.cpu_ms;
  return total;
}

void print_table(const json& r) {
  const int groups = r["image_groups"].get<int>();
  std::printf("steadyocr bench: %d images, %d warm-up + %d timed passes, backend %s, %d threads%s\n",
              r["images"].get<int>(), r["warmup"].get<int>(), r["passes"].get<int>(),
              r["backend"].get<std::string>().c_str(), r["threads"].get<int>(),
              groups > 1 ? fmt::format(" in {} image groups", groups).c_str() : "");
  if (r["fell_back"].get<bool>()) {
    std::printf("\n!!! FELL BACK: the ladder stepped down; these figures are for %s, not the backend asked for !!!\n",
                r["backend"].get<std::string>().c_str());
  }
  if (r["failed"].get<int>() > 0) std::printf("!!! %d images failed (named on stderr)\n", r["failed"].get<int>());
  std::printf("\n%-18s %10.1f ms (engine creation: model load and self-test)\n", "startup",
              r["startup_ms"].get<double>());
  std::printf("%-18s median %10.1f ms   best %10.1f ms\n", "wall per pass", r["pass_ms_median"].get<double>(),
              r["pass_ms_best"].get<double>());
  std::printf("%-18s median %10.2f      best %10.2f\n", "images/s", r["images_per_s"].get<double>(),
              r["images_per_s_best"].get<double>());
  std::printf("%-18s %10.1f ms   (+%.2f ms per image over a steady pass: input shapes new to the engine)\n",
              "first pass", r["first_pass_ms"].get<double>(), r["new_shape_ms_per_image"].get<double>());
  std::printf("%-18s %10.1f ms per image   (%.2f cores busy on average: this process and its workers)\n", "host CPU",
              r["host_cpu_ms_per_image"].get<double>(), r["host_cpu_cores"].get<double>());
  std::printf("\n%-18s %10s %10s %10s %10s   %s   (%d samples; first pass: %d)\n", "ms per image", "mean", "median",
              "p90", "p99", "first-pass median", r["stage_ms"]["samples"].get<int>(),
              r["first_pass_stage_ms"]["samples"].get<int>());
  for (const char* stage : kStages) {
    const json& s = r["stage_ms"][stage];
    std::printf("%-18s %10.2f %10.2f %10.2f %10.2f   %10.2f\n", stage, s["mean"].get<double>(),
                s["median"].get<double>(), s["p90"].get<double>(), s["p99"].get<double>(),
                r["first_pass_stage_ms"][stage]["median"].get<double>());
  }
  print_time_table(r["time_table_ms"]);
  print_gpu_memory(r["gpu_memory"]);
  if (r.contains("gpus")) {
    std::printf("\n");
    for (const auto& g : r["gpus"]) {
      const json& m = g["gpu_memory"];
      std::printf("GPU %-3s %-28s %-10s %6d images in the timed passes%s\n", g["gpu"].get<std::string>().c_str(),
                  g["name"].get<std::string>().substr(0, 28).c_str(),
                  g["in_service"].get<bool>() ? g["rung"].get<std::string>().c_str() : "OUT", g["images"].get<int>(),
                  m.is_null() ? ""
                              : fmt::format(", {:.1f} MiB mapped (peak {:.1f})", m["mapped"].get<double>(),
                                            m["mapped_peak"].get<double>())
                                    .c_str());
    }
  }
  std::string used;
  for (const auto& [rung, n] : r["backends_used"].items()) {
    used += (used.empty() ? "" : ", ") + rung + " " + std::to_string(n.get<int>());
  }
  std::printf("\nresults by backend: %s\n", used.empty() ? "(none)" : used.c_str());
  if (r["events"].empty()) {
    std::printf("backend events: none\n");
  } else {
    std::printf("backend events:\n");
    for (const auto& e : r["events"]) {
      LadderEvent ev;
      ev.time = e["time"];
      ev.from = e["from"];
      ev.to = e["to"];
      ev.reason = e["reason"];
      ev.detail = e["detail"];
      ev.fix = e["fix"];
      ev.climb = e["climb"];
      std::printf("  %s\n", event_line(ev).c_str());
    }
  }
  for (const auto& [rung, w] : r["workers"].items()) {
    std::printf("%s worker: %d started, %d lost (%d hung), %d jobs retried\n", rung.c_str(), w["starts"].get<int>(),
                w["losses"].get<int>(), w["hangs"].get<int>(), w["retries"].get<int>());
  }
}

int run_bench(const BenchArgs& a) {
  std::string usage_error;
  std::vector<InputFile> files = expand_inputs(a.inputs, a.recursive, &usage_error);
  if (!usage_error.empty() || files.empty()) {
    std::fprintf(stderr, "error: %s\n", usage_error.empty() ? "no images given" : usage_error.c_str());
    return kExitUsage;
  }
  auto options = engine_options_from(a.engine);
  if (!options.is_ok()) {
    std::fprintf(stderr, "error: %s\n", options.status().message().c_str());
    return kExitUsage;
  }
  use_threads(a.engine.threads);

  // Everything is read into memory first: the passes time the engine, not the disk.
  std::vector<std::string> errors(files.size());
  std::vector<ImageJob> read(files.size());
  parallel_for_each(static_cast<int64_t>(files.size()), [&](int64_t i) {
    const InputFile& f = files[i];
    read[i].name = f.path;
    if (!f.missing.empty()) {
      errors[i] = f.missing;
      return;
    }
    auto bytes = read_file_bytes(f.path, options->limits.max_file_bytes);
    if (!bytes.is_ok()) {
      errors[i] = bytes.status().message();
      return;
    }
    read[i].bytes = std::move(*bytes);
  });
  auto report_failures = [&] {
    size_t failed = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      if (errors[i].empty()) continue;
      ++failed;
      std::fprintf(stderr, "error: %s: %s\n", files[i].path.c_str(), errors[i].c_str());
    }
    return failed;
  };
  if (std::all_of(errors.begin(), errors.end(), [](const std::string& e) { return !e.empty(); })) {
    report_failures();
    std::fprintf(stderr, "error: none of the %zu inputs could be read: no images to benchmark\n", files.size());
    return kExitUsage;
  }

  Stopwatch startup;
  auto engine_or = OcrEngine::create(*options);
  const double startup_ms = startup.elapsed_ms();
  if (!engine_or.is_ok()) {
    std::fprintf(stderr, "error: %s\n", engine_or.status().message().c_str());
    return is_usage_error(engine_or.status()) ? kExitUsage : kExitFailed;
  }
  OcrEngine& engine = **engine_or;
  std::vector<size_t> index;  // file index of each image benchmarked
  // A pass goes to the engine as one call by default: the engine keeps its images in flight from the first image to
  // the last, as a server under steady load does. --chunk N sends calls of N images, each waiting for its slowest
  // image before the next starts (what a caller that waits for each batch gets).
  const size_t chunk = a.chunk > 0 ? static_cast<size_t>(a.chunk) : files.size();
  std::vector<std::vector<ImageJob>> chunks;
  for (size_t i = 0; i < files.size(); ++i) {
    if (!errors[i].empty()) continue;
    if (chunks.empty() || chunks.back().size() == chunk) chunks.emplace_back();
    chunks.back().push_back(std::move(read[i]));
    index.push_back(i);
  }

  std::vector<std::vector<double>> stage_ms(std::size(kStages));
  std::vector<std::vector<double>> first_stage_ms(std::size(kStages));  // the first pass: shapes new to the engine
  bool first = true;
  std::map<std::string, int> backends_used;
  std::map<std::string, int> per_gpu;  // results of the timed passes by GPU, with several
  TimeTable time_table;
  // One pass: every chunk through ocr_batch; failures are kept (first error per image), timings when timed.
  auto run_pass = [&](bool timed) {
    Stopwatch wall;
    size_t k = 0;
    for (const auto& jobs : chunks) {
      std::vector<EngineOutcome> results = engine.ocr_batch(jobs);
      for (auto& o : results) {
        const size_t file = index[k++];
        if (!o.status.is_ok()) {
          if (errors[file].empty()) errors[file] = o.status.message();
          continue;
        }
        if (first) {
          for (size_t s = 0; s < std::size(kStages); ++s)
            first_stage_ms[s].push_back(stage_of(o.result.timings, kStages[s]));
        }
        if (!timed) continue;
        ++backends_used[o.rung];
        if (!o.gpu.empty()) ++per_gpu[o.gpu];
        time_table.add(o.result.profile);
        for (size_t s = 0; s < std::size(kStages); ++s) stage_ms[s].push_back(stage_of(o.result.timings, kStages[s]));
      }
    }
    first = false;
    return wall.elapsed_ms();
  };
  double first_pass_ms = -1;
  for (int i = 0; i < a.warmup; ++i) {
    const double ms = run_pass(false);
    if (first_pass_ms < 0) first_pass_ms = round_us(ms);
  }
  std::vector<double> pass_ms;
  json memory_after_warmup = a.warmup > 0 ? gpu_memory_mib(engine.current_rung()) : json();
  double cpu_ms = 0, timed_wall_ms = 0;
  for (int i = 0; i < a.repeat; ++i) {
    const double cpu0 = process_tree_cpu_ms();
    const double wall = run_pass(true);
    cpu_ms += process_tree_cpu_ms() - cpu0;
    timed_wall_ms += wall;
    pass_ms.push_back(round_us(wall));
    if (memory_after_warmup.is_null()) memory_after_warmup = gpu_memory_mib(engine.current_rung());
  }
  if (first_pass_ms < 0) first_pass_ms = pass_ms.front();
  const json memory_end = gpu_memory_mib(engine.current_rung());

  const double images = static_cast<double>(index.size());
  Spread pass = spread(pass_ms);
  const double best = *std::min_element(pass_ms.begin(), pass_ms.end());
  json r;
  r["images"] = index.size();
  r["warmup"] = a.warmup;
  r["passes"] = a.repeat;
  r["threads"] = num_threads();
  // The groups the engine worked out at its start (EngineOptions as resolved); 1 on other backends.
  r["image_groups"] =
      engine::backend_of_rung(engine.current_rung()) == "cpu" ? engine.options().pipeline.host_groups : 1;
  r["chunk_images"] = a.chunk > 0 ? std::min<size_t>(a.chunk, index.size()) : index.size();
  r["rung"] = engine.current_rung();
  r["backend"] = engine::backend_of_rung(engine.current_rung());
  r["backends_used"] = backends_used;
  r["startup_ms"] = round_us(startup_ms);
  r["pass_ms"] = pass_ms;
  r["pass_ms_median"] = pass.median;
  r["pass_ms_best"] = best;
  r["images_per_s"] = pass.median > 0 ? round_us(images * 1000.0 / pass.median) : 0.0;
  r["images_per_s_best"] = best > 0 ? round_us(images * 1000.0 / best) : 0.0;
  auto stages_json = [](const std::vector<std::vector<double>>& ms) {
    json j;
    j["samples"] = ms[0].size();
    for (size_t s = 0; s < std::size(kStages); ++s) {
      Spread sp = spread(ms[s]);
      j[kStages[s]] = {{"mean", sp.mean}, {"median", sp.median}, {"p90", sp.p90}, {"p99", sp.p99}};
    }
    return j;
  };
  r["stage_ms"] = stages_json(stage_ms);
  r["first_pass_ms"] = first_pass_ms;
  r["first_pass_stage_ms"] = stages_json(first_stage_ms);
  r["time_table_ms"] = time_table.means();
  r["new_shape_ms_per_image"] = round_us((first_pass_ms - pass.median) / images);
  r["host_cpu_ms_per_image"] = images > 0 ? round_us(cpu_ms / (images * a.repeat)) : 0.0;
  r["host_cpu_cores"] = timed_wall_ms > 0 ? std::round(cpu_ms / timed_wall_ms * 1000) / 1000 : 0.0;
  if (!memory_end.is_null() && !memory_after_warmup.is_null()) {
    const double before = memory_after_warmup["mapped"].get<double>();
    const double growth = before > 0 ? (memory_end["mapped"].get<double>() - before) / before * 100 : 0.0;
    const double budget =
        metrics::value("steadyocr_gpu_memory_budget_bytes", {{"gpu", "0"}, {"rung", engine.current_rung()}});
    r["gpu_memory"] = {{"after_warmup", memory_after_warmup},
                       {"end", memory_end},
                       {"growth_pct", std::round(growth * 100) / 100},
                       {"budget", std::round(budget / 1048576.0 * 10) / 10}};
  } else {
    r["gpu_memory"] = nullptr;
  }
  if (engine.gpu_count() > 1) {
    r["gpus"] = json::array();
    for (const auto& g : engine.gpus()) {
      r["gpus"].push_back({{"gpu", g.gpu},
                           {"device", g.device},
                           {"name", g.name},
                           {"rung", g.rung},
                           {"in_service", g.in_service},
                           {"images", per_gpu[g.gpu]},
                           {"gpu_memory", g.rung.empty() ? json() : gpu_memory_mib(g.rung, g.gpu)}});
    }
  }
  const auto events = engine.events();
  r["fell_back"] = std::any_of(events.begin(), events.end(), [](const auto& e) { return !e.climb; });
  r["events"] = json::array();
  for (const auto& e : events) r["events"].push_back(json(engine::event_to_json(e)));
  r["workers"] = json::object();
  for (const auto& [rung, st] : engine.worker_stats()) {
    if (st.worker_losses || st.retries) {
      r["workers"][rung] = {
          {"starts", st.worker_starts}, {"losses", st.worker_losses}, {"hangs", st.hangs}, {"retries", st.retries}};
    }
  }
  const size_t failed = report_failures();
  r["failed"] = failed;

  if (a.json) {
    std::printf("%s\n", r.dump(2).c_str());
  } else {
    print_table(r);
  }
  std::fflush(stdout);
  // Also on stderr, so that a --json run piped elsewhere cannot fall back unnoticed.
  if (r["fell_back"].get<bool>()) {
    std::fprintf(stderr, "bench: WARNING: fell back; figures are for %s:\n", engine.current_rung().c_str());
    for (const auto& e : events) std::fprintf(stderr, "bench:   %s\n", event_line(e).c_str());
  }
  return failed > 0 ? kExitFailed : kExitOk;
}

}  // namespace

Command add_bench_command(CLI::App& root) {
  auto args = std::make_shared<BenchArgs>();
  Command c;
  CLI::App* app = root.add_subcommand(
      "bench", "Images/s and per-stage ms per image of the engine on a set of images (read into memory first)");
  c.app = app;
  app->add_option("inputs", args->inputs, "Image files or directories (jpg, png, bmp, webp, tiff)")->required();
  add_engine_flags(app, &args->engine);
  app->add_flag("-r,--recursive", args->recursive, "Look for images in subdirectories too");
  app->add_option("--warmup", args->warmup, "Untimed passes over all images before timing")
      ->check(CLI::Range(0, 1000))
      ->capture_default_str();
  app->add_option("--repeat", args->repeat, "Timed passes over all images")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app->add_option("--chunk", args->chunk,
                  "Images per engine call, each waiting for its slowest image (0: a whole pass in one call, the "
                  "engine keeping its images in flight throughout)")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app->add_flag("--json", args->json, "Print one JSON object instead of the table (schema below)");
  app->footer(kJsonSchema);
  c.run = [args] { return run_bench(*args); };
  return c;
}

}  // namespace steadyocr::cli

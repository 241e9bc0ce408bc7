// The two kinds of rung: in process, and worker process (through the supervisor). Both end in the pipeline's one
// handler, pipeline::read_images: here, or in the worker (worker_main.cpp).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "engine/rung.h"
#include "engine/wire.h"
#include "pipeline/handler.h"
#include "pipeline/pipeline.h"
#include "pipeline/visualize.h"
#include "runtime/vulkan_plugin.h"

namespace steadyocr::engine {
namespace {

using json = nlohmann::json;

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("steadyocr") : p.string();
}

// The backend in this process.
class InProcessRung : public Rung {
 public:
  InProcessRung(std::string name, const EngineOptions& options, bool top)
      : Rung(std::move(name)), options_(options), top_(top) {}

  Status start() override {
    std::string summary;
    auto p = build_rung_pipeline(backend_of_rung(name()), options_, make_injector(options_.faults, top_), &summary);
    if (!p.is_ok()) {
      if (p.status().finding()) return p.status();
      return p.status().with_finding({"LOAD_FAILED", p.status().message(), ""});
    }
    std::lock_guard<std::mutex> lock(mu_);
    pipeline_ = std::move(*p);
    return Status::ok();
  }

  std::vector<EngineOutcome> run(const std::vector<const ImageJob*>& jobs) override {
    std::vector<pipeline::ImageRequest> requests(jobs.size());
    bool want_vis = false;
    for (size_t i = 0; i < jobs.size(); ++i) {
      requests[i] = {jobs[i]->bytes.data(), jobs[i]->bytes.size(), jobs[i]->vis_format, jobs[i]->options};
      want_vis |= !jobs[i]->vis_format.empty();
    }
    const pipeline::Pipeline* p;
    const pipeline::Visualizer* vis = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      p = pipeline_.get();
      if (want_vis && !vis_) vis_ = std::make_unique<pipeline::Visualizer>();
      vis = vis_.get();
    }
    std::vector<EngineOutcome> out(jobs.size());
    if (!p) {
      for (auto& o : out) o.status = unavailable("rung " + name() + " is not started");
      return out;
    }
    std::vector<pipeline::ImageReply> replies = pipeline::read_images(*p, requests, options_.limits, vis);
    for (size_t i = 0; i < jobs.size(); ++i) {
      EngineOutcome& o = out[i];
      o.rung = name();
      if (!replies[i].result.is_ok()) {
        o.status = replies[i].result.status();
        continue;
      }
      o.result = std::move(*replies[i].result);
      o.vis = std::move(replies[i].vis);
      o.vis_status = replies[i].vis_status;
    }
    return out;
  }

 private:
  EngineOptions options_;
  bool top_;
  std::mutex mu_;
  std::unique_ptr<pipeline::Pipeline> pipeline_;
  std::unique_ptr<pipeline::Visualizer> vis_;
};

// The backend in a supervised worker process (`steadyocr __worker CONFIG`).
class WorkerRung : public Rung {
 public:
  WorkerRung(std::string name, const EngineOptions& options, bool top)
      : Rung(std::move(name)),
        options_(options),
        top_(top),
        width_(std::max(1, worker_in_flight(options_, this->name()))) {}
  ~WorkerRung() override { stop(); }

  Status start() override {
    if (is_gpu_rung(name())) {
      RETURN_IF_ERROR(gpu_preflight(options_.device));
      metrics::set_gauge("steadyocr_gpu_memory_budget_bytes", {{"gpu", gpu_metric_label(options_)}, {"rung", name()}},
                         static_cast<double>(gpu_mem_budget_mb(options_, name())) * 1024 * 1024);
    }
    if (name().rfind("vulkan", 0) == 0) {
      RETURN_IF_ERROR(vulkan_preflight(options_.backend.empty() || options_.backend == "auto"));
    }
    std::lock_guard<std::mutex> lock(mu_);
    if (!supervisor_) {
      SupervisorOptions so;
      so.name = options_.gpu_label.empty() ? name() : name() + " (GPU " + options_.gpu_label + ")";
      // Pinned to its GPU: the worker sees that one device only, as its device 0.
      if (!options_.device.empty()) so.env.emplace_back("CUDA_VISIBLE_DEVICES", options_.device);
      const std::string exe = options_.worker_exe.empty() ? self_exe() : options_.worker_exe;
      so.argv = {exe, "__worker", worker_config(options_, name(), top_)};
      // A fault rule applies to the first worker only unless marked persistent ('!'): a restarted worker models a
      // device that recovered.
      EngineOptions restarted = options_;
      restarted.faults.clear();
      for (const FaultRule& r : options_.faults) {
        if (r.persistent) restarted.faults.push_back(r);
      }
      so.restart_argv = {exe, "__worker", worker_config(restarted, name(), top_)};
      const bool cpu_vulkan = name().rfind("vulkan", 0) == 0 && runtime::vulkan_backend_device_is_cpu();
      so.job_timeout_ms = worker_watchdog_ms(options_, name(), cpu_vulkan);
      if (cpu_vulkan && options_.job_timeout_ms <= 0) {
        log::info("engine",
                  "{}: the Vulkan device is a CPU implementation; its worker's watchdog is {} s (--watchdog "
                  "sets it)",
                  name(), so.job_timeout_ms / 1000);
      }
      so.max_attempts = options_.retry.worker_attempts;
      so.max_restarts_in_row = options_.retry.restarts_in_row;
      supervisor_ = std::make_unique<Supervisor>(so);
    }
    auto ready = supervisor_->start();
    if (!ready.is_ok()) return ready.status();
    if (options_.gpu_label.empty()) {
      log::info("engine", "{} ready: {}", name(), *ready);
    } else {
      log::info("engine", "GPU {} ({}): {} ready: {}", options_.gpu_label, options_.device, name(), *ready);
    }
    return Status::ok();
  }

  std::vector<EngineOutcome> run(const std::vector<const ImageJob*>& jobs) override {
    std::vector<EngineOutcome> out(jobs.size());
    Supervisor* sup;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sup = supervisor_.get();
    }
    if (!sup) {
      for (auto& o : out) o.status = unavailable("rung " + name() + " is not started");
      return out;
    }
    const int width = width_;  // as the worker's jobs, worked out once (the cpu rung's reads the memory available)
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < jobs.size();) {
        const ImageJob& j = *jobs[i];
        EngineOutcome& o = out[i];
        o.rung = name();
        json header = {{"name", j.name}, {"vis", j.vis_format}};
        if (!j.options.empty()) header["options"] = j.options;
        Message req{header.dump(), std::string(j.bytes.begin(), j.bytes.end())};
        auto r = sup->call(req);
        if (!r.is_ok()) {
          o.status = r.status();
          continue;
        }
        o.status = reply_status(*r);
        if (!o.status.is_ok()) continue;
        json h = json::parse(r->header, nullptr, false);
        const size_t n = h.is_discarded() ? 0 : h.value("result_bytes", size_t{0});
        if (n == 0 || n > r->payload.size()) {
          o.status = data_loss("worker reply without a result");
          continue;
        }
        json body =
            json::parse(r->payload.begin(), r->payload.begin() + static_cast<std::ptrdiff_t>(n), nullptr, false);
        auto res = ocr_result_from_json(body);
        if (!res.is_ok()) {
          o.status = res.status();
          continue;
        }
        o.result = std::move(*res);
        if (h.contains("vis_status")) o.vis_status = status_from_json(h["vis_status"]);
        if (h.contains("gpu_mem") && h["gpu_mem"].is_object()) {
          for (const char* state : kGpuMemoryStates) {
            auto it = h["gpu_mem"].find(state);
            if (it != h["gpu_mem"].end() && it->is_number()) {
              metrics::set_gauge("steadyocr_gpu_memory_bytes",
                                 {{"gpu", gpu_metric_label(options_)}, {"rung", name()}, {"state", state}},
                                 it->get<double>());
            }
          }
        }
        o.vis.assign(r->payload.begin() + static_cast<std::ptrdiff_t>(n), r->payload.end());
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < std::min<int>(width, static_cast<int>(jobs.size())); ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    return out;
  }

  std::optional<SupervisorStats> worker_stats() const override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!supervisor_) return std::nullopt;
    return supervisor_->stats();
  }

  void stop() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (supervisor_) supervisor_->stop();
  }

 private:
  EngineOptions options_;
  bool top_;
  mutable std::mutex mu_;
  std::unique_ptr<Supervisor> supervisor_;
  int width_;  // images sent to the worker at once
};

}  // namespace

bool is_gpu_rung(const std::string& rung) {
  return rung.rfind("cuda", 0) == 0;
}
bool is_worker_rung(const std::string& rung) {
  return is_device_rung(rung) || rung == "cpu-worker";
}
bool is_device_rung(const std::string& rung) {
  return is_gpu_rung(rung) || rung.rfind("vulkan", 0) == 0;
}
int worker_watchdog_ms(const EngineOptions& options, const std::string& rung, bool cpu_vulkan_device) {
  if (options.job_timeout_ms > 0) return options.job_timeout_ms;
  return rung.rfind("vulkan", 0) == 0 && cpu_vulkan_device ? kCpuVulkanWatchdogMs : kWorkerWatchdogMs;
}
namespace {
// The cpu pipeline's image groups on this machine (pipeline::host_groups_here): 1 below 8 threads.
int cpu_groups(const EngineOptions& options) {
  return pipeline::host_groups_here(options.pipeline, "cpu");
}
}  // namespace

int worker_in_flight(const EngineOptions& options, const std::string& rung) {
  if (options.worker_concurrency > 0) return options.worker_concurrency;
  // GPU rungs: one image per core (measured on the 16-core H200 host: 16 in flight beat 8 and 32).
  return is_device_rung(rung) ? std::max(4, num_threads()) : std::max(4, cpu_groups(options));
}
int worker_jobs(const EngineOptions& options, const std::string& rung) {
  // A GPU worker's jobs spend most of their time waiting for the device or in short host stages: one thread per
  // image in flight keeps the device's streams busy. A CPU worker's jobs share the cores: two, or one per image
  // group on many cores (each on its group's share of the threads, as the in-process pipeline's groups).
  return is_device_rung(rung) ? worker_in_flight(options, rung) : std::max(2, cpu_groups(options));
}
int64_t gpu_mem_budget_mb(const EngineOptions& options, const std::string& rung) {
  if (options.gpu_mem_mb != kGpuMemAuto) return std::max<int64_t>(0, options.gpu_mem_mb);
  if (!is_gpu_rung(rung)) return 0;
  const pipeline::PipelineOptions& p = options.pipeline;
  const int rows = p.batching.rec_rows > 0 ? p.batching.rec_rows
                   : p.rec.merge_rows > 0  ? p.rec.merge_rows
                                           : 8 * std::max(1, p.rec.batch);
  const double side = std::max(1, p.det_limit_side) / 960.0;
  const double scale = std::max({1.0, side * side, rows / 48.0});
  return static_cast<int64_t>(std::ceil(kGpuMemAutoBaseMb * scale));
}
std::string gpu_metric_label(const EngineOptions& options) {
  return options.gpu_label.empty() ? "0" : options.gpu_label;
}
std::string backend_of_rung(const std::string& rung) {
  return rung == "cpu-worker" ? "cpu" : rung;
}

std::unique_ptr<Rung> make_rung(const std::string& name, const EngineOptions& options, bool top) {
  if (is_worker_rung(name)) return std::make_unique<WorkerRung>(name, options, top);
  return std::make_unique<InProcessRung>(name, options, top);
}

}  // namespace steadyocr::engine

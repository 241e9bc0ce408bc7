#include "engine/engine.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>

#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/thread_name.h"
#include "doctor/probes.h"
#include "runtime/vulkan_plugin.h"

namespace steadyocr::engine {

namespace {

using RungMap = std::map<std::string, std::shared_ptr<Rung>>;

// Whether a cuDNN-free rung may serve where these rungs failed: yes unless every failure is of the driver, the device,
// the plugin or the runtime (layers 1-2 of the doctor other than cuDNN's own findings).
bool cudnn_could_explain(const std::vector<std::pair<std::string, Finding>>& ruled_out) {
  for (const auto& [rung, f] : ruled_out) {
    const bool gpu_out =
        (f.code.rfind("L1_", 0) == 0 || f.code.rfind("L2_", 0) == 0 || f.code.rfind("PLUGIN_", 0) == 0) &&
        f.code.rfind("L2_CUDNN", 0) != 0;
    if (!gpu_out) return true;
  }
  return false;
}

// A host rung (cpu, reference) shared by the GPUs' ladders: made once, whichever ladder reaches it first; a later
// start (another GPU stepping down to it) finds it serving and does not load the models again.
class SharedRung : public Rung {
 public:
  explicit SharedRung(std::unique_ptr<Rung> inner) : Rung(inner->name()), inner_(std::move(inner)) {}
  Status start() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (started_) return Status::ok();
    Status s = inner_->start();
    started_ = s.is_ok();
    return s;
  }
  Status reprobe() override { return start(); }
  std::vector<EngineOutcome> run(const std::vector<const ImageJob*>& jobs) override { return inner_->run(jobs); }
  std::optional<SupervisorStats> worker_stats() const override { return inner_->worker_stats(); }
  void stop() override { inner_->stop(); }

 private:
  std::unique_ptr<Rung> inner_;
  std::mutex mu_;
  bool started_ = false;
};

// Per image, wherever its models ran (in process or in a worker): how many images shared its detector call and how
// many rows its recognition calls carried on average (batching across callers, runtime/batching.h).
void observe_calls(const pipeline::CallStats& c) {
  static const std::vector<double> kBuckets = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
  if (c.det_images > 0) {
    metrics::observe("steadyocr_image_det_batch_images", {}, c.det_images, kBuckets);
  }
  if (c.rec_calls > 0) {
    metrics::observe("steadyocr_image_rec_batch_rows", {}, static_cast<double>(c.rec_rows) / c.rec_calls, kBuckets);
    metrics::inc("steadyocr_rec_calls_total", {{"shared", "yes"}}, c.rec_shared);
    metrics::inc("steadyocr_rec_calls_total", {{"shared", "no"}}, c.rec_calls - c.rec_shared);
  }
}

int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// One ladder: the whole engine with a single GPU (or none), one GPU's with several. Its rungs are its own except the
// host rungs, which the GPUs share (`host`, null with a single ladder).
class Lane {
 public:
  Lane(const EngineOptions& options, std::vector<std::string> rungs, std::shared_ptr<RungMap> host,
       std::shared_ptr<std::mutex> host_mu, std::string device_name)
      : options_(options),
        ladder_(std::move(rungs)),
        host_(std::move(host)),
        host_mu_(std::move(host_mu)),
        device_name_(std::move(device_name)) {
    ladder_.set_gpu(options_.gpu_label);
    ladder_.set_backoff(std::chrono::milliseconds(options_.reprobe_backoff_ms),
                        std::chrono::milliseconds(std::max(options_.reprobe_backoff_ms, 300000)));
  }
  ~Lane() { stop(); }

  void stop() {
    stop_ = true;
    if (reprobe_thread_.joinable()) reprobe_thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, r] : rungs_) r->stop();
  }

  // Qualifies the rungs not tried yet, best first, until one serves (the device rungs only when
  // `device_rungs_only`); the ones ruled out are added to `ruled_out`. Returns the rung serving ("" when none does).
  // The ladder learns the outcome at finish_start(), so that its events name where the work goes.
  std::string start(bool device_rungs_only, std::vector<std::pair<std::string, Finding>>* ruled_out) {
    const auto& rungs = ladder_.rungs();
    for (auto& r : rungs) {
      if (!serving_.empty()) break;
      if (tried_.count(r)) continue;
      if (device_rungs_only && !is_worker_rung(r)) break;
      tried_.insert(r);
      if (options_.ladder.empty() && r.size() > 8 && r.compare(r.size() - 8, 8, "-nocudnn") == 0 &&
          !ruled_out->empty() && !cudnn_could_explain(*ruled_out)) {
        // The GPU itself is out (no driver, no device, no plugin...): the cuDNN-free rung would fail the same way.
        log::info("engine",
                  "{}{} not tried at start: the CUDA rungs above failed for a cause cuDNN does not explain ({})",
                  where(), r, ruled_out->back().second.code);
        continue;
      }
      if (options_.ladder.empty() && rungs.size() > 1 && r == "vulkan") {
        std::string why;
        if (runtime::vulkan_ladder_device(&why) < 0) {
          // No Vulkan GPU here (no plugin, no loader or driver, or only lavapipe): nothing for the rung to serve on.
          log::info("engine", "{}vulkan not tried at start: {}", where(), why);
          continue;
        }
      }
      Status s = qualify(r);
      if (s.is_ok()) {
        serving_ = r;
        break;
      }
      Finding f = s.finding() ? *s.finding() : Finding{"UNAVAILABLE", s.message(), ""};
      if (f.detail.empty()) f.detail = s.message();
      log::info("engine", "{}{} cannot serve: {} ({})", where(), r, f.code, s.message());
      ruled_out->emplace_back(r, f);
      pending_.emplace_back(r, f);
    }
    return serving_;
  }
  // The start's outcome into the ladder (the serving rung, then the ones ruled out: their events name it), and the
  // re-probe of the better ones.
  void finish_start() {
    if (!serving_.empty()) ladder_.mark_healthy(serving_);
    for (auto& [r, f] : pending_) ladder_.mark_failed(r, f);
    pending_.clear();
    if (options_.reprobe && serving_ != ladder_.rungs().front() && !reprobe_thread_.joinable())
      reprobe_thread_ = std::thread([this] {
        name_this_thread("so-reprobe");
        reprobe_loop();
      });
  }

  // Reads the jobs down its ladder. `leave`, when given, is asked whenever the ladder serves on a host rung: true
  // (another GPU serves on a device) hands the jobs left back, each marked in `rerouted`, with the events so far.
  std::vector<EngineOutcome> ocr_batch(const std::vector<const ImageJob*>& jobs, const std::function<bool()>& leave,
                                       std::vector<char>* rerouted) {
    in_flight_ += static_cast<int>(jobs.size());
    uint64_t seq = ladder_.last_seq();
    std::vector<EngineOutcome> out(jobs.size());
    if (rerouted) rerouted->assign(jobs.size(), 0);
    std::vector<size_t> todo(jobs.size());
    for (size_t i = 0; i < jobs.size(); ++i) todo[i] = i;
    std::vector<int> attempts(jobs.size(), 0), attempts_here(jobs.size(), 0);
    std::vector<std::string> last_rung(jobs.size());
    const int max_attempts = static_cast<int>(ladder_.rungs().size()) * std::max(1, options_.retry.attempts_per_rung);
    while (!todo.empty()) {
      const std::string name = ladder_.current();
      if (leave && !is_worker_rung(name) && rerouted && leave()) {
        for (size_t i : todo) {
          (*rerouted)[i] = 1;
          out[i].status = unavailable("GPU " + options_.gpu_label + " left service (" +
                                      (name.empty() ? std::string("no rung left") : "serving on " + name) + ")");
        }
        break;
      }
      Rung* r = name.empty() ? nullptr : rung(name);
      if (!r) {
        for (size_t i : todo) {
          out[i].status = unavailable("no backend left to serve: every rung of the ladder failed (see the events)");
        }
        break;
      }
      std::vector<const ImageJob*> batch;
      for (size_t i : todo) batch.push_back(jobs[i]);
      std::vector<EngineOutcome> res = r->run(batch);
      std::vector<size_t> again;
      std::optional<Finding> failure;
      bool failure_is_loss = false;
      for (size_t k = 0; k < todo.size(); ++k) {
        const size_t i = todo[k];
        if (last_rung[i] != name) attempts_here[i] = 0;
        last_rung[i] = name;
        ++attempts[i];
        NextStep step = next_step(options_.retry, res[k].status, ++attempts_here[i]);
        if (step == NextStep::kDone || attempts[i] >= max_attempts) {
          out[i] = std::move(res[k]);
          continue;
        }
        again.push_back(i);
        if (step == NextStep::kRetryHere) {
          log::warn("engine", "{}{}: {} on {}; retrying it there (attempt {})", where(), jobs[i]->name,
                    res[k].status.to_string(), name, attempts_here[i] + 1);
          metrics::inc("steadyocr_jobs_retried_total", {{"rung", name}});
        } else if (!failure || res[k].status.code() == StatusCode::kDeviceFault) {
          // Errors seen around a context loss belong to it: the step down is recorded with the loss itself.
          if (!failure || !failure_is_loss) failure = failure_finding(res[k].status, is_gpu_rung(name));
          failure_is_loss |= res[k].status.code() == StatusCode::kDeviceFault;
        }
      }
      if (failure) step_down(name, *failure);
      todo = std::move(again);
    }
    auto events = ladder_.events_since(seq);
    // A result served below the top rung also carries the standing step-downs that put the ladder there before this
    // batch (at startup, say): a result read on the CPU always says why it was not read on the GPU.
    std::vector<LadderEvent> standing;
    for (auto& ev : standing_events(ladder_.events())) {
      if (ev.seq <= seq) standing.push_back(std::move(ev));
    }
    const std::string top = ladder_.rungs().empty() ? std::string() : ladder_.rungs().front();
    for (size_t i = 0; i < out.size(); ++i) {
      out[i].attempts = attempts[i];
      out[i].events = events;
      out[i].gpu = options_.gpu_label;
      if (!standing.empty() && !out[i].rung.empty() && out[i].rung != top) {
        out[i].events.insert(out[i].events.begin(), standing.begin(), standing.end());
      }
      if (rerouted && (*rerouted)[i]) continue;
      const bool ok = out[i].status.is_ok();
      metrics::inc("steadyocr_images_total", {{"rung", out[i].rung}, {"status", ok ? "ok" : "error"}});
      if (!options_.gpu_label.empty()) {
        metrics::inc("steadyocr_gpu_images_total", {{"gpu", options_.gpu_label}, {"status", ok ? "ok" : "error"}});
      }
      if (ok) {
        observe_calls(out[i].result.calls);
        ++ok_;
        last_ok_ns_ = steady_ns();
      } else {
        ++failed_;
      }
    }
    in_flight_ -= static_cast<int>(jobs.size());
    return out;
  }

  // Serving on a device rung (the test rung cpu-worker standing in for one): images may be routed here.
  bool in_service() const {
    const std::string c = ladder_.current();
    return !c.empty() && is_worker_rung(c);
  }
  int in_flight() const { return in_flight_.load(); }
  const std::string& label() const { return options_.gpu_label; }
  const std::string& serving() const { return serving_; }
  const Ladder& ladder() const { return ladder_; }
  Ladder& ladder() { return ladder_; }

  std::map<std::string, SupervisorStats> worker_stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::map<std::string, SupervisorStats> s;
    for (auto& [name, r] : rungs_) {
      if (auto st = r->worker_stats()) s[name] = *st;
    }
    return s;
  }

  GpuState state() const {
    GpuState g;
    g.gpu = options_.gpu_label;
    g.device = options_.device;
    g.name = device_name_;
    g.rung = ladder_.current();
    g.in_service = in_service();
    g.in_flight = in_flight_.load();
    g.images_ok = ok_.load();
    g.images_failed = failed_.load();
    const int64_t last = last_ok_ns_.load();
    g.last_ok_age_ms = last == 0 ? -1 : (steady_ns() - last) / 1e6;
    g.events = ladder_.events();
    g.workers = worker_stats();
    return g;
  }

 private:
  std::string where() const { return options_.gpu_label.empty() ? "" : "GPU " + options_.gpu_label + ": "; }

  Rung* rung(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = rungs_.find(name);
    return it == rungs_.end() ? nullptr : it->second.get();
  }

  // Makes `name` ready to serve (creates and starts it). The failure carries the finding that rules it out.
  Status qualify(const std::string& name) {
    Rung* r = rung(name);
    if (!r) {
      std::shared_ptr<Rung> made;
      if (host_ && !is_worker_rung(name)) {
        std::lock_guard<std::mutex> lock(*host_mu_);
        std::shared_ptr<Rung>& slot = (*host_)[name];
        if (!slot) slot = std::make_shared<SharedRung>(make_rung(name, options_, false));
        made = slot;
      } else {
        made = make_rung(name, options_, name == ladder_.rungs().front());
      }
      std::lock_guard<std::mutex> lock(mu_);
      r = made.get();
      rungs_[name] = std::move(made);
    }
    return r->start();
  }

  // Marks `name` failed after qualifying the next usable rung below it, so the event names the real target.
  void step_down(const std::string& name, const Finding& why) {
    std::lock_guard<std::mutex> qualify_lock(step_mu_);
    if (ladder_.state(name) == RungState::kFailed) return;  // another image already moved us
    // Qualify the next rung first so that the event names where the work goes.
    bool below = false;
    for (auto& r : ladder_.rungs()) {
      if (r == name) {
        below = true;
        continue;
      }
      if (!below) continue;
      if (ladder_.state(r) == RungState::kHealthy) break;
      if (ladder_.state(r) == RungState::kFailed) continue;
      Status s = qualify(r);
      if (s.is_ok()) {
        ladder_.mark_healthy(r);
        break;
      }
      ladder_.mark_failed(r, s.finding() ? *s.finding() : Finding{"UNAVAILABLE", s.message(), ""});
    }
    ladder_.mark_failed(name, why);
    if (options_.reprobe && !reprobe_thread_.joinable() && name != ladder_.rungs().back()) {
      reprobe_thread_ = std::thread([this] {
        name_this_thread("so-reprobe");
        reprobe_loop();
      });
    }
  }

  void reprobe_loop() {
    while (!stop_) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      for (const std::string& name : ladder_.due_for_reprobe(std::chrono::steady_clock::now())) {
        if (stop_) return;
        Status s;
        {
          std::lock_guard<std::mutex> step(step_mu_);
          Rung* r = rung(name);
          s = r ? r->reprobe() : qualify(name);
        }
        if (s.is_ok()) {
          ladder_.mark_healthy(name);
        } else {
          ladder_.reprobe_failed(name, s.message());
        }
      }
    }
  }

  EngineOptions options_;
  Ladder ladder_;
  std::shared_ptr<RungMap> host_;
  std::shared_ptr<std::mutex> host_mu_;
  std::string device_name_;
  mutable std::mutex mu_;  // guards rungs_
  std::mutex step_mu_;     // one ladder move (or re-probe) at a time
  RungMap rungs_;
  std::atomic<bool> stop_{false};
  std::thread reprobe_thread_;
  std::atomic<int> in_flight_{0};
  std::atomic<uint64_t> ok_{0}, failed_{0};
  std::atomic<int64_t> last_ok_ns_{0};
  // Start-up only (one thread): rungs tried, the one serving, the ones ruled out before finish_start().
  std::set<std::string> tried_;
  std::string serving_;
  std::vector<std::pair<std::string, Finding>> pending_;
};

// ---- choosing the GPUs ------------------------------------------------------------------------------------------

namespace {

bool is_uuid_entry(const std::string& e) {
  return e.rfind("GPU-", 0) == 0 || e.rfind("MIG-", 0) == 0;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    std::string e = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    while (!e.empty() && e.back() == ' ') e.pop_back();
    while (!e.empty() && e.front() == ' ') e.erase(e.begin());
    out.push_back(e);
    pos = comma == std::string::npos ? s.size() + 1 : comma + 1;
  }
  return out;
}

std::string describe_visible(const doctor::DriverFacts& d) {
  if (!d.loaded) return "no CUDA driver (" + d.dlopen_error + ")";
  if (d.init_result != 0) return "cuInit failed (" + d.init_name + ")";
  std::string out = std::to_string(d.devices.size()) + " visible";
  for (const auto& dev : d.devices) out += fmt::format("; {}: {} {}", dev.index, dev.name, dev.uuid);
  return out;
}

}  // namespace

Result<std::vector<GpuChoice>> choose_gpus(const std::string& gpus, bool with_gpu_rungs) {
  if (!with_gpu_rungs) return choose_gpus_from(gpus, false, {}, {}, false);
  // NVML is asked only for MIG instances, which matter only when CUDA_VISIBLE_DEVICES does not narrow the choice.
  const bool cvd = std::getenv("CUDA_VISIBLE_DEVICES") != nullptr;
  const bool all = gpus.empty() || gpus == "all";
  return choose_gpus_from(gpus, true, doctor::probe_driver(), all && !cvd ? doctor::probe_nvml() : doctor::NvmlFacts{},
                          cvd);
}

Result<std::vector<GpuChoice>> choose_gpus_from(const std::string& gpus, bool with_gpu_rungs,
                                                const doctor::DriverFacts& d, const doctor::NvmlFacts& nvml,
                                                bool visible_devices_set) {
  const bool all = gpus.empty() || gpus == "all";
  if (all && !with_gpu_rungs) return std::vector<GpuChoice>{};
  std::vector<std::string> entries;
  if (!all) {
    entries = split_list(gpus);
    std::set<std::string> seen;
    for (const auto& e : entries) {
      if (e.empty()) return invalid_argument("--gpus '" + gpus + "': an empty entry (write e.g. 0,1)");
      if (!seen.insert(e).second) return invalid_argument("--gpus '" + gpus + "': " + e + " is listed twice");
      if (is_uuid_entry(e)) continue;
      if (e.find_first_not_of("0123456789") != std::string::npos || e.size() > 4) {
        return invalid_argument("--gpus '" + gpus + "': '" + e +
                                "' is neither a device index nor a GPU-/MIG- UUID (see `nvidia-smi -L`)");
      }
    }
  }
  if (!with_gpu_rungs) {
    // The test rung cpu-worker stands in for the devices: the entries are taken as they are.
    std::vector<GpuChoice> out;
    for (const auto& e : entries) out.push_back({e, "stand-in " + e});
    return out;
  }
  const bool listed = d.loaded && d.init_result == 0;
  std::vector<GpuChoice> out;
  if (all) {
    // MIG instances (CUDA lists one of them per process unless CUDA_VISIBLE_DEVICES names them): one worker each, from
    // NVML's list, when nothing narrowed what this process may use.
    const bool mig = !visible_devices_set && std::any_of(nvml.devices.begin(), nvml.devices.end(),
                                                         [](const auto& n) { return !n.mig_uuids.empty(); });
    if (mig) {
      for (const auto& n : nvml.devices) {
        if (n.mig_current == 1) {
          for (size_t k = 0; k < n.mig_uuids.size(); ++k)
            out.push_back({n.mig_uuids[k], n.name + " MIG " + std::to_string(k)});
        } else if (!n.uuid.empty()) {
          out.push_back({n.uuid, n.name});
        }
      }
      if (out.size() < 2) out.clear();
      return out;
    }
    // One GPU or none: the single ladder of before, CUDA's choice (the pre-flight names what is wrong).
    if (!listed || d.devices.size() < 2) return out;
    for (const auto& dev : d.devices)
      out.push_back({dev.uuid.empty() ? std::to_string(dev.index) : dev.uuid, dev.name});
    return out;
  }
  for (const auto& e : entries) {
    if (is_uuid_entry(e)) {
      std::string name;
      for (const auto& dev : d.devices) {
        if (dev.uuid == e) name = dev.name;
      }
      out.push_back({e, name});  // a MIG instance, or a GPU this process does not list: its worker's start tells
      continue;
    }
    const size_t k = std::stoul(e);
    if (!listed || k >= d.devices.size()) {
      return invalid_argument(fmt::format(
          "--gpus '{}': there is no visible device {} ({}; CUDA_VISIBLE_DEVICES={}); list indices of the visible "
          "devices, or GPU-/MIG- UUIDs from `nvidia-smi -L`",
          gpus, e, describe_visible(d),
          std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "(unset)"));
    }
    const auto& dev = d.devices[k];
    out.push_back({dev.uuid.empty() ? e : dev.uuid, dev.name});
  }
  return out;
}

// ---- the engine -------------------------------------------------------------------------------------------------

OcrEngine::OcrEngine(const EngineOptions& options)
    : options_(options), host_rungs_(std::make_shared<RungMap>()), host_mu_(std::make_shared<std::mutex>()) {}

OcrEngine::~OcrEngine() {
  for (auto& l : lanes_) l->stop();
  lanes_.clear();
  std::lock_guard<std::mutex> lock(*host_mu_);
  for (auto& [name, r] : *host_rungs_) r->stop();
}

Result<std::unique_ptr<OcrEngine>> OcrEngine::create(const EngineOptions& options) {
  std::vector<std::string> rungs = options.ladder;
  if (rungs.empty()) {
    if (options.backend == "auto" || options.backend.empty()) {
      for (auto& r : default_ladder()) {
        if (!options.require_gpu || is_device_rung(r)) rungs.push_back(r);
      }
    } else {
      if (options.require_gpu && !is_device_rung(options.backend)) {
        return invalid_argument("--require-gpu with --backend " + options.backend +
                                ": pin a cuda-* or the vulkan backend, or drop --require-gpu");
      }
      rungs.push_back(options.backend);
    }
  }
  for (auto& r : rungs) {
    if (std::find(known_rungs().begin(), known_rungs().end(), r) == known_rungs().end()) {
      return invalid_argument("unknown rung '" + r + "'");
    }
  }
  const bool with_gpu_rungs = std::any_of(rungs.begin(), rungs.end(), is_gpu_rung);
  const bool with_worker_rungs = std::any_of(rungs.begin(), rungs.end(), is_worker_rung);
  const bool gpus_given = !options.gpus.empty() && options.gpus != "all";
  if (gpus_given && !with_worker_rungs) {
    return invalid_argument("--gpus " + options.gpus + " chooses the devices of the cuda rungs, and this ladder (" +
                            rungs.front() + (rungs.size() > 1 ? "..." : "") +
                            ") has none: drop --gpus or use --backend auto or cuda-*");
  }
  ASSIGN_OR_RETURN(std::vector<GpuChoice> gpus, choose_gpus(options.gpus, with_gpu_rungs));
  if (options.threads > 0) set_num_threads(options.threads);
  // The cpu backend's image groups worked out once, here: the pipelines, the workers and the CLI's report all use
  // this number (the memory available read once, not again by each worker that starts).
  EngineOptions resolved = options;
  pipeline::resolve_host_groups(resolved.pipeline);
  std::unique_ptr<OcrEngine> e(new OcrEngine(resolved));

  std::vector<std::pair<std::string, Finding>> ruled_out;
  if (gpus.size() <= 1) {
    // One ladder: CUDA's own choice of device, or the one GPU --gpus names.
    EngineOptions o = resolved;
    // The single ladder is GPU 0: rules for another GPU have no device to fire on.
    o.faults = faults_for_gpu(options.faults, 0);
    if (o.faults.size() < options.faults.size()) {
      log::warn("fault", "{} fault rule(s) name a GPU other than 0, and this engine serves on one: not armed",
                options.faults.size() - o.faults.size());
    }
    if (gpus.size() == 1) {
      o.device = gpus[0].device;
      log::info("engine", "serving on GPU {} ({}) only: its workers get CUDA_VISIBLE_DEVICES={}", options.gpus,
                gpus[0].name.empty() ? "name not known" : gpus[0].name, o.device);
    }
    e->lanes_.push_back(std::make_unique<Lane>(o, rungs, nullptr, nullptr, gpus.empty() ? "" : gpus[0].name));
    e->lanes_[0]->start(false, &ruled_out);
    e->lanes_[0]->finish_start();
  } else {
    // One ladder per GPU, of the device rungs then the shared host rungs. Vulkan is left out: its device choice does
    // not follow CUDA's numbering.
    std::vector<std::string> lane_rungs;
    for (auto& r : rungs) {
      if (r.rfind("vulkan", 0) != 0) lane_rungs.push_back(r);
    }
    if (!std::any_of(lane_rungs.begin(), lane_rungs.end(), is_worker_rung)) {
      return invalid_argument("several GPUs (--gpus " + (options.gpus.empty() ? std::string("all") : options.gpus) +
                              ") serve on cuda rungs only; vulkan picks its own device: use one GPU with vulkan");
    }
    for (size_t k = 0; k < gpus.size(); ++k) {
      EngineOptions o = resolved;
      o.device = gpus[k].device;
      o.gpu_label = std::to_string(k);
      o.faults = faults_for_gpu(options.faults, static_cast<int>(k));
      log::info("engine", "GPU {}: {} (workers get CUDA_VISIBLE_DEVICES={})", k,
                gpus[k].name.empty() ? "name not known" : gpus[k].name, o.device);
      e->lanes_.push_back(std::make_unique<Lane>(o, lane_rungs, e->host_rungs_, e->host_mu_, gpus[k].name));
    }
    // The GPUs qualify at once, each on its own (pre-flight, models, self-test in its worker).
    std::vector<std::vector<std::pair<std::string, Finding>>> lane_out(gpus.size());
    std::vector<std::thread> starts;
    for (size_t k = 0; k < gpus.size(); ++k) {
      starts.emplace_back([&, k] { e->lanes_[k]->start(true, &lane_out[k]); });
    }
    for (auto& t : starts) t.join();
    size_t serving = 0;
    for (size_t k = 0; k < gpus.size(); ++k) {
      if (!e->lanes_[k]->serving().empty()) ++serving;
      for (auto& [r, f] : lane_out[k]) ruled_out.emplace_back("GPU " + std::to_string(k) + ": " + r, f);
    }
    if (serving > 0 && serving < gpus.size()) {
      log::warn("engine", "{} of {} GPUs serve; the others are out of service (see their events) and re-probed",
                serving, gpus.size());
    }
    // No GPU can: the host rungs, below the first GPU's device rungs, as on one GPU.
    if (serving == 0) e->lanes_[0]->start(false, &ruled_out);
    for (auto& l : e->lanes_) l->finish_start();
  }

  if (e->current_rung().empty() && ruled_out.empty()) {
    return unavailable("no backend can serve: every rung was skipped at start (see the INFO lines above)");
  }
  if (e->current_rung().empty()) {
    std::string why;
    for (auto& [r, f] : ruled_out)
      why += "\n  " + r + ": " + f.code + " — " + f.detail + (f.fix.empty() ? "" : " (fix: " + f.fix + ")");
    // The finding of the last rung ruled out (the bottom of the ladder: what stopped the last way out) travels with
    // the status, for callers that sort errors by finding (the bindings: LOAD_FAILED is a model error).
    return unavailable(
               std::string(options.require_gpu ? "--require-gpu: no GPU backend can serve" : "no backend can serve") +
               ":" + why)
        .with_finding(ruled_out.back().second);
  }
  e->publish_gpu_metrics();
  return e;
}

std::vector<size_t> OcrEngine::serving_lanes() const {
  std::vector<size_t> out;
  for (size_t k = 0; k < lanes_.size(); ++k) {
    if (lanes_[k]->in_service()) out.push_back(k);
  }
  return out;
}

std::vector<EngineOutcome> OcrEngine::ocr_batch(const std::vector<ImageJob>& jobs) {
  std::vector<const ImageJob*> all(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) all[i] = &jobs[i];
  if (lanes_.size() == 1) return lanes_[0]->ocr_batch(all, nullptr, nullptr);

  std::vector<EngineOutcome> out(jobs.size());
  std::vector<std::vector<LadderEvent>> carried(jobs.size());  // events of GPUs that handed the image back
  std::vector<size_t> todo(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) todo[i] = i;
  std::vector<size_t> handed_back(jobs.size(), 0);
  while (!todo.empty()) {
    std::vector<size_t> serving = serving_lanes();
    if (serving.empty()) {
      // No GPU serves on a device: the first with a rung left (the shared host rungs), else the first (which says
      // that nothing is left).
      size_t pick = 0;
      for (size_t k = 0; k < lanes_.size(); ++k) {
        if (!lanes_[k]->ladder().current().empty()) {
          pick = k;
          break;
        }
      }
      serving = {pick};
    }
    // Each image to the least-loaded GPU: images in flight there (every caller's) plus those given it here.
    std::vector<std::vector<size_t>> parts(lanes_.size());
    std::vector<int> load(lanes_.size(), 0);
    for (size_t k : serving) load[k] = lanes_[k]->in_flight();
    for (size_t i : todo) {
      size_t best = serving.front();
      for (size_t k : serving) {
        if (load[k] < load[best]) best = k;
      }
      parts[best].push_back(i);
      ++load[best];
    }
    std::vector<std::vector<EngineOutcome>> res(lanes_.size());
    std::vector<std::vector<char>> back(lanes_.size());
    auto run_part = [&](size_t k) {
      std::vector<const ImageJob*> part;
      for (size_t i : parts[k]) part.push_back(&jobs[i]);
      auto leave = [this, k] {
        for (size_t m = 0; m < lanes_.size(); ++m) {
          if (m != k && lanes_[m]->in_service()) return true;
        }
        return false;
      };
      res[k] = lanes_[k]->ocr_batch(part, leave, &back[k]);
    };
    std::vector<size_t> busy;
    for (size_t k = 0; k < lanes_.size(); ++k) {
      if (!parts[k].empty()) busy.push_back(k);
    }
    std::vector<std::thread> threads;
    for (size_t b = 1; b < busy.size(); ++b) threads.emplace_back(run_part, busy[b]);
    run_part(busy.front());
    for (auto& t : threads) t.join();
    std::vector<size_t> again;
    for (size_t k : busy) {
      for (size_t p = 0; p < parts[k].size(); ++p) {
        const size_t i = parts[k][p];
        EngineOutcome& o = res[k][p];
        if (back[k][p] && ++handed_back[i] <= lanes_.size()) {
          log::warn("engine", "{}: GPU {} is out of service; the image goes to another GPU", jobs[i].name, k);
          metrics::inc("steadyocr_gpu_rerouted_total", {{"gpu", std::to_string(k)}});
          carried[i].insert(carried[i].end(), o.events.begin(), o.events.end());
          again.push_back(i);
          continue;
        }
        out[i] = std::move(o);
        if (!carried[i].empty()) out[i].events.insert(out[i].events.begin(), carried[i].begin(), carried[i].end());
      }
    }
    todo = std::move(again);
  }
  publish_gpu_metrics();
  return out;
}

EngineOutcome OcrEngine::ocr(const ImageJob& job) {
  return std::move(ocr_batch({job})[0]);
}

EngineOutcome OcrEngine::ocr_on_gpu(size_t gpu, const ImageJob& job) {
  if (gpu >= lanes_.size()) {
    EngineOutcome o;
    o.status = invalid_argument(fmt::format("no GPU {} (the engine serves on {})", gpu, lanes_.size()));
    return o;
  }
  return std::move(lanes_[gpu]->ocr_batch({&job}, nullptr, nullptr)[0]);
}

std::string OcrEngine::current_rung() const {
  // The best rung any GPU serves on, in the ladder's order.
  const auto& order = lanes_.front()->ladder().rungs();
  std::string best;
  size_t best_pos = order.size() + 1;
  for (const auto& l : lanes_) {
    const std::string c = l->ladder().current();
    if (c.empty()) continue;
    const size_t pos = static_cast<size_t>(std::find(order.begin(), order.end(), c) - order.begin());
    if (pos < best_pos) {
      best = c;
      best_pos = pos;
    }
  }
  return best;
}

std::vector<LadderEvent> OcrEngine::events() const {
  if (lanes_.size() == 1) return lanes_[0]->ladder().events();
  std::vector<LadderEvent> all;
  for (const auto& l : lanes_) {
    auto ev = l->ladder().events();
    all.insert(all.end(), ev.begin(), ev.end());
  }
  std::stable_sort(all.begin(), all.end(), [](const LadderEvent& a, const LadderEvent& b) { return a.time < b.time; });
  return all;
}

const Ladder& OcrEngine::ladder() const {
  return lanes_.front()->ladder();
}

std::map<std::string, SupervisorStats> OcrEngine::worker_stats() const {
  std::map<std::string, SupervisorStats> sum;
  for (const auto& l : lanes_) {
    for (const auto& [rung, st] : l->worker_stats()) {
      SupervisorStats& s = sum[rung];
      s.jobs_ok += st.jobs_ok;
      s.jobs_failed += st.jobs_failed;
      s.retries += st.retries;
      s.worker_starts += st.worker_starts;
      s.worker_losses += st.worker_losses;
      s.hangs += st.hangs;
    }
  }
  return sum;
}

std::vector<GpuState> OcrEngine::gpus() const {
  std::vector<GpuState> out;
  for (const auto& l : lanes_) out.push_back(l->state());
  return out;
}

void OcrEngine::publish_gpu_metrics() const {
  if (lanes_.size() < 2) return;
  for (const auto& l : lanes_) {
    metrics::set_gauge("steadyocr_gpu_in_service", {{"gpu", l->label()}}, l->in_service() ? 1 : 0);
    metrics::set_gauge("steadyocr_gpu_in_flight", {{"gpu", l->label()}}, l->in_flight());
  }
}

}  // namespace steadyocr::engine

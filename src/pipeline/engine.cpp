#include "pipeline/engine.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "doctor/knowledge_base.h"
#include "doctor/layers.h"
#include "runtime/backend_registry.h"
#include "runtime/fault_injection.h"

namespace steadyocr::pipeline {
namespace {

using json = nlohmann::json;

const std::vector<std::string> kDefaultLadder = {"cuda-fp16", "cuda-fp32", "cpu", "reference"};

std::string self_exe() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("steadyocr") : p.string();
}

// Layers 1-2 of the doctor without initialising CUDA in this process: the first failing check, if any.
bool gpu_preflight(std::string* reason, std::string* detail, std::string* fix) {
  const auto& kb = doctor::KnowledgeBase::builtin();
  doctor::Layer1Facts l1 = doctor::probe_layer1();
  std::vector<doctor::CheckResult> checks = doctor::evaluate_layer1(l1);
  bool l1_ok = true;
  for (auto& c : checks) l1_ok &= c.status != doctor::CheckStatus::kFail;
  if (l1_ok) {
    auto l2 = doctor::evaluate_layer2(doctor::probe_layer2(l1.driver, /*query_runtime=*/false));
    checks.insert(checks.end(), l2.begin(), l2.end());
  }
  for (auto& c : checks) {
    if (c.status != doctor::CheckStatus::kFail) continue;
    doctor::annotate(c, kb);
    *reason = c.code.empty() ? "DOCTOR_" + c.check : c.code;
    *detail = c.summary;
    *fix = c.fix;
    return false;
  }
  return true;
}

}  // namespace

bool is_gpu_rung(const std::string& rung) {
  return rung.rfind("cuda", 0) == 0;
}
bool is_worker_rung(const std::string& rung) {
  return is_gpu_rung(rung) || rung == "cpu-worker";
}
int worker_in_flight(const EngineOptions& options, const std::string& rung) {
  if (options.worker_concurrency > 0) return options.worker_concurrency;
  // Tuning override for benchmarks (not a user setting): images in flight per worker.
  if (const char* e = std::getenv("STEADYOCR_WORKER_CONCURRENCY"); e && std::atoi(e) > 0) return std::atoi(e);
  // GPU rungs: one image per core (measured on the 16-core H200 host: 16 in flight beat 8 and 32).
  return is_gpu_rung(rung) ? std::max(4, num_threads()) : 4;
}
int worker_jobs(const EngineOptions& options, const std::string& rung) {
  // A GPU worker's jobs spend most of their time waiting for the device or in short host stages: one thread per
  // image in flight keeps the device's streams busy. A CPU worker's jobs each use every core.
  return is_gpu_rung(rung) ? worker_in_flight(options, rung) : 2;
}
std::string backend_of_rung(const std::string& rung) {
  return rung == "cpu-worker" ? "cpu" : rung;
}

OcrEngine::OcrEngine(const EngineOptions& options, std::vector<std::string> rungs)
    : options_(options), ladder_(std::move(rungs)) {}

OcrEngine::~OcrEngine() {
  stop_ = true;
  if (reprobe_thread_.joinable()) reprobe_thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [name, w] : workers_) w->stop();
}

Status OcrEngine::qualify(const std::string& rung, std::string* reason, std::string* fix) {
  if (is_gpu_rung(rung)) {
    std::string detail;
    if (!gpu_preflight(reason, &detail, fix)) return unavailable(detail);
  }
  if (is_worker_rung(rung)) {
    runtime::SupervisorOptions so;
    so.name = rung;
    so.argv = {options_.worker_exe.empty() ? self_exe() : options_.worker_exe, "__worker",
               engine_options_to_json(options_, rung, rung == ladder_.rungs().front())};
    so.job_timeout_ms = options_.job_timeout_ms;
    // A fault spec applies to the first worker only unless marked persistent ('!'): a restarted worker
    // models a device that recovered.
    if (const char* f = std::getenv("STEADYOCR_FAULT"); f && *f) {
      auto rules = runtime::parse_fault_spec(f);
      if (!rules.is_ok()) return rules.status();
      so.restart_env = {{"STEADYOCR_FAULT", runtime::persistent_fault_spec(*rules)}};
    }
    auto sup = std::make_unique<runtime::Supervisor>(so);
    auto ready = sup->start();
    if (!ready.is_ok()) {
      std::string msg = ready.status().message();
      *reason = msg.find("self-test") != std::string::npos ? "SELF_TEST_MISMATCH" : "WORKER_START_FAILED";
      *fix = "run `steadyocr doctor --level 4` for the device checks";
      return ready.status();
    }
    log::info("engine", "{} ready: {}", rung, *ready);
    std::lock_guard<std::mutex> lock(mu_);
    workers_[rung] = std::move(sup);
    return Status::ok();
  }
  std::string summary;
  auto p = build_rung_pipeline(backend_of_rung(rung), options_, options_.self_test, &summary,
                               rung == ladder_.rungs().front());
  if (!p.is_ok()) {
    *reason = p.status().message().find("self-test") != std::string::npos ? "SELF_TEST_MISMATCH" : "LOAD_FAILED";
    return p.status();
  }
  std::lock_guard<std::mutex> lock(mu_);
  pipelines_[rung] = std::move(*p);
  return Status::ok();
}

Result<std::unique_ptr<OcrEngine>> OcrEngine::create(const EngineOptions& options) {
  std::vector<std::string> rungs = options.ladder;
  if (rungs.empty()) {
    if (options.backend == "auto" || options.backend.empty()) {
      for (auto& r : kDefaultLadder) {
        if (!options.require_gpu || is_gpu_rung(r)) rungs.push_back(r);
      }
    } else {
      if (options.require_gpu && !is_gpu_rung(options.backend)) {
        return invalid_argument("--require-gpu with --backend " + options.backend +
                                ": pin a cuda-* backend or drop "
                                "--require-gpu");
      }
      rungs.push_back(options.backend);
    }
  }
  if (options.threads > 0) set_num_threads(options.threads);
  // A fault spec that does not parse is the user's mistake, not a rung failure: say so before anything runs.
  if (const char* f = std::getenv("STEADYOCR_FAULT"); f && *f) {
    auto rules = runtime::parse_fault_spec(f);
    if (!rules.is_ok()) return rules.status();
  }
  std::unique_ptr<OcrEngine> e(new OcrEngine(options, rungs));
  e->ladder_.set_backoff(std::chrono::milliseconds(options.reprobe_backoff_ms),
                         std::chrono::milliseconds(std::max(options.reprobe_backoff_ms, 300000)));
  struct Ruled {
    std::string rung, reason, detail, fix;
  };
  std::vector<Ruled> ruled_out;
  std::string serving;
  for (auto& r : rungs) {
    std::string reason, fix;
    Status s = e->qualify(r, &reason, &fix);
    if (s.is_ok()) {
      serving = r;
      break;
    }
    ruled_out.push_back({r, reason.empty() ? "UNAVAILABLE" : reason, s.message(), fix});
    log::info("engine", "{} cannot serve: {} ({})", r, reason, s.message());
  }
  if (serving.empty()) {
    std::string why;
    for (auto& r : ruled_out)
      why += "\n  " + r.rung + ": " + r.reason + " — " + r.detail + (r.fix.empty() ? "" : " (fix: " + r.fix + ")");
    return unavailable(
        std::string(options.require_gpu ? "--require-gpu: no GPU backend can serve" : "no backend can serve") + ":" +
        why);
  }
  e->ladder_.mark_healthy(serving);
  for (auto& r : ruled_out) e->ladder_.mark_failed(r.rung, r.reason, r.detail, r.fix);
  if (options.reprobe && serving != rungs.front())
    e->reprobe_thread_ = std::thread([p = e.get()] { p->reprobe_loop(); });
  return e;
}

void OcrEngine::step_down(const std::string& rung, const std::string& reason, const std::string& detail) {
  std::lock_guard<std::mutex> qualify_lock(step_mu_);
  if (ladder_.state(rung) == runtime::RungState::kFailed) return;  // another image already moved us
  // Qualify the next rung first so that the event names where the work goes.
  bool below = false;
  for (auto& r : ladder_.rungs()) {
    if (r == rung) {
      below = true;
      continue;
    }
    if (!below) continue;
    if (ladder_.state(r) == runtime::RungState::kHealthy) break;
    if (ladder_.state(r) == runtime::RungState::kFailed) continue;
    std::string why, fix;
    Status s = qualify(r, &why, &fix);
    if (s.is_ok()) {
      ladder_.mark_healthy(r);
      break;
    }
    ladder_.mark_failed(r, why.empty() ? "UNAVAILABLE" : why, s.message(), fix);
  }
  std::string fix = is_gpu_rung(rung) ? "run `steadyocr doctor --level 4`; the engine re-probes the device and "
                                        "moves back when it is healthy"
                                      : "";
  ladder_.mark_failed(rung, reason, detail, fix);
  if (options_.reprobe && !reprobe_thread_.joinable() && rung != ladder_.rungs().back()) {
    reprobe_thread_ = std::thread([this] { reprobe_loop(); });
  }
}

std::vector<EngineOutcome> OcrEngine::run_on(const std::string& rung, const std::vector<const ImageJob*>& jobs) {
  std::vector<EngineOutcome> out(jobs.size());
  if (is_worker_rung(rung)) {
    runtime::Supervisor* sup;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sup = workers_.at(rung).get();
    }
    int width = std::max(1, worker_in_flight(options_, rung));
    std::atomic<size_t> next{0};
    auto work = [&] {
      for (size_t i; (i = next++) < jobs.size();) {
        const ImageJob& j = *jobs[i];
        runtime::Message req{json{{"name", j.name}}.dump(), std::string(j.bytes.begin(), j.bytes.end())};
        auto r = sup->call(req);
        EngineOutcome& o = out[i];
        o.backend = rung;
        if (!r.is_ok()) {
          o.status = r.status();
          continue;
        }
        json h = json::parse(r->header, nullptr, false);
        if (!h.is_discarded() && h.contains("_error")) {
          std::string code = h.value("_code", "");
          StatusCode sc = code == "DEVICE_ERROR"         ? StatusCode::kDeviceError
                          : code == "OUT_OF_MEMORY"      ? StatusCode::kOutOfMemory
                          : code == "DATA_LOSS"          ? StatusCode::kDataLoss
                          : code == "RESOURCE_EXHAUSTED" ? StatusCode::kResourceExhausted
                          : code == "UNSUPPORTED"        ? StatusCode::kUnsupported
                                                         : StatusCode::kInvalidArgument;
          o.status = Status(sc, h.value("_error", ""));
          continue;
        }
        auto res = ocr_result_from_json(r->payload);
        if (!res.is_ok()) {
          o.status = res.status();
          continue;
        }
        o.result = std::move(*res);
        o.result.backend = rung;
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < std::min<int>(width, static_cast<int>(jobs.size())); ++t) threads.emplace_back(work);
    for (auto& t : threads) t.join();
    return out;
  }
  Pipeline* p;
  {
    std::lock_guard<std::mutex> lock(mu_);
    p = pipelines_.at(rung).get();
  }
  // In process: decode in parallel, then the pipeline runs host stages across images and models with all threads.
  std::vector<Result<DecodedImage>> decoded(jobs.size(), Result<DecodedImage>(internal_error("not decoded")));
  std::vector<double> decode_ms(jobs.size());
  parallel_for_each(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    Stopwatch sw;
    decoded[i] = decode_image(jobs[i]->bytes.data(), jobs[i]->bytes.size(), options_.limits);
    decode_ms[i] = sw.elapsed_ms();
  });
  std::vector<cv::Mat> images;
  std::vector<size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) {
    out[i].backend = rung;
    if (!decoded[i].is_ok()) {
      out[i].status = decoded[i].status();
      continue;
    }
    images.push_back(decoded[i]->bgr);
    index.push_back(i);
  }
  auto results = p->run_many(images);
  for (size_t k = 0; k < results.size(); ++k) {
    EngineOutcome& o = out[index[k]];
    if (!results[k].is_ok()) {
      o.status = results[k].status();
      continue;
    }
    o.result = std::move(*results[k]);
    o.result.timings.decode = decode_ms[index[k]];
    o.result.timings.total += decode_ms[index[k]];
    o.result.backend = rung;
  }
  return out;
}

std::vector<EngineOutcome> OcrEngine::ocr_batch(const std::vector<ImageJob>& jobs) {
  uint64_t seq = ladder_.last_seq();
  std::vector<EngineOutcome> out(jobs.size());
  std::vector<size_t> todo(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) todo[i] = i;
  std::vector<int> attempts(jobs.size(), 0);
  while (!todo.empty()) {
    std::string rung = ladder_.current();
    if (rung.empty()) {
      for (size_t i : todo) {
        out[i].status = unavailable("no backend left to serve: every rung of the ladder failed (see the events)");
      }
      break;
    }
    std::vector<const ImageJob*> batch;
    for (size_t i : todo) batch.push_back(&jobs[i]);
    auto res = run_on(rung, batch);
    std::vector<size_t> again;
    std::string failure_reason, failure_detail;
    for (size_t k = 0; k < todo.size(); ++k) {
      size_t i = todo[k];
      ++attempts[i];
      if (is_rung_failure(res[k].status) && attempts[i] < static_cast<int>(ladder_.rungs().size())) {
        again.push_back(i);
        if (failure_reason.empty()) {
          StatusCode c = res[k].status.code();
          failure_reason = c == StatusCode::kDeadlineExceeded ? "WORKER_HANG"
                           : c == StatusCode::kDeviceFault    ? "DEVICE_FAULT"
                           : c == StatusCode::kOutOfMemory    ? "OUT_OF_MEMORY"
                           : c == StatusCode::kUnavailable    ? "WORKER_UNAVAILABLE"
                                                              : "DEVICE_ERROR";
          failure_detail = res[k].status.message();
        }
        continue;
      }
      out[i] = std::move(res[k]);
    }
    if (!again.empty()) step_down(rung, failure_reason, failure_detail);
    todo = std::move(again);
  }
  auto events = ladder_.events_since(seq);
  // A result served below the top rung also carries the standing step-downs that put the ladder there before this
  // batch (at startup, say): a result read on the CPU always says why it was not read on the GPU.
  std::vector<runtime::LadderEvent> standing;
  {
    auto all = ladder_.events();
    size_t from = 0;
    for (size_t k = 0; k < all.size(); ++k) {
      if (all[k].climb) from = k + 1;
    }
    for (size_t k = from; k < all.size(); ++k) {
      if (!all[k].climb && all[k].seq <= seq) standing.push_back(all[k]);
    }
  }
  const std::string top = ladder_.rungs().empty() ? std::string() : ladder_.rungs().front();
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].attempts = attempts[i];
    out[i].events = events;
    if (!standing.empty() && !out[i].backend.empty() && out[i].backend != top) {
      out[i].events.insert(out[i].events.begin(), standing.begin(), standing.end());
    }
    metrics::inc("steadyocr_images_total",
                 {{"backend", out[i].backend}, {"status", out[i].status.is_ok() ? "ok" : "error"}});
  }
  return out;
}

EngineOutcome OcrEngine::ocr(const ImageJob& job) {
  return std::move(ocr_batch({job})[0]);
}

std::map<std::string, runtime::SupervisorStats> OcrEngine::worker_stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, runtime::SupervisorStats> s;
  for (auto& [name, w] : workers_) s[name] = w->stats();
  return s;
}

void OcrEngine::reprobe_loop() {
  while (!stop_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (const std::string& rung : ladder_.due_for_reprobe(std::chrono::steady_clock::now())) {
      if (stop_) return;
      std::string reason, fix;
      Status s;
      {
        std::lock_guard<std::mutex> step(step_mu_);
        if (is_worker_rung(rung)) {
          runtime::Supervisor* sup = nullptr;
          {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = workers_.find(rung);
            if (it != workers_.end()) sup = it->second.get();
          }
          if (sup && is_gpu_rung(rung)) {
            std::string detail;
            if (!gpu_preflight(&reason, &detail, &fix)) s = unavailable(detail);
          }
          if (s.is_ok()) s = sup ? sup->start().status() : qualify(rung, &reason, &fix);
        } else {
          s = qualify(rung, &reason, &fix);
        }
      }
      if (s.is_ok()) {
        ladder_.mark_healthy(rung);
      } else {
        ladder_.reprobe_failed(rung, s.message());
      }
    }
  }
}

}  // namespace steadyocr::pipeline

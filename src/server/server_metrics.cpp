#include "server/server_metrics.h"

#include "core/metrics.h"
#include "doctor/knowledge_base.h"
#include "doctor/layers.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::server {
namespace {

// Seconds: 1 ms to 2 min, about three buckets per decade.
const std::vector<double>& latency_buckets() {
  static const std::vector<double> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                               0.5,   1,      2.5,   5,    10,    30,   60,  120};
  return kBuckets;
}

}  // namespace

void describe_server_metrics() {
  using metrics::describe;
  describe("steadyocr_http_requests_total", "HTTP requests answered, by route, HTTP status and outcome (OK or code)");
  describe("steadyocr_http_request_duration_seconds", "Time from request headers to response, by route");
  describe("steadyocr_stage_duration_seconds",
           "Per-image time in each stage: queue, decode, det, post, cls, rec, total");
  describe("steadyocr_queue_depth", "Images admitted and waiting for the engine", false);
  describe("steadyocr_in_flight", "Images inside engine calls", false);
  describe("steadyocr_http_active_requests", "Requests being handled (reading, queued, running, answering)", false);
  describe("steadyocr_rung_in_use", "1 for the rung serving now (label rung, backend), 0 for the others", false);
  describe("steadyocr_ready", "1 when /readyz answers 200", false);
  describe("steadyocr_draining", "1 once SIGTERM/SIGINT started the drain", false);
  describe("steadyocr_worker_restarts_total", "Worker processes started after the first, by rung");
  describe("steadyocr_worker_losses_total", "Worker processes lost (died or hung), by rung");
  describe("steadyocr_worker_hangs_total", "Workers killed by the watchdog, by rung");
  describe("steadyocr_worker_jobs_retried_total", "Jobs retried on a restarted worker after a loss, by rung");
  describe("steadyocr_jobs_retried_total", "Jobs retried on the same rung by the engine's retry policy, by rung");
  describe("steadyocr_fallback_total", "Moves on the backend ladder, by from, to and reason");
  describe("steadyocr_deadline_dropped_total", "Images dropped at their deadline, by where (queue: never run)");
  describe("steadyocr_readiness_probes_total", "Readiness probes run through the engine, by rung and status");
  describe("steadyocr_gpu_in_service", "With several GPUs: 1 for each GPU serving on a device rung, 0 out of service",
           false);
  describe("steadyocr_gpu_in_flight", "With several GPUs: images inside engine calls on each GPU", false);
  describe("steadyocr_gpu_images_total", "With several GPUs: images read on each GPU, by gpu and status");
  describe("steadyocr_gpu_rerouted_total", "Images a GPU handed back when it left service, read on another, by gpu");
  describe("steadyocr_cpu_threads",
           "Threads parallel regions use now: --threads, fewer while other processes keep cores busy", false);
  describe("steadyocr_cpu_thread_changes_total", "Changes of steadyocr_cpu_threads, by to (fewer, more)");
  describe("steadyocr_build_info", "Build of this binary (always 1)", false);
  describe("steadyocr_doctor_check_info", "The doctor's layer 1-2 checks at start, by status and finding code", false);
  metrics::set_gauge("steadyocr_build_info",
                     {{"version", STEADYOCR_VERSION},
                      {"compiler", __VERSION__},
#ifdef NDEBUG
                      {"build_type", "release"}
#else
                      {"build_type", "debug"}
#endif
                     },
                     1);
}

void record_doctor_findings() {
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
    doctor::annotate(c, kb);
    metrics::set_gauge("steadyocr_doctor_check_info",
                       {{"layer", std::to_string(c.level)},
                        {"check", c.check},
                        {"status", doctor::status_name(c.status)},
                        {"code", c.code}},
                       1);
  }
}

void record_request(const std::string& route, int http_status, const std::string& outcome, double seconds) {
  metrics::inc("steadyocr_http_requests_total",
               {{"route", route}, {"status", std::to_string(http_status)}, {"outcome", outcome}});
  metrics::observe("steadyocr_http_request_duration_seconds", {{"route", route}}, seconds, latency_buckets());
}

void record_stages(const pipeline::StageTimes& t, double queue_ms) {
  const std::pair<const char*, double> stages[] = {
      {"queue", queue_ms}, {"decode", t.decode},         {"det", t.det}, {"post", t.post}, {"cls", t.cls},
      {"rec", t.rec},      {"total", t.total + queue_ms}};
  for (const auto& [stage, ms] : stages) {
    metrics::observe("steadyocr_stage_duration_seconds", {{"stage", stage}}, ms / 1000.0, latency_buckets());
  }
}

void refresh_live_metrics(const engine::OcrEngine* engine, const LiveFigures& live) {
  metrics::set_gauge("steadyocr_queue_depth", {}, live.queue_depth);
  metrics::set_gauge("steadyocr_in_flight", {}, live.in_flight);
  metrics::set_gauge("steadyocr_admission_memory_bytes", {{"state", "in_flight"}},
                     static_cast<double>(live.memory_in_flight));
  metrics::set_gauge("steadyocr_admission_memory_bytes", {{"state", "peak"}}, static_cast<double>(live.memory_peak));
  metrics::set_gauge("steadyocr_http_active_requests", {}, live.http_active);
  metrics::set_gauge("steadyocr_ready", {}, live.ready ? 1 : 0);
  metrics::set_gauge("steadyocr_draining", {}, live.draining ? 1 : 0);
  if (!engine) return;
  const std::string current = engine->current_rung();
  for (const auto& r : engine->ladder().rungs()) {
    metrics::set_gauge("steadyocr_rung_in_use", {{"rung", r}, {"backend", engine::backend_of_rung(r)}},
                       r == current ? 1 : 0);
  }
  if (engine->gpu_count() > 1) {
    for (const auto& g : engine->gpus()) {
      metrics::set_gauge("steadyocr_gpu_in_service", {{"gpu", g.gpu}}, g.in_service ? 1 : 0);
      metrics::set_gauge("steadyocr_gpu_in_flight", {{"gpu", g.gpu}}, g.in_flight);
    }
  }
  for (const auto& [rung, st] : engine->worker_stats()) {
    const metrics::Labels l = {{"rung", rung}};
    metrics::set_counter("steadyocr_worker_restarts_total", l,
                         static_cast<double>(st.worker_starts > 0 ? st.worker_starts - 1 : 0));
    metrics::set_counter("steadyocr_worker_losses_total", l, static_cast<double>(st.worker_losses));
    metrics::set_counter("steadyocr_worker_hangs_total", l, static_cast<double>(st.hangs));
    metrics::set_counter("steadyocr_worker_jobs_retried_total", l, static_cast<double>(st.retries));
  }
}

}  // namespace steadyocr::server

// The server's metrics, in the process-wide registry the engine counts into (core/metrics.h), rendered on /metrics.
// Every name is documented in docs/SERVING.md.
#pragma once

#include <string>

#include "engine/engine.h"
#include "pipeline/pipeline.h"

namespace steadyocr::server {

// Registers help texts and the build info; call once at start.
void describe_server_metrics();
// steadyocr_doctor_check_info{layer, check, status, code} 1 for each check of the doctor's layers 1-2 (run here
// without initialising CUDA in this process).
void record_doctor_findings();
// One answered request: steadyocr_http_requests_total{route, status, outcome} and its latency.
void record_request(const std::string& route, int http_status, const std::string& outcome, double seconds);
// One image read by the engine: stage latencies (queue, decode, det, post, cls, rec, total).
void record_stages(const pipeline::StageTimes& t, double queue_ms);

// Gauges and mirrored counters read at scrape time: queue depth, in flight, the rung in use, worker restarts.
struct LiveFigures {
  int queue_depth = 0;
  int in_flight = 0;             // images inside engine calls
  int64_t memory_in_flight = 0;  // their predicted working memory
  int64_t memory_peak = 0;       // the most it has been
  int http_active = 0;           // requests being handled
  bool ready = false;
  bool draining = false;
};
void refresh_live_metrics(const engine::OcrEngine* engine, const LiveFigures& live);

}  // namespace steadyocr::server

// `steadyocr serve`: the OCR engine behind HTTP/1.1 (docs/SERVING.md). /v1 routes take images as raw bodies,
// multipart forms or JSON with base64; /v2 speaks KServe's Open Inference Protocol; /livez, /readyz and /metrics
// tell orchestrators and people what serves and how well. Admission is a bounded queue with deadlines; SIGTERM drains.
#pragma once

#include <string>

#include "engine/options.h"

namespace steadyocr::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;          // 0: any free port (printed)
  int max_queue = 64;       // images admitted and waiting for the engine; beyond: 503 SERVER_BUSY
  int deadline_ms = 30000;  // per request, from admission to result; past it 504 (queued work is dropped)
  int max_body_mb = 32;
  int max_batch = 16;       // images per /v1/ocr/batch or OIP request
  int drain_s = 30;         // SIGTERM: in-flight requests may finish this long
  int read_timeout_s = 5;   // one read of a request may stall this long
  int body_timeout_s = 60;  // a whole body must arrive within this
  int http_threads = 256;   // connections served at once (threads start as needed)
  int concurrency = 2;      // engine calls in flight at once
  int batch_images = 0;     // images per engine call (0: by rung: a worker rung's in-flight count, else 4)
  // Predicted working memory of the images in engine calls at once, MB (0: 8192 on GPU rungs, none on CPU rungs;
  // -1: none). Large pages wait for room instead of running out of memory. Independent of --gpu-mem, which the
  // engine meets by waiting for device memory.
  int64_t admit_mem_mb = 0;
  int probe_interval_ms = 2000;  // readiness probe when idle this long
  int ready_max_age_ms = 10000;  // ready only when a real inference succeeded within this
  bool log_json = true;          // one JSON object per log line
  bool web = true;               // GET / and /web/: the page to try the server (--no-web: 404)
};

// Listens (printing the address), loads the engine (503 SERVER_STARTING meanwhile; prints the rung it serves from),
// serves until SIGTERM or SIGINT, then drains: not ready at once, new work refused, in-flight requests finish within
// drain_s. Returns the exit status: 0 after a drain, 1 when the engine cannot start on this machine, 2 when it cannot
// listen or the flags or model files are wrong.
int serve(const ServerOptions& options, const engine::EngineOptions& engine_options);

}  // namespace steadyocr::server

// The OCR engine: chooses where to run (the fallback ladder), runs GPU work in supervised worker processes,
// degrades only visibly (events with reason codes in logs, counters and every result), survives device
// faults, and climbs back when a degraded device heals. The CLI and the server talk to this.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"
#include "runtime/ladder.h"
#include "runtime/supervisor.h"

namespace steadyocr::pipeline {

struct EngineOptions {
  ModelPaths models;
  PipelineOptions pipeline;
  DecodeLimits limits;
  // "auto": the ladder cuda-fp16 → cuda-fp32 → cpu → reference; a rung name pins that one rung.
  std::string backend = "auto";
  bool require_gpu = false;     // GPU unavailability is an error carrying the doctor's finding, never a fallback
  size_t gpu_mem_mb = 0;        // device memory budget for the CUDA backend (0 = none)
  int threads = 0;              // 0 = all cores
  int job_timeout_ms = 120000;  // watchdog per image on a worker rung
  // Images in flight per worker (0: one per core (at least 4) for GPU rungs, whose worker reads that many at once, each
  // on its own thread and device stream; 4 for other worker rungs, whose worker reads 2 at once with all cores).
  // $STEADYOCR_WORKER_CONCURRENCY overrides the automatic value (benchmarks).
  int worker_concurrency = 0;
  bool self_test = true;            // compare each rung's model outputs with the reference before serving
  bool reprobe = true;              // re-probe degraded rungs in the background and climb back
  int reprobe_backoff_ms = 5000;    // first re-probe delay (doubles up to 5 min)
  std::string worker_exe;           // binary serving as worker (default: this executable)
  std::vector<std::string> ladder;  // explicit rungs (tests use {"cpu-worker", "cpu"}); empty = default
};

// One image's outcome. `events` are the ladder moves that happened while it ran (also kept by the engine).
struct EngineOutcome {
  Status status;
  OcrResult result;
  std::string backend;  // the rung that produced the result
  std::vector<runtime::LadderEvent> events;
  int attempts = 1;  // rungs tried
};

struct ImageJob {
  std::string name;
  std::vector<uint8_t> bytes;  // the encoded file
};

// Rungs of the ladder by kind.
bool is_gpu_rung(const std::string& rung);
bool is_worker_rung(const std::string& rung);  // cuda-* and the test rung cpu-worker
// Images sent to a worker rung's process at once, and how many of them it reads in parallel.
int worker_in_flight(const EngineOptions& options, const std::string& rung);
int worker_jobs(const EngineOptions& options, const std::string& rung);
// The backend a rung runs on ("cpu-worker" → "cpu").
std::string backend_of_rung(const std::string& rung);

class OcrEngine {
 public:
  // Qualifies the rungs best first (doctor layers 1-2 for GPU rungs, then model load and numerical self-test)
  // until one can serve; rungs ruled out become events. Fails when none can (or, with require_gpu, when no
  // GPU rung can), naming each rung's reason.
  static Result<std::unique_ptr<OcrEngine>> create(const EngineOptions& options);
  ~OcrEngine();

  // Reads one encoded image. Thread-safe.
  EngineOutcome ocr(const ImageJob& job);
  // Reads several images, in parallel where the rung allows; outcomes follow the input order.
  std::vector<EngineOutcome> ocr_batch(const std::vector<ImageJob>& jobs);

  std::string current_backend() const { return ladder_.current(); }
  std::vector<runtime::LadderEvent> events() const { return ladder_.events(); }
  const runtime::Ladder& ladder() const { return ladder_; }
  // Worker statistics per worker rung (restarts, retries, hangs).
  std::map<std::string, runtime::SupervisorStats> worker_stats() const;

 private:
  explicit OcrEngine(const EngineOptions& options, std::vector<std::string> rungs);
  // Makes `rung` ready to serve (starts its worker or loads its pipeline, self-test included).
  Status qualify(const std::string& rung, std::string* reason, std::string* fix);
  // Marks `rung` failed after qualifying the next usable rung below it, so the event names the real target.
  void step_down(const std::string& rung, const std::string& reason, const std::string& detail);
  std::vector<EngineOutcome> run_on(const std::string& rung, const std::vector<const ImageJob*>& jobs);
  void reprobe_loop();

  EngineOptions options_;
  runtime::Ladder ladder_;
  mutable std::mutex mu_;  // guards the maps
  std::mutex step_mu_;     // one ladder move (or re-probe) at a time
  std::map<std::string, std::unique_ptr<runtime::Supervisor>> workers_;
  std::map<std::string, std::unique_ptr<Pipeline>> pipelines_;
  std::atomic<bool> stop_{false};
  std::thread reprobe_thread_;
};

// ---- shared with the worker process (engine_worker.cpp) ------------------------------------------------

// Loads the models on `backend_name` (fault injection from $STEADYOCR_FAULT and out-of-memory recovery
// included) and, when asked, checks each model's output against the reference backend on fixed inputs.
// `self_test_summary` gets one line per model (NMSE and tolerance).
// Faults ($STEADYOCR_FAULT) are injected only when `inject_faults`: the engine injects into its top rung, the
// device whose failures are being simulated; the rungs below are the way out.
Result<std::unique_ptr<Pipeline>> build_rung_pipeline(const std::string& backend_name, const EngineOptions& options,
                                                      bool self_test, std::string* self_test_summary,
                                                      bool inject_faults);
// Decodes and reads one encoded image.
Result<OcrResult> process_image(const Pipeline& pipeline, const uint8_t* data, size_t size, const DecodeLimits& limits);
// Worker entry point (`steadyocr __worker CONFIG_JSON`): builds the rung's pipeline and serves jobs.
int worker_main(const std::string& config_json);

// Engine options and results over the worker pipe.
std::string engine_options_to_json(const EngineOptions& options, const std::string& rung, bool inject_faults);
Result<EngineOptions> engine_options_from_json(const std::string& text, std::string* rung, bool* inject_faults);
std::string ocr_result_to_json(const OcrResult& r);
Result<OcrResult> ocr_result_from_json(const std::string& text);

// True for errors that mean the rung (device/backend) failed rather than the image.
bool is_rung_failure(const Status& s);

}  // namespace steadyocr::pipeline

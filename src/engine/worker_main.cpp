// The worker process that serves a rung under the supervisor: `steadyocr __worker CONFIG_JSON`. It builds the rung's
// pipeline (self-test included) and hands every job to the pipeline's one handler, pipeline::read_images.
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/cpu_share.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "engine/rung.h"
#include "engine/wire.h"
#include "pipeline/handler.h"
#include "pipeline/pipeline.h"
#include "pipeline/visualize.h"

namespace steadyocr::engine {

using json = nlohmann::json;

// cuBLAS's own per-stream workspaces: none (worker_main).
constexpr const char* kCublasWorkspaceConfig = ":0:0";

std::string worker_config(const EngineOptions& options, const std::string& rung, bool inject) {
  return json{{"rung", rung}, {"inject_faults", inject}, {"options", options}}.dump();
}

int worker_main(const std::string& config_json) {
  // cuBLAS gives every stream of a handle a workspace from a pool of its own, sized by CUBLAS_WORKSPACE_CONFIG. The
  // CUDA backend sets its own workspace on every handle (the lane's, or the arena's head under a CUDA graph), so that
  // pool only holds memory: with 16 lanes it was 1.15 GB of the H200's 5.1 GB (2026-12-03, docs/BENCHMARKS.md). Empty
  // unless the user chose; the worker is single-threaded here, before any library reads the environment.
  if (!std::getenv("CUBLAS_WORKSPACE_CONFIG")) ::setenv("CUBLAS_WORKSPACE_CONFIG", kCublasWorkspaceConfig, 1);
  json config = json::parse(config_json, nullptr, false);
  if (config.is_discarded() || !config.is_object() || !config.contains("options")) {
    return refuse_worker(invalid_argument("worker configuration is not the engine's JSON"));
  }
  EngineOptions options;
  std::string rung;
  bool inject = false;
  try {
    rung = config.at("rung").get<std::string>();
    inject = config.value("inject_faults", false);
    options = config.at("options").get<EngineOptions>();
  } catch (const json::exception& e) {
    return refuse_worker(invalid_argument(std::string("worker configuration: ") + e.what()));
  }
  set_num_threads(options.threads);
  cpu_share::set_enabled(options.share_cores);
  const int jobs = std::max(1, worker_jobs(options, rung));
  // The cpu rung's jobs as image groups (many cores): each job's regions on its share of the threads.
  const int groups = is_device_rung(rung) ? 1 : pipeline::host_groups_here(options.pipeline, "cpu");
  // With many jobs at once each image is read on its own thread (SerialScope below): OpenCV's loops run inline too.
  const int image_threads = pipeline::set_image_threads(jobs > 2 && groups <= 1 ? 1 : num_threads());
  if (options.log_json) log::set_json(true);
  log::set_gpu(options.gpu_label);  // with several GPUs, each line of this worker names its own
  if (!options.log_level.empty()) {
    log::Level lvl;
    if (log::parse_level(options.log_level, &lvl)) log::set_level(lvl);
  }
  log::debug("worker", "{}: {} jobs at once, OpenCV threads {}", rung, jobs, image_threads);
  Stopwatch sw;
  std::string summary;
  std::shared_ptr<FaultInjector> injector = make_injector(options.faults, inject);
  injector->set_collateral(true);  // a simulated sticky fault fails the other jobs in flight, as a dead context does
  auto pipeline = build_rung_pipeline(backend_of_rung(rung), options, injector, &summary);
  if (!pipeline.is_ok()) return refuse_worker(pipeline.status());
  json ready = {{"ready", true},
                {"rung", rung},
                {"backend", (*pipeline)->backend_name()},
                {"pid", static_cast<int>(::getpid())},
                {"self_test", summary},
                {"startup_ms", sw.elapsed_ms()}};
  const pipeline::Pipeline& p = **pipeline;
  const pipeline::DecodeLimits limits = options.limits;
  std::mutex vis_mu;
  std::unique_ptr<pipeline::Visualizer> vis;
  const bool gpu = is_gpu_rung(rung);
  auto handler = [&](const Message& m) -> Result<Message> {
    // With many jobs at once, each reads its image on its own thread (no nested thread teams).
    std::optional<SerialScope> serial;
    std::optional<ThreadShareScope> share;
    if (groups > 1) {
      share.emplace(groups);
    } else if (jobs > 2) {
      serial.emplace();
    }
    json h = json::parse(m.header, nullptr, false);
    pipeline::ImageRequest req{reinterpret_cast<const uint8_t*>(m.payload.data()),
                               m.payload.size(),
                               h.is_discarded() ? std::string() : h.value("vis", std::string()),
                               {}};
    if (!h.is_discarded() && h.contains("options")) {
      try {
        req.options = h["options"].get<pipeline::ImageOptions>();
      } catch (const json::exception& e) {
        return invalid_argument(std::string("image options from the engine: ") + e.what());
      }
    }
    const pipeline::Visualizer* v = nullptr;
    if (!req.vis_format.empty()) {
      std::lock_guard<std::mutex> lock(vis_mu);
      if (!vis) vis = std::make_unique<pipeline::Visualizer>();
      v = vis.get();
    }
    pipeline::ImageReply reply = std::move(pipeline::read_images(p, {req}, limits, v)[0]);
    if (!reply.result.is_ok()) return reply.result.status();
    // The header stays small (the supervisor reads every header for its job id): the result travels in the payload,
    // followed by the visualisation's bytes when one was asked for.
    std::string payload = ocr_result_to_json(*reply.result).dump();
    json head = {{"result_bytes", payload.size()}};
    if (!reply.vis_status.is_ok()) head["vis_status"] = status_to_json(reply.vis_status);
    if (gpu) {  // the CUDA backend's device pool after this image (the engine's process mirrors it for /metrics)
      json mem = json::object();
      for (const char* state : kGpuMemoryStates) {
        mem[state] = metrics::value("steadyocr_gpu_memory_bytes", {{"device", "0"}, {"state", state}});
      }
      head["gpu_mem"] = std::move(mem);
    }
    payload.append(reply.vis.begin(), reply.vis.end());
    return Message{head.dump(), std::move(payload)};
  };
  // A device error seen after this process lost its context belongs to that loss: the worker exits without answering
  // (the supervisor retries the job on a restarted worker) instead of reporting a second, separate failure.
  int rc = serve_worker(ready.dump(), handler, jobs, [&injector] { return injector->context_lost(); });
  // Planning and device stage totals of this worker's life, for benchmarks (--log-level debug).
  std::string text = metrics::prometheus_text(), totals;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    if (line.rfind("steadyocr_cuda_", 0) == 0 || line.rfind("steadyocr_model_", 0) == 0) totals += "\n  " + line;
  }
  if (!totals.empty()) log::debug("worker", "{} totals:{}", rung, totals);
  return rc;
}

}  // namespace steadyocr::engine

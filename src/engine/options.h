// The engine's options, and their codec beside them (the whole struct crosses the worker pipe as JSON).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/faults.h"
#include "engine/recovery.h"
#include "pipeline/image_decode.h"
#include "pipeline/options_json.h"
#include "pipeline/pipeline.h"

namespace steadyocr::engine {

// The rungs of the ladder, best first: the one list of rung names. "cpu-worker" is a test rung (the cpu backend
// in a supervised worker process: the path a GPU rung takes, so fault paths are tested without a GPU). cuda-fp32
// comes before cuda-fp16 while fp16 is not faster end to end (docs/BENCHMARKS.md, "fp16 and the ladder": its plans
// cost more per new input shape, and the GPU part is not the bottleneck yet); fp16 stays next, for its smaller
// footprint, and `--backend cuda-fp16` pins it. cuda-fp32-nocudnn (every convolution as im2col/col2im + cuBLAS) keeps
// the GPU when cuDNN is missing, of another major or CUDA, or fails the self-test: the plugin loads cuDNN at run time,
// so a cuDNN problem costs the cuDNN rungs only (0.95-0.98x the speed, docs/BENCHMARKS.md). vulkan (compute shaders
// through the Vulkan driver, no CUDA at all) keeps the GPU when the CUDA stack itself is out (driver/runtime
// mismatch, no CUDA plugin for the card); a Vulkan device that is a CPU implementation (lavapipe) is not put on the
// ladder (runtime/vulkan_plugin.h: vulkan_ladder_device).
inline const std::vector<std::string>& default_ladder() {
  static const std::vector<std::string> kLadder = {"cuda-fp32", "cuda-fp16", "cuda-fp32-nocudnn",
                                                   "vulkan",    "cpu",       "reference"};
  return kLadder;
}
inline const std::vector<std::string>& known_rungs() {
  static const std::vector<std::string> kRungs = {
      "cuda-fp32",   "cuda-fp16", "cuda-fp32-nocudnn", "cuda-fp16-nocudnn", "vulkan",
      "vulkan-fp16", "cpu",       "reference",         "cpu-worker"};
  return kRungs;
}

struct EngineOptions {
  pipeline::ModelPaths models;
  pipeline::PipelineOptions pipeline;
  pipeline::DecodeLimits limits;
  // "auto": the ladder cuda-fp32 → cuda-fp16 → cuda-fp32-nocudnn → vulkan → cpu → reference; a rung name pins that one
  // rung.
  std::string backend = "auto";
  bool require_gpu = false;  // GPU unavailability is an error carrying the doctor's finding, never a fallback
  // Device memory budget of the CUDA backend, MiB: kGpuMemAuto (the default) sizes it from the pipeline's largest
  // shapes (gpu_mem_budget_mb), 0 = none.
  int64_t gpu_mem_mb = -1;
  int threads = 0;  // 0 = all cores
  // Parallel regions shrink to the cores other processes leave free (core/cpu_share.h); false keeps `threads`
  // (STEADYOCR_SHARE_CORES=off, read by the front door).
  bool share_cores = true;
  // Watchdog per image on a worker rung (--watchdog); 0: the rung's default (worker_watchdog_ms).
  int job_timeout_ms = 0;
  // Images in flight per worker (0: one per core (at least 4) for GPU rungs, whose worker reads that many at once, each
  // on its own thread and device stream; 4 for other worker rungs, whose worker reads 2 at once with all cores).
  int worker_concurrency = 0;
  bool self_test = true;  // compare each rung's model outputs with the reference before serving
  // Where the self-test keeps the reference's outputs between processes ("" for nowhere; engine/reference_cache.h).
  std::string cache_dir;
  bool reprobe = true;              // re-probe degraded rungs in the background and climb back
  int reprobe_backoff_ms = 5000;    // first re-probe delay (doubles up to 5 min)
  std::string worker_exe;           // binary serving as worker (default: this executable)
  std::vector<std::string> ladder;  // explicit rungs (tests use {"cpu-worker", "cpu"}); empty = default
  // Faults to inject into the top rung (parsed once from $STEADYOCR_FAULT by the front door; engine/faults.h).
  std::vector<FaultRule> faults;
  RetryPolicy retry;
  std::string log_level;  // the level worker processes log at ("" = their default)
  bool log_json = false;  // worker processes log JSON lines (as the server does)
  // The GPUs to serve on (--gpus): "" or "all" = every visible one, else indices of the visible devices or GPU-/MIG-
  // UUIDs, comma-separated (engine/engine.h: choose_gpus). Two or more: one ladder per GPU.
  std::string gpus;
  // Set by the engine for one GPU's ladder: its workers' CUDA_VISIBLE_DEVICES ("" = as inherited) and its index
  // among the engine's GPUs ("" with a single ladder).
  std::string device;
  std::string gpu_label;
};

inline constexpr int64_t kGpuMemAuto = -1;
// The budget at the default detector side (960) and recognition merge (48 rows): what 16 images in flight need at
// 0.97-0.98x the throughput of no budget on the H200, the process then staying within 1.5 GiB serving too (1435 MiB
// in bench, 1457 serving, where 640 peaked at 1585 serving; docs/BENCHMARKS.md, "Device memory by default").
inline constexpr int64_t kGpuMemAutoBaseMb = 576;
// The CUDA backend's device memory budget in MiB for `rung` (0: none): --gpu-mem when given; by default (kGpuMemAuto)
// kGpuMemAutoBaseMb on cuda rungs, scaled by the larger of (det_limit_side / 960)^2 and the recognition rows merged
// into one call / 48, so that a larger detector input or merge still fits; none on other rungs.
int64_t gpu_mem_budget_mb(const EngineOptions& options, const std::string& rung);

// Rungs of the ladder by kind.
bool is_gpu_rung(const std::string& rung);
bool is_worker_rung(const std::string& rung);  // cuda-*, vulkan and the test rung cpu-worker
// Rungs whose work waits on a device (cuda-*, vulkan): one image in flight per core in their worker.
bool is_device_rung(const std::string& rung);
// Images sent to a worker rung's process at once, and how many of them it reads in parallel.
int worker_in_flight(const EngineOptions& options, const std::string& rung);
int worker_jobs(const EngineOptions& options, const std::string& rung);
// The worker watchdog of `rung`, ms: --watchdog when given; by default kWorkerWatchdogMs, and kCpuVulkanWatchdogMs on a
// vulkan rung whose device is a CPU implementation (`cpu_vulkan_device`: lavapipe on two cores took over 120 s for
// some pages and lost 3 workers per 8-page run to the watchdog, 2026-12-07; the Vulkan hang limit is likewise 60 s on
// a GPU and 600 s on a CPU device).
inline constexpr int kWorkerWatchdogMs = 120000;
inline constexpr int kCpuVulkanWatchdogMs = 600000;
int worker_watchdog_ms(const EngineOptions& options, const std::string& rung, bool cpu_vulkan_device);
// The gpu label of per-GPU metrics: the engine's index of the GPU ("0" with a single ladder).
std::string gpu_metric_label(const EngineOptions& options);
// The backend a rung runs on ("cpu-worker" → "cpu").
std::string backend_of_rung(const std::string& rung);

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(FaultRule, kind, stage, nth, from_nth_on, persistent, until_ms, gpu)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RetryPolicy, worker_attempts, restarts_in_row, oom_retries,
                                                attempts_per_rung)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EngineOptions, models, pipeline, limits, backend, require_gpu,
                                                gpu_mem_mb, threads, share_cores, job_timeout_ms, worker_concurrency,
                                                self_test, cache_dir, reprobe, reprobe_backoff_ms, worker_exe, ladder,
                                                faults, retry, log_level, log_json, gpus, device, gpu_label)

}  // namespace steadyocr::engine

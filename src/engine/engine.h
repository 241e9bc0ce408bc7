// The OCR engine: chooses where to run (the fallback ladder of rungs), runs GPU work in supervised worker processes,
// degrades only visibly (events built from findings in logs, counters and every result), survives device faults
// under one retry policy (engine/recovery.h), and climbs back when a degraded device heals. The CLI, the server and
// the bindings talk to this.
//
// Several GPUs: one ladder per GPU (its own workers, pinned to the device by CUDA_VISIBLE_DEVICES, qualified on their
// own: pre-flight, model load, self-test), and each image goes to the least-loaded GPU that serves on a device rung.
// A GPU whose device rungs all fail leaves service alone, visibly (an event naming the GPU, /readyz, /metrics); its
// images go to the others, and it is re-probed and climbs back like any rung. The host rungs (cpu, reference) are
// shared: they serve only when no GPU can. One GPU, or none, is the single ladder of before.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "doctor/probes.h"
#include "engine/ladder.h"
#include "engine/options.h"
#include "engine/rung.h"
#include "engine/supervisor.h"

namespace steadyocr::engine {

class Lane;

// One GPU of the engine, as results, logs, /readyz and /metrics show it.
struct GpuState {
  std::string gpu;     // the engine's index of it: "0", "1", ... (the K of --gpus's order and of fault rules' gpuK/)
  std::string device;  // what its workers get as CUDA_VISIBLE_DEVICES (a GPU-/MIG- UUID or an index)
  std::string name;    // the device's name, when the driver told it
  std::string rung;    // the rung its ladder serves on ("" when none)
  bool in_service = false;  // serving on a device rung: images are routed to it
  int in_flight = 0;
  uint64_t images_ok = 0, images_failed = 0;
  double last_ok_age_ms = -1;  // since its last good image (-1: none yet)
  std::vector<LadderEvent> events;
  std::map<std::string, SupervisorStats> workers;
};

class OcrEngine {
 public:
  // Qualifies the rungs best first (doctor layers 1-2 for GPU rungs, then model load and numerical self-test)
  // until one can serve; rungs ruled out become events with their findings. Fails when none can (or, with
  // require_gpu, when no GPU rung can), naming each rung's finding. With several GPUs (EngineOptions::gpus), each
  // qualifies on its own; the engine starts when one of them (or, without require_gpu, a host rung) serves.
  static Result<std::unique_ptr<OcrEngine>> create(const EngineOptions& options);
  ~OcrEngine();

  // Reads one encoded image. Thread-safe.
  EngineOutcome ocr(const ImageJob& job);
  // Reads several images, in parallel where the rung allows; outcomes follow the input order. With several GPUs the
  // images are spread over those in service, each to the least loaded.
  std::vector<EngineOutcome> ocr_batch(const std::vector<ImageJob>& jobs);
  // Reads one image on GPU `gpu` only (the readiness probe of each device); not routed elsewhere.
  EngineOutcome ocr_on_gpu(size_t gpu, const ImageJob& job);

  // The rung serving now: the best one any GPU serves on ("" when none is left).
  std::string current_rung() const;
  // Ladder moves of every GPU, oldest first.
  std::vector<LadderEvent> events() const;
  // The first GPU's ladder (with one GPU, the ladder): the rungs in order.
  const Ladder& ladder() const;
  // Worker statistics per worker rung (restarts, retries, hangs), summed over the GPUs.
  std::map<std::string, SupervisorStats> worker_stats() const;
  // The GPUs the engine serves on (one entry, gpu "", when it runs a single ladder without choosing a device).
  size_t gpu_count() const { return lanes_.size(); }
  // The options the engine runs with: as given, with the automatic counts worked out (pipeline.host_groups).
  const EngineOptions& options() const { return options_; }
  std::vector<GpuState> gpus() const;

 private:
  explicit OcrEngine(const EngineOptions& options);
  // The lanes in service now (serving on a device rung), best rung first then least loaded.
  std::vector<size_t> serving_lanes() const;
  void publish_gpu_metrics() const;

  EngineOptions options_;
  std::vector<std::unique_ptr<Lane>> lanes_;
  std::shared_ptr<std::map<std::string, std::shared_ptr<Rung>>> host_rungs_;  // shared by the lanes
  std::shared_ptr<std::mutex> host_mu_;
};

// The devices EngineOptions::gpus selects: "" or "all" = every GPU this process sees (none, or one: a single ladder
// that leaves the choice to CUDA); "0,2" = those of the visible devices, by index; GPU-/MIG- UUIDs as given (a MIG
// instance each). An index beyond the visible devices, a repeat or a malformed entry is an invalid-argument error
// that lists what is visible. `with_gpu_rungs`: the ladder has a cuda rung (otherwise indices are taken as they are,
// the test rung cpu-worker standing in for the devices).
struct GpuChoice {
  std::string device;  // the workers' CUDA_VISIBLE_DEVICES ("" = leave it as it is)
  std::string name;
};
Result<std::vector<GpuChoice>> choose_gpus(const std::string& gpus, bool with_gpu_rungs);
// The same on facts (tests give them): `all` with MIG instances on the machine and CUDA_VISIBLE_DEVICES unset is one
// entry per MIG instance (and per GPU without MIG), by NVML's UUIDs.
Result<std::vector<GpuChoice>> choose_gpus_from(const std::string& gpus, bool with_gpu_rungs,
                                                const doctor::DriverFacts& driver, const doctor::NvmlFacts& nvml,
                                                bool visible_devices_set);

}  // namespace steadyocr::engine

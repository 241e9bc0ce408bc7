// A rung of the ladder: one place the engine can read images. Two kinds: in process (a backend in this process)
// and worker (a backend in a supervised worker process, so a sticky device fault costs a restart, not the run).
// Both hand each image to the pipeline's one handler (pipeline/handler.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "doctor/probes.h"
#include "engine/ladder.h"
#include "engine/options.h"
#include "engine/supervisor.h"
#include "pipeline/pipeline.h"

namespace steadyocr::engine {

// The states of steadyocr_gpu_memory_bytes that a GPU worker reports after each image (the CUDA device pool,
// backends/cuda/device.h) and the engine's process mirrors per rung, for /metrics and bench.
inline constexpr const char* kGpuMemoryStates[] = {"in_use",      "cached",      "mapped",
                                                   "mapped_peak", "device_used", "device_used_at_start"};

struct ImageJob {
  std::string name;
  std::vector<uint8_t> bytes;  // the encoded file
  // Also return the visualisation (boxes and text drawn over the picture), encoded in this format (".jpg", ".png";
  // "" = none). It is drawn from the picture decoded for reading, wherever that ran.
  std::string vis_format;
  // This image's changes to the pipeline's options (a server request's thresholds, mode, classifier).
  pipeline::ImageOptions options;
};

// One image's outcome. `events` are the ladder moves that happened while it ran (also kept by the engine).
struct EngineOutcome {
  Status status;
  pipeline::OcrResult result;  // result.backend: the backend the models ran on
  std::string rung;            // the rung that produced the result (e.g. cpu-worker, whose backend is cpu)
  std::string gpu;             // with several GPUs, the engine's GPU that read it ("0", "1", ...); "" otherwise
  std::vector<LadderEvent> events;
  int attempts = 1;          // tries, on every rung
  std::vector<uint8_t> vis;  // the encoded visualisation, when asked for
  Status vis_status;         // why it could not be drawn (the result stands)
};

class Rung {
 public:
  explicit Rung(std::string name) : name_(std::move(name)) {}
  virtual ~Rung() = default;
  const std::string& name() const { return name_; }

  // Qualifies the rung and makes it ready to serve: the doctor's layers 1-2 for GPU rungs, model load, numerical
  // self-test. A failure carries the finding that rules the rung out.
  virtual Status start() = 0;
  // Checks a failed rung again (re-probe) and makes it ready when it passes.
  virtual Status reprobe() { return start(); }
  // Reads the jobs; outcomes follow the input order.
  virtual std::vector<EngineOutcome> run(const std::vector<const ImageJob*>& jobs) = 0;
  // Worker statistics (restarts, retries, hangs), for worker rungs.
  virtual std::optional<SupervisorStats> worker_stats() const { return std::nullopt; }
  virtual void stop() {}

 private:
  std::string name_;
};

// The rung named `name` (a name of known_rungs()). `top`: the best rung of this engine's ladder, the one faults are
// injected into (the rungs below are the way out).
std::unique_ptr<Rung> make_rung(const std::string& name, const EngineOptions& options, bool top);

// ---- qualification, shared by both kinds (qualify.cpp) --------------------------------------------------

// Layers 1-2 of the doctor without initialising CUDA in this process: the first failing check as a kUnavailable
// status carrying its finding, or OK.
// `device` (a GPU's UUID, with several GPUs): judged on that device alone, so that a problem of another card (no
// kernels for its architecture, say) does not rule this one out.
Status gpu_preflight(const std::string& device = "");
// The facts as a process pinned to `device` (a GPU- UUID) sees them: that device alone in the driver's and NVML's
// lists. Other values (none, an index, a MIG instance) leave them as they are.
doctor::Layer1Facts facts_for_device(doctor::Layer1Facts facts, const std::string& device);
// The vulkan rung's pre-flight: the plugin loaded and a device usable; `on_ladder` (--backend auto) also refuses a
// Vulkan device that is a CPU implementation unless STEADYOCR_VULKAN_CPU_DEVICES=1.
Status vulkan_preflight(bool on_ladder);

// Loads the models on `backend_name` (faults from `injector` injected into every model call, out-of-memory recovery
// around each model) and, when options.self_test, compares each model's output with the reference backend on fixed
// inputs (a mismatch is a kDeviceError with the finding SELF_TEST_MISMATCH). `self_test_summary` gets one line per
// model.
Result<std::unique_ptr<pipeline::Pipeline>> build_rung_pipeline(const std::string& backend_name,
                                                                const EngineOptions& options,
                                                                const std::shared_ptr<FaultInjector>& injector,
                                                                std::string* self_test_summary);

// Worker entry point (`steadyocr __worker CONFIG_JSON`): builds the rung's pipeline and serves jobs.
int worker_main(const std::string& config_json);
// The worker's configuration: the rung, whether faults are injected, and the engine options.
std::string worker_config(const EngineOptions& options, const std::string& rung, bool inject);

}  // namespace steadyocr::engine

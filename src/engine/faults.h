// Fault injection (STEADYOCR_FAULT) so that every recovery path is tested without broken hardware.
//
//   STEADYOCR_FAULT = rule[,rule...]   (',' or ';' between rules)
//   rule  = ["gpu" K "/"] kind "@" stage [":" N ["+"]] ["!"]
//   kind  = oom | oom_batch | sticky | illegal_address | launch_failure | hang | error | no_kernel_image |
//           cudnn_not_supported
//   stage = det | rec | cls | any
//   N     = the Nth call of that stage in the process (1-based, default 1); "N+" = every call from the Nth on
//   "!"   = persistent: the rule also applies in restarted workers (a device that stays bad); without it a rule
//           fires only in the first worker process, like a transient fault.
//   "gpuK/" = only on the engine's GPU K (with several GPUs, engine/engine.h; K counts the GPUs the engine serves on,
//           from 0); without it a rule applies on every GPU, each counting its own calls
//   "!~S" = persistent for S seconds from when the spec was read, then never again (a device that heals: the
//           engine's re-probe finds it good and climbs back).
// oom: out of memory once (recovered by freeing caches and retrying); oom_batch: out of memory whenever the
// batch holds more than one item (recovered by splitting the batch); sticky/illegal_address/launch_failure:
// the device context is lost (on a CUDA backend the plugin launches a real faulting kernel; simulated in a worker
// process, every other model call in flight there then fails too, as on a dead context); hang: the call never returns
// (the watchdog must catch it); error, no_kernel_image, cudnn_not_supported: a non-sticky device error. On a CUDA
// backend the engine arms the plugin's real fault (docs/FAULTS.md) for the chosen call.
//
// The variable is read once, at the front door (the CLI), into EngineOptions::faults; the engine hands the plan to
// its top rung (in process, or through the worker's configuration).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/model.h"

namespace steadyocr::engine {

struct FaultRule {
  std::string kind;
  std::string stage;
  int64_t nth = 1;
  bool from_nth_on = false;
  bool persistent = false;
  int64_t until_ms = 0;  // "!~S": wall-clock time (ms since the epoch, shared by worker processes) the rule ends
  int gpu = -1;          // "gpuK/": the engine's GPU K only; -1: every GPU
  std::string describe() const;
  bool expired() const;
  bool operator==(const FaultRule&) const = default;
};

// Parses a STEADYOCR_FAULT value; an unknown kind/stage or bad number is an error quoting the rule.
Result<std::vector<FaultRule>> parse_fault_spec(const std::string& spec);
// The rules as a spec again ("" for none).
std::string fault_spec(const std::vector<FaultRule>& rules);
// The spec a restarted worker gets: only the persistent rules.
std::string persistent_fault_spec(const std::vector<FaultRule>& rules);
// The rules that apply on the engine's GPU `gpu` (those without "gpuK/" and those for K = gpu), device prefix dropped.
std::vector<FaultRule> faults_for_gpu(const std::vector<FaultRule>& rules, int gpu);

// Counts calls per stage and decides when a rule fires. Process-wide by design: the counter is "the Nth det
// call of this process".
class FaultInjector {
 public:
  explicit FaultInjector(std::vector<FaultRule> rules) : rules_(std::move(rules)) {}
  // The rule firing on this call of `stage` with a batch of `batch` items, or null.
  const FaultRule* on_call(const std::string& stage, int64_t batch);
  bool empty() const { return rules_.empty(); }

  // Whether a simulated sticky fault also fails the other model calls of this process (those in flight and those
  // after it), as a dead context does. On in worker processes, which such a fault ends; off by default.
  void set_collateral(bool on) { collateral_ = on; }
  bool collateral() const { return collateral_; }
  // A simulated sticky fault fired: with collateral, the context of this process counts as lost from now on.
  void lose_context() { context_lost_ = collateral_; }
  bool context_lost() const { return context_lost_.load(); }

  // On a real device: a hook that arms the device fault of `kind` for the next run (returns false when the
  // device cannot produce it, and the fault is then simulated).
  void set_device_hook(std::function<bool(const std::string& kind)> hook) { device_hook_ = std::move(hook); }
  const std::function<bool(const std::string&)>& device_hook() const { return device_hook_; }

 private:
  std::vector<FaultRule> rules_;
  std::mutex mu_;
  std::vector<std::pair<std::string, int64_t>> counts_;
  bool collateral_ = false;
  std::atomic<bool> context_lost_{false};
  std::function<bool(const std::string&)> device_hook_;
};

// The injector of a rung: the plan's rules when `inject` (the top rung), none otherwise. Logs every armed rule.
std::shared_ptr<FaultInjector> make_injector(const std::vector<FaultRule>& rules, bool inject);

// Wraps a stage's runner and injects the faults the injector fires for that stage.
class FaultInjectingRunner : public runtime::Runner {
 public:
  FaultInjectingRunner(std::string stage, std::shared_ptr<runtime::Runner> inner,
                       std::shared_ptr<FaultInjector> injector)
      : stage_(std::move(stage)), inner_(std::move(inner)), injector_(std::move(injector)) {}
  Result<Tensor> run(const Tensor& input) override { return run_call(input, nullptr); }
  Result<Tensor> run_call(const Tensor& input, runtime::CallInfo* info) override;
  std::string backend_name() const override { return inner_->backend_name(); }

 private:
  std::string stage_;
  std::shared_ptr<runtime::Runner> inner_;
  std::shared_ptr<FaultInjector> injector_;
};

}  // namespace steadyocr::engine

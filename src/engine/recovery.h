// Recovery: what the engine does when a job fails — one policy, in one place. Three mechanisms apply it:
//   - out of memory inside a model call (OomResilientRunner): free caches and retry, then split the batch;
//   - a worker lost mid-job (the Supervisor): the job is retried on a restarted worker;
//   - a rung failure seen by the engine (RetryPolicy::after): retried on the same rung first when it may belong to a
//     context loss that the restart has already healed, then the rung is stepped down.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "runtime/model.h"

namespace steadyocr::engine {

struct RetryPolicy {
  // A job whose worker died or hung is retried on a restarted worker up to this many tries in all.
  int worker_attempts = 3;
  // Worker losses without a success in between after which the rung counts as failed (no more restarts).
  int restarts_in_row = 3;
  // Out of memory: retries after freeing caches before the batch is split in halves.
  int oom_retries = 1;
  // A rung failure is tried this many times on the same rung before the rung is stepped down: a device error
  // seen around a context loss belongs to that loss, and the restarted worker serves it.
  int attempts_per_rung = 2;
};

enum class NextStep {
  kDone,       // the outcome stands (a result, or the image's own error)
  kRetryHere,  // run it again on the same rung
  kStepDown,   // the rung failed: step down and run it on the next one
};

// True for errors that mean the rung (device/backend) failed rather than the image.
bool is_rung_failure(const Status& s);

// What to do after a job's attempt number `attempt` (1-based) on its rung ended with `s`.
NextStep next_step(const RetryPolicy& policy, const Status& s, int attempt);

// The finding a rung failure is recorded with: the status' own finding, or one named by its code (DEVICE_FAULT,
// WORKER_HANG, OUT_OF_MEMORY, DEVICE_ERROR, WORKER_UNAVAILABLE) with the detail and the fix.
Finding failure_finding(const Status& s, bool gpu);

// Recovers from out-of-memory: frees caches and retries, then splits the batch (axis 0) and runs the halves,
// and reports a capacity error only when a single item does not fit. Every recovery is logged and counted.
class OomResilientRunner : public runtime::Runner {
 public:
  // `free_caches` releases what the backend can give back (plan caches, arena slack); may be null.
  OomResilientRunner(std::string stage, std::shared_ptr<runtime::Runner> inner, std::function<void()> free_caches,
                     RetryPolicy policy = {})
      : stage_(std::move(stage)), inner_(std::move(inner)), free_caches_(std::move(free_caches)), policy_(policy) {}
  Result<Tensor> run(const Tensor& input) override { return run_call(input, nullptr); }
  // The call's profile sums every attempt and part.
  Result<Tensor> run_call(const Tensor& input, runtime::CallInfo* info) override;
  std::string backend_name() const override { return inner_->backend_name(); }

 private:
  Result<Tensor> attempt(const Tensor& input, runtime::CallInfo* info);
  Result<Tensor> run_split(const Tensor& input, int depth, runtime::CallInfo* info);
  std::string stage_;
  std::shared_ptr<runtime::Runner> inner_;
  std::function<void()> free_caches_;
  RetryPolicy policy_;
};

// Concatenates tensors along axis 0 (same trailing shape).
Result<Tensor> concat_batch(const std::vector<Tensor>& parts);
// Rows [begin, end) of axis 0 as a new tensor.
Tensor slice_batch(const Tensor& t, int64_t begin, int64_t end);

}  // namespace steadyocr::engine

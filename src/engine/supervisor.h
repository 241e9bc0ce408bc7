// Runs work in supervised worker processes: a fault that kills the process (a sticky CUDA error, a crash)
// or hangs it loses only that worker; in-flight jobs are retried on a restarted worker, and the caller
// is told when retries run out. Generic over the job (header JSON + payload bytes), so the OCR engine and
// the server use the same supervisor.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/status.h"
#include "engine/ipc.h"

namespace steadyocr::engine {

struct SupervisorOptions {
  std::string name = "worker";    // for logs and events
  std::vector<std::string> argv;  // the worker command; it speaks ipc.h frames on fds 3 (in) and 4 (out)
  std::vector<std::pair<std::string, std::string>> env;  // added to the worker's environment
  // The command of every worker after the first, when it differs (e.g. a transient fault dropped on restart).
  std::vector<std::string> restart_argv;
  int startup_timeout_ms = 120000;  // until the worker says it is ready
  int job_timeout_ms = 60000;       // watchdog: a job running longer means the worker hangs
  // The engine sets these from its RetryPolicy (engine/recovery.h), the one place retries are decided.
  int max_attempts = 3;         // tries of one job (each on a fresh worker after a loss)
  int max_restarts_in_row = 3;  // worker losses without a success in between before we stop restarting
};

struct SupervisorEvent {
  std::string kind;    // worker_started | worker_exited | worker_killed_hang | job_retried | job_failed
  std::string detail;  // exit status, signal, job id, ...
};

struct SupervisorStats {
  uint64_t jobs_ok = 0;
  uint64_t jobs_failed = 0;
  uint64_t retries = 0;
  uint64_t worker_starts = 0;
  uint64_t worker_losses = 0;  // deaths + hangs
  uint64_t hangs = 0;
};

class Supervisor {
 public:
  explicit Supervisor(SupervisorOptions options);
  ~Supervisor();
  Supervisor(const Supervisor&) = delete;
  Supervisor& operator=(const Supervisor&) = delete;

  // Starts a worker and waits for its ready message; returns the ready header (worker-reported facts),
  // or the error the worker gave / how it died.
  Result<std::string> start();
  // Runs one job; thread-safe and concurrent. A worker loss (death or hang) retries the job on a new
  // worker up to max_attempts; then kDeviceFault (died) or kDeadlineExceeded (hung) naming the cause, with the
  // finding DEVICE_FAULT or WORKER_HANG. A job answered with an error by a healthy worker is a reply whose
  // reply_status() is that error (code and finding intact), not retried.
  Result<Message> call(const Message& request);
  // False once workers keep dying (max_restarts_in_row) until a later start() succeeds.
  bool healthy() const { return healthy_.load(); }
  std::vector<SupervisorEvent> drain_events();
  SupervisorStats stats() const;
  // Ready header of the current worker ("" when none).
  std::string ready_info() const;
  void stop();

 private:
  struct Worker;
  struct Pending {
    bool done = false;
    bool lost = false;  // the worker went away before answering
    bool hung = false;
    Status status;
    Message reply;
    uint64_t generation = 0;
  };

  Result<std::shared_ptr<Worker>> ensure_worker(std::unique_lock<std::mutex>& lock);
  Result<std::shared_ptr<Worker>> spawn(std::string* ready_header);
  void reader_loop(std::shared_ptr<Worker> w);
  void lose_worker(const std::shared_ptr<Worker>& w, const std::string& why, bool hang);
  void add_event(std::string kind, std::string detail);

  SupervisorOptions options_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::shared_ptr<Worker> worker_;
  std::map<uint64_t, std::shared_ptr<Pending>> pending_;
  uint64_t next_id_ = 1;
  uint64_t generation_ = 0;
  int losses_in_row_ = 0;
  std::atomic<bool> healthy_{true};
  std::vector<SupervisorEvent> events_;
  SupervisorStats stats_;
  std::string ready_info_;
  std::vector<std::thread> readers_;
};

// The error a worker answered a job with (OK for a result): every status code and its finding survive the pipe.
Status reply_status(const Message& reply);

// Worker side: serves jobs from fd 3, answers on fd 4, running up to `concurrency` jobs at once.
// `ready_header` is sent first. A handler returning kDeviceFault means the device context is lost:
// the worker exits at once (code 70) without answering, so the supervisor retries elsewhere.
// `context_lost`, when given, is asked after a job failed with a device error: true means the device context of
// this process is gone (the error is collateral of that loss), and the worker exits as for kDeviceFault.
using WorkerHandler = std::function<Result<Message>(const Message& request)>;
int serve_worker(const std::string& ready_header, const WorkerHandler& handler, int concurrency = 2,
                 const std::function<bool()>& context_lost = nullptr);
// Sends a not-ready message with the error (used when start-up fails) and returns the exit code to use.
int refuse_worker(const Status& why);

}  // namespace steadyocr::engine

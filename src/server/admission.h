// Admission: a bounded queue of images in front of the engine, a few dispatcher threads that hand them to it in
// batches, and per-request deadlines. A full queue refuses at once (the HTTP thread answers SERVER_BUSY without
// waiting); queued work whose deadline passed is dropped, never run.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/engine.h"

namespace steadyocr::server {

using Clock = std::chrono::steady_clock;

struct AdmissionOptions {
  int max_queue = 64;    // images waiting for the engine
  int concurrency = 2;   // engine calls in flight at once
  int batch_images = 4;  // images handed to one engine call at most
};

// One request's images on their way through the engine. Fields are guarded by the Admission's lock.
struct Ticket {
  enum class State { kQueued, kRunning, kDone, kDropped, kCancelled };
  std::vector<engine::ImageJob> jobs;
  std::vector<engine::EngineOutcome> outcomes;  // when kDone, in the jobs' order
  State state = State::kQueued;
  bool abandoned = false;  // the caller stopped waiting (deadline): the result is discarded
  Clock::time_point admitted, started, finished, deadline;
  double queue_ms() const;
};

class Admission {
 public:
  Admission(engine::OcrEngine* engine, AdmissionOptions options);
  ~Admission();

  // Queues `jobs` as one ticket, all or none: null when the queue has no room for them (or stopped).
  std::shared_ptr<Ticket> submit(std::vector<engine::ImageJob> jobs, Clock::time_point deadline);

  enum class Wait { kDone, kDeadline, kCancelled };
  // Blocks until the ticket is done or its deadline passes. On the deadline a queued ticket is taken off the queue
  // (never run) and a running one abandoned.
  Wait wait(const std::shared_ptr<Ticket>& ticket);

  // Ends every queued and running ticket's wait with kCancelled (the drain deadline passed).
  void cancel_all();
  // Stops the dispatchers after the running engine calls return.
  void stop();

  int queue_depth() const;  // images waiting
  int in_flight() const;    // images inside engine calls
  const AdmissionOptions& options() const { return options_; }

 private:
  void dispatch_loop();

  engine::OcrEngine* engine_;
  AdmissionOptions options_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // dispatchers: queue not empty, or stop
  std::condition_variable done_cv_;  // waiters: a ticket changed state
  std::deque<std::shared_ptr<Ticket>> queue_;
  int queued_images_ = 0;
  int running_images_ = 0;
  bool stop_ = false;
  bool cancelled_ = false;  // cancel_all: every wait ends
  std::vector<std::thread> dispatchers_;
};

}  // namespace steadyocr::server

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
  // Predicted working memory of the images inside engine calls at once (predicted_image_bytes); 0: no limit. Work
  // that does not fit waits in the queue (oldest first) until running work returns; a ticket alone always runs.
  int64_t memory_budget_bytes = 0;
};

// Device working memory one image is predicted to need, from its header's sides (before decoding): the detector's
// input after the pipeline's resize (longer side at most `det_limit_side`, sides rounded up to 32) times the
// detector's measured bytes per input pixel (docs/SERVING.md), plus the recognition batches' share.
int64_t predicted_image_bytes(int64_t width, int64_t height, int det_limit_side);

// One request's images on their way through the engine. Fields are guarded by the Admission's lock.
struct Ticket {
  enum class State { kQueued, kRunning, kDone, kDropped, kCancelled };
  std::vector<engine::ImageJob> jobs;
  int64_t cost_bytes = 0;                       // predicted working memory of its images
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
  std::shared_ptr<Ticket> submit(std::vector<engine::ImageJob> jobs, Clock::time_point deadline,
                                 int64_t cost_bytes = 0);

  enum class Wait { kDone, kDeadline, kCancelled };
  // Blocks until the ticket is done or its deadline passes. On the deadline a queued ticket is taken off the queue
  // (never run) and a running one abandoned.
  Wait wait(const std::shared_ptr<Ticket>& ticket);

  // Ends every queued and running ticket's wait with kCancelled (the drain deadline passed).
  void cancel_all();
  // Stops the dispatchers after the running engine calls return.
  void stop();

  int queue_depth() const;           // images waiting
  int in_flight() const;             // images inside engine calls
  int64_t memory_in_flight() const;  // predicted bytes of the images inside engine calls
  int64_t memory_peak() const;       // the most memory_in_flight() has been
  // The four figures above read under one lock: an image moving from the queue into the engine between two separate
  // reads would count in both (a scrape of /metrics summing the gauges saw more images than were admitted).
  struct Snapshot {
    int queue_depth = 0;
    int in_flight = 0;
    int64_t memory_in_flight = 0;
    int64_t memory_peak = 0;
  };
  Snapshot snapshot() const;
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
  int64_t running_bytes_ = 0;
  int64_t peak_bytes_ = 0;
  bool memory_wait_counted_ = false;  // the head of the queue's wait for memory is counted once
  bool stop_ = false;
  bool cancelled_ = false;  // cancel_all: every wait ends
  std::vector<std::thread> dispatchers_;
};

}  // namespace steadyocr::server

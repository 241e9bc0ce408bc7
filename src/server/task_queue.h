// The HTTP connection threads: cpp-httplib hands each accepted connection to a TaskQueue, and a connection holds its
// thread while it is open. A fixed pool would let slow uploads and waiting requests take every thread, so that a
// request which should be refused at once (SERVER_BUSY) waits for a thread instead; this queue starts a thread
// whenever no idle one is left, up to a maximum, so refusals stay fast while the engine is busy.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace steadyocr::server {

class ElasticTaskQueue : public httplib::TaskQueue {
 public:
  ElasticTaskQueue(size_t min_threads, size_t max_threads);
  ~ElasticTaskQueue() override;

  // Runs `fn` on an idle thread, on a new one when none is idle (below the maximum), or when one frees up.
  void enqueue(std::function<void()> fn) override;
  // Lets the queued connections run, then joins every thread.
  void shutdown() override;

 private:
  void work();

  size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  bool shutdown_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace steadyocr::server

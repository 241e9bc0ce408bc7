#include "server/task_queue.h"

#include <algorithm>

#include "core/thread_name.h"

namespace steadyocr::server {

ElasticTaskQueue::ElasticTaskQueue(size_t min_threads, size_t max_threads)
    : max_threads_(std::max<size_t>(1, max_threads)) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < std::min(min_threads, max_threads_); ++i) threads_.emplace_back([this] { work(); });
}

ElasticTaskQueue::~ElasticTaskQueue() {
  shutdown();
}

void ElasticTaskQueue::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  jobs_.push_back(std::move(fn));
  if (idle_ < jobs_.size() && threads_.size() < max_threads_) threads_.emplace_back([this] { work(); });
  cv_.notify_one();
}

void ElasticTaskQueue::shutdown() {
  std::vector<std::thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shutdown_ = true;
    threads.swap(threads_);
  }
  cv_.notify_all();
  for (auto& t : threads) t.join();
}

void ElasticTaskQueue::work() {
  name_this_thread("so-http");
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    ++idle_;
    cv_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
    --idle_;
    if (jobs_.empty()) return;  // shut down and nothing left
    std::function<void()> fn = std::move(jobs_.front());
    jobs_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
}

}  // namespace steadyocr::server

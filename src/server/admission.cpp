#include "server/admission.h"

#include <algorithm>

#include "core/metrics.h"
#include "core/thread_name.h"

namespace steadyocr::server {

double Ticket::queue_ms() const {
  if (started == Clock::time_point{}) return 0;
  return std::chrono::duration<double, std::milli>(started - admitted).count();
}

int64_t predicted_image_bytes(int64_t width, int64_t height, int det_limit_side) {
  // Measured on the H200 (docs/BENCHMARKS.md, "steadyocr serve"): the arena of one prepared instance of PP-OCRv4 det
  // is 88-89 bytes per input pixel on cuda-fp16 and 96-98 on cuda-fp32 (six page sizes); a page's recognition calls
  // stay under a fixed share.
  constexpr int64_t kDetBytesPerPixel = 100;
  constexpr int64_t kRecBytes = 64ll << 20;
  if (width <= 0 || height <= 0) return kRecBytes;
  double scale = 1.0;
  const int64_t longer = std::max(width, height);
  if (det_limit_side > 0 && longer > det_limit_side) scale = static_cast<double>(det_limit_side) / longer;
  auto side = [&](int64_t v) { return std::max<int64_t>(32, (static_cast<int64_t>(v * scale) + 31) / 32 * 32); };
  return side(width) * side(height) * kDetBytesPerPixel + kRecBytes;
}

Admission::Admission(engine::OcrEngine* engine, AdmissionOptions options) : engine_(engine), options_(options) {
  options_.concurrency = std::max(1, options_.concurrency);
  options_.batch_images = std::max(1, options_.batch_images);
  // so-engine: the threads that run OCR (and the OpenMP threads they start) are the ones an operator pins or renices.
  for (int i = 0; i < options_.concurrency; ++i)
    dispatchers_.emplace_back([this] {
      name_this_thread("so-engine");
      dispatch_loop();
    });
}

Admission::~Admission() {
  stop();
}

std::shared_ptr<Ticket> Admission::submit(std::vector<engine::ImageJob> jobs, Clock::time_point deadline,
                                          int64_t cost_bytes) {
  const int n = static_cast<int>(jobs.size());
  std::lock_guard<std::mutex> lock(mu_);
  // A batch larger than the whole queue is still admitted into an empty one, so that --max-batch above --max-queue
  // does not make every batch of that size impossible.
  if (stop_ || (queued_images_ > 0 && queued_images_ + n > options_.max_queue)) return nullptr;
  auto t = std::make_shared<Ticket>();
  t->jobs = std::move(jobs);
  t->cost_bytes = cost_bytes;
  t->admitted = Clock::now();
  t->deadline = deadline;
  queue_.push_back(t);
  queued_images_ += n;
  work_cv_.notify_one();
  return t;
}

Admission::Wait Admission::wait(const std::shared_ptr<Ticket>& t) {
  std::unique_lock<std::mutex> lock(mu_);
  auto settled = [&] {
    return cancelled_ || (t->state != Ticket::State::kQueued && t->state != Ticket::State::kRunning);
  };
  done_cv_.wait_until(lock, t->deadline, settled);
  if (t->state == Ticket::State::kDone) return Wait::kDone;
  if (t->state == Ticket::State::kCancelled) return Wait::kCancelled;
  if (cancelled_ && t->state == Ticket::State::kRunning) {
    t->abandoned = true;
    return Wait::kCancelled;
  }
  if (t->state == Ticket::State::kQueued) {
    auto it = std::find(queue_.begin(), queue_.end(), t);
    if (it != queue_.end()) {
      queue_.erase(it);
      queued_images_ -= static_cast<int>(t->jobs.size());
    }
    t->state = Ticket::State::kDropped;
    metrics::inc("steadyocr_deadline_dropped_total", {{"where", "queue"}}, static_cast<double>(t->jobs.size()));
  } else if (t->state == Ticket::State::kRunning) {
    t->abandoned = true;
    metrics::inc("steadyocr_deadline_dropped_total", {{"where", "running"}}, static_cast<double>(t->jobs.size()));
  }
  return Wait::kDeadline;
}

void Admission::cancel_all() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& t : queue_) t->state = Ticket::State::kCancelled;
  queue_.clear();
  queued_images_ = 0;
  stop_ = true;  // nothing more is admitted; running calls finish into abandoned tickets
  cancelled_ = true;
  work_cv_.notify_all();
  done_cv_.notify_all();
}

void Admission::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    for (auto& t : queue_) t->state = Ticket::State::kCancelled;
    queue_.clear();
    queued_images_ = 0;
  }
  work_cv_.notify_all();
  done_cv_.notify_all();
  for (auto& d : dispatchers_) {
    if (d.joinable()) d.join();
  }
  dispatchers_.clear();
}

int Admission::queue_depth() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queued_images_;
}

int Admission::in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_images_;
}

int64_t Admission::memory_in_flight() const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_bytes_;
}

Admission::Snapshot Admission::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {queued_images_, running_images_, running_bytes_, peak_bytes_};
}

int64_t Admission::memory_peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_bytes_;
}

void Admission::dispatch_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t budget = options_.memory_budget_bytes;
  // The ticket fits the memory budget beside the work running (any ticket fits when nothing runs).
  auto fits = [&](const Ticket& t, int64_t more) {
    return budget <= 0 || running_bytes_ + more == 0 || running_bytes_ + more + t.cost_bytes <= budget;
  };
  for (;;) {
    work_cv_.wait(lock, [&] {
      if (stop_) return true;
      if (queue_.empty()) return false;
      if (fits(*queue_.front(), 0) || queue_.front()->deadline <= Clock::now()) return true;
      if (!memory_wait_counted_) {
        memory_wait_counted_ = true;
        metrics::inc("steadyocr_admission_memory_waits_total");
      }
      return false;
    });
    if (stop_) return;
    // Whole tickets from the front, up to batch_images images (at least one ticket) and the memory budget; expired
    // ones are dropped.
    std::vector<std::shared_ptr<Ticket>> batch;
    size_t images = 0;
    int64_t bytes = 0;
    const auto now = Clock::now();
    while (!queue_.empty()) {
      auto t = queue_.front();
      if (t->deadline > now) {
        if (!batch.empty() && images + t->jobs.size() > static_cast<size_t>(options_.batch_images)) break;
        if (!fits(*t, bytes)) break;
      }
      queue_.pop_front();
      memory_wait_counted_ = false;
      queued_images_ -= static_cast<int>(t->jobs.size());
      if (t->deadline <= now) {
        t->state = Ticket::State::kDropped;
        metrics::inc("steadyocr_deadline_dropped_total", {{"where", "queue"}}, static_cast<double>(t->jobs.size()));
        continue;
      }
      t->state = Ticket::State::kRunning;
      t->started = now;
      images += t->jobs.size();
      bytes += t->cost_bytes;
      batch.push_back(std::move(t));
    }
    done_cv_.notify_all();  // the dropped ones
    if (batch.empty()) continue;
    std::vector<engine::ImageJob> jobs;
    jobs.reserve(images);
    for (auto& t : batch) {
      for (auto& j : t->jobs) jobs.push_back(std::move(j));
    }
    running_images_ += static_cast<int>(images);
    running_bytes_ += bytes;
    peak_bytes_ = std::max(peak_bytes_, running_bytes_);
    lock.unlock();
    std::vector<engine::EngineOutcome> outcomes = engine_->ocr_batch(jobs);
    lock.lock();
    running_images_ -= static_cast<int>(images);
    running_bytes_ -= bytes;
    work_cv_.notify_all();  // a ticket waiting for memory may fit now
    size_t k = 0;
    const auto finished = Clock::now();
    for (auto& t : batch) {
      t->outcomes.assign(std::make_move_iterator(outcomes.begin() + k),
                         std::make_move_iterator(outcomes.begin() + k + t->jobs.size()));
      k += t->jobs.size();
      t->finished = finished;
      if (t->state == Ticket::State::kRunning) t->state = Ticket::State::kDone;
    }
    done_cv_.notify_all();
  }
}

}  // namespace steadyocr::server

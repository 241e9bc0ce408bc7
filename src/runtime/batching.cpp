#include "runtime/batching.h"

#include <algorithm>
#include <cstring>

#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::runtime {

namespace {

const std::vector<double>& row_buckets() {
  static const std::vector<double> kBuckets = {1, 2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128};
  return kBuckets;
}

}  // namespace

struct BatchingRunner::Pending {
  const Tensor* input = nullptr;
  Shape key;  // the dtype, then the shape after the first dimension
  int64_t rows = 0;
  bool done = false;
  Result<Tensor> out = Status(StatusCode::kInternal, "not run");
  CallInfo info;
  Stopwatch queued;      // since the caller arrived
  double waited_ms = 0;  // until its call started
};

BatchingRunner::BatchingRunner(std::shared_ptr<Runner> inner, BatchingOptions options)
    : inner_(std::move(inner)), options_(std::move(options)) {
  options_.max_rows = std::max<int64_t>(1, options_.max_rows);
  options_.slots = std::max(1, options_.slots);
  metrics::describe("steadyocr_batch_rows", "rows per model call, stacked across callers (images, crops)", false);
  metrics::describe("steadyocr_batch_callers", "callers whose inputs one model call carried", false);
}

size_t BatchingRunner::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pending_.size();
}

Result<Tensor> BatchingRunner::run_call(const Tensor& input, CallInfo* info) {
  if (input.rank() == 0 || input.dim(0) <= 0) return inner_->run_call(input, info);
  Stopwatch queued;
  Pending me;
  me.input = &input;
  me.queued = queued;
  me.rows = input.dim(0);
  me.key.reserve(input.rank());
  me.key.push_back(static_cast<int64_t>(input.dtype()));
  me.key.insert(me.key.end(), input.shape().begin() + 1, input.shape().end());

  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(&me);
  while (!me.done) {
    // The oldest waiting caller whose shape has a free call slot leads: it takes every waiting caller of that shape
    // (oldest first, while the rows fit), runs them as one call, and hands each its rows. It may be another
    // caller's group; this one keeps leading or waiting until its own rows are back.
    auto first = std::find_if(pending_.begin(), pending_.end(),
                              [&](const Pending* p) { return active_[p->key] < options_.slots; });
    if (first == pending_.end()) {
      done_.wait(lock);
      continue;
    }
    const Shape key = (*first)->key;
    std::vector<Pending*> group;
    int64_t rows = 0;
    for (auto it = first; it != pending_.end();) {
      Pending* p = *it;
      if (p->key == key && (group.empty() || rows + p->rows <= options_.max_rows)) {
        group.push_back(p);
        rows += p->rows;
        it = pending_.erase(it);
      } else {
        ++it;
      }
    }
    ++active_[key];
    lock.unlock();
    for (Pending* p : group) p->waited_ms = p->queued.elapsed_ms();
    execute(group, rows);
    lock.lock();
    if (--active_[key] == 0) active_.erase(key);
    for (Pending* p : group) p->done = true;
    done_.notify_all();
  }
  if (info) {
    *info = me.info;
    info->profile.wait_ms += me.waited_ms;
  }
  return std::move(me.out);
}

void BatchingRunner::execute(std::vector<Pending*>& group, int64_t rows) {
  const metrics::Labels labels = {{"stage", options_.stage}};
  metrics::observe("steadyocr_batch_rows", labels, static_cast<double>(rows), row_buckets());
  metrics::observe("steadyocr_batch_callers", labels, static_cast<double>(group.size()), row_buckets());
  CallInfo call{rows, static_cast<int>(group.size()), {}};
  if (group.size() == 1) {
    group[0]->out = inner_->run_call(*group[0]->input, &call);
    group[0]->info = {rows, 1, call.profile};
    return;
  }
  Stopwatch stacking;
  const Tensor& first = *group[0]->input;
  Shape shape = first.shape();
  shape[0] = rows;
  Tensor stacked = Tensor::empty(first.dtype(), shape);
  auto* dst = static_cast<uint8_t*>(stacked.raw());
  for (const Pending* p : group) {
    std::memcpy(dst, p->input->raw(), p->input->nbytes());
    dst += p->input->nbytes();
  }
  const double stack_ms = stacking.elapsed_ms();
  CallInfo inner;
  Result<Tensor> out = inner_->run_call(stacked, &inner);
  call.profile = inner.profile;
  call.profile.wait_ms += stack_ms;
  if (!out.is_ok() &&
      (out.status().code() == StatusCode::kOutOfMemory || out.status().code() == StatusCode::kResourceExhausted)) {
    // The stacked call did not fit where each caller's own might: each runs alone (the out-of-memory handling
    // below this runner sees them one by one).
    metrics::inc("steadyocr_batch_unstacked_total", labels);
    for (Pending* p : group) {
      CallInfo alone;
      p->out = inner_->run_call(*p->input, &alone);
      p->info = {p->rows, 1, call.profile};
      p->info.profile += alone.profile;
    }
    return;
  }
  if (out.is_ok() && (out->rank() == 0 || out->dim(0) != rows)) {
    out = internal_error("model returned " + out->describe() + " for a stacked input " + stacked.describe() +
                         " (its rows must follow the input's)");
  }
  if (!out.is_ok()) {
    for (Pending* p : group) {
      p->out = out.status();
      p->info = call;
    }
    return;
  }
  auto whole = std::make_shared<Tensor>(std::move(out).value());
  const size_t out_row_bytes = whole->nbytes() / static_cast<size_t>(rows);
  auto* base = static_cast<uint8_t*>(whole->raw());
  int64_t at = 0;
  for (Pending* p : group) {
    Shape s = whole->shape();
    s[0] = p->rows;
    p->out = Tensor::wrap(whole->dtype(), s, base + static_cast<size_t>(at) * out_row_bytes, whole);
    p->info = call;
    at += p->rows;
  }
}

}  // namespace steadyocr::runtime

// Batching across callers: concurrent runs whose inputs have the same type and the same shape after the first
// dimension (same rows: a recognition width, a detection size) are stacked into one model call and split again.
// Rows are independent in these models, so every caller gets the rows it would get alone; only the number of calls
// (and their fixed cost) drops. Nothing waits for company: a run starts at once while a call slot of its shape is
// free, and the runs that arrive while all are busy go out together when one frees (natural batching, no delay).
#pragma once

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/model.h"

namespace steadyocr::runtime {

struct BatchingOptions {
  std::string stage;     // metrics label ("det", "rec", "cls")
  int64_t max_rows = 1;  // rows of one stacked call (a caller with more runs alone); 1: no stacking
  // Calls of one shape in flight at once; further callers of that shape wait and are stacked. The model's prepared
  // instances per shape (ModelOptions::max_replicas): callers beyond them would wait inside the model anyway.
  int slots = 1;
};

class BatchingRunner : public Runner {
 public:
  BatchingRunner(std::shared_ptr<Runner> inner, BatchingOptions options);

  Result<Tensor> run(const Tensor& input) override { return run_call(input, nullptr); }
  Result<Tensor> run_call(const Tensor& input, CallInfo* info) override;
  std::string backend_name() const override { return inner_->backend_name(); }

  const Runner& inner() const { return *inner_; }
  size_t waiting() const;  // callers queued for a slot of their shape

 private:
  struct Pending;
  void execute(std::vector<Pending*>& group, int64_t rows);

  std::shared_ptr<Runner> inner_;
  BatchingOptions options_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::deque<Pending*> pending_;  // callers waiting, oldest first
  std::map<Shape, int> active_;   // calls in flight per key
};

}  // namespace steadyocr::runtime

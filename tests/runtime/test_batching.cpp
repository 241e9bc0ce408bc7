// Batching across callers (runtime/batching.h): which calls get stacked, that each caller gets its own rows back,
// and what happens when a stacked call fails.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/metrics.h"
#include "runtime/batching.h"

namespace steadyocr::runtime {
namespace {

// Doubles its input row by row; the first call waits for open() so that others pile up behind it. Records the
// shape of every call it gets.
class GatedDoubler : public Runner {
 public:
  Result<Tensor> run(const Tensor& input) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      calls_.push_back(input.shape());
      if (calls_.size() == 1) {
        entered_ = true;
        cv_.notify_all();
        cv_.wait(lock, [&] { return open_; });
      }
      if (fail_rows_above_ > 0 && input.dim(0) > fail_rows_above_)
        return Status(StatusCode::kOutOfMemory, "too many rows");
      if (fail_all_) return Status(StatusCode::kDeviceError, "device says no");
    }
    if (drop_a_row_) return Tensor::zeros(DType::kF32, {input.dim(0) - 1, input.dim(1)});
    Tensor out = Tensor::empty(DType::kF32, input.shape());
    for (int64_t i = 0; i < input.numel(); ++i) out.data<float>()[i] = 2 * input.data<float>()[i];
    return out;
  }
  std::string backend_name() const override { return "fake"; }

  void wait_entered() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return entered_; });
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  std::vector<Shape> calls() {
    std::lock_guard<std::mutex> lock(mu_);
    return calls_;
  }

  int64_t fail_rows_above_ = 0;
  bool fail_all_ = false;
  bool drop_a_row_ = false;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool entered_ = false, open_ = false;
  std::vector<Shape> calls_;
};

// rows x width, row r of caller c holds 100 * c + r + column / 1000.
Tensor rows_of(int caller, int64_t rows, int64_t width) {
  Tensor t = Tensor::empty(DType::kF32, {rows, width});
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t x = 0; x < width; ++x) t.data<float>()[r * width + x] = 100.f * caller + r + x / 1000.f;
  return t;
}

struct Call {
  Call(int c, int64_t r, int64_t w) : caller(c), rows(r), width(w) {}
  int caller;
  int64_t rows, width;
  Result<Tensor> out = Status(StatusCode::kInternal, "not run");
  CallInfo info;
};

// Caller 0 holds the only slot; callers 1.. queue up behind it (the runner's waiting count says when), then the
// slot opens.
void run_piled(BatchingRunner& runner, GatedDoubler& fake, std::vector<Call>& calls) {
  std::vector<std::thread> threads;
  auto go = [&](Call& c) {
    Tensor in = rows_of(c.caller, c.rows, c.width);
    c.out = runner.run_call(in, &c.info);
  };
  threads.emplace_back(go, std::ref(calls[0]));
  fake.wait_entered();
  for (size_t i = 1; i < calls.size(); ++i) {
    threads.emplace_back(go, std::ref(calls[i]));
    // In order, so that the stacking order is known.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (runner.waiting() < i && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(runner.waiting(), i);
  }
  fake.open();
  for (auto& t : threads) t.join();
}

void expect_own_rows(const Call& c) {
  ASSERT_TRUE(c.out.is_ok()) << c.out.status().to_string();
  ASSERT_EQ(c.out->shape(), (Shape{c.rows, c.width}));
  Tensor want = rows_of(c.caller, c.rows, c.width);
  for (int64_t i = 0; i < want.numel(); ++i) ASSERT_EQ(c.out->data<float>()[i], 2 * want.data<float>()[i]) << i;
}

TEST(Batching, CallersThatArriveWhileTheSlotIsBusyGoOutAsOneCall) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 8, 1});
  std::vector<Call> calls = {{0, 2, 5}, {1, 1, 5}, {2, 3, 5}, {3, 2, 5}};
  run_piled(runner, *fake, calls);
  for (const Call& c : calls) expect_own_rows(c);
  // Caller 0 alone, then the others stacked in arrival order (1 + 3 + 2 rows).
  std::vector<Shape> seen = fake->calls();
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0], (Shape{2, 5}));
  EXPECT_EQ(seen[1], (Shape{6, 5}));
  EXPECT_EQ(calls[0].info.callers, 1);
  EXPECT_EQ(calls[0].info.rows, 2);
  EXPECT_EQ(calls[1].info.callers, 3);
  EXPECT_EQ(calls[1].info.rows, 6);
  EXPECT_EQ(calls[3].info.rows, 6);
}

// The callers that queued behind the busy slot say how long they waited for it (the time table's `wait`).
TEST(Batching, QueuedCallersReportTheirWait) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 8, 1});
  std::vector<Call> calls = {{0, 2, 5}, {1, 1, 5}, {2, 3, 5}};
  std::thread opener([&] {
    fake->wait_entered();
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (runner.waiting() < 2 && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the queued callers wait at least this long
  });
  std::vector<std::thread> threads;
  threads.emplace_back([&] { calls[0].out = runner.run_call(rows_of(0, 2, 5), &calls[0].info); });
  fake->wait_entered();
  threads.emplace_back([&] { calls[1].out = runner.run_call(rows_of(1, 1, 5), &calls[1].info); });
  threads.emplace_back([&] { calls[2].out = runner.run_call(rows_of(2, 3, 5), &calls[2].info); });
  opener.join();
  fake->open();
  for (auto& t : threads) t.join();
  for (const Call& c : calls) expect_own_rows(c);
  EXPECT_LT(calls[0].info.profile.wait_ms, 40.0);  // it found the slot free
  EXPECT_GE(calls[1].info.profile.wait_ms, 50.0);
  EXPECT_GE(calls[2].info.profile.wait_ms, 50.0);
}

TEST(Batching, AnotherShapeDoesNotWaitBehindABusyOne) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 8, 1});
  Call held{0, 2, 5}, other{1, 2, 7};
  std::thread holder([&] {
    Tensor in = rows_of(0, 2, 5);
    held.out = runner.run_call(in, &held.info);
  });
  fake->wait_entered();
  Tensor in = rows_of(1, 2, 7);
  other.out = runner.run_call(in, &other.info);  // returns while caller 0 is still inside the model
  expect_own_rows(other);
  EXPECT_EQ(other.info.callers, 1);
  fake->open();
  holder.join();
  expect_own_rows(held);
}

TEST(Batching, StackedRowsStopAtTheLimit) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 4, 1});
  std::vector<Call> calls = {{0, 1, 3}, {1, 1, 3}, {2, 3, 3}, {3, 2, 3}, {4, 6, 3}};
  run_piled(runner, *fake, calls);
  for (const Call& c : calls) expect_own_rows(c);
  std::vector<Shape> seen = fake->calls();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_EQ(seen[1], (Shape{4, 3}));  // 1 + 3; caller 3's 2 rows would pass 4
  EXPECT_EQ(seen[2], (Shape{2, 3}));  // caller 3 (caller 4's 6 rows exceed the limit: alone)
  EXPECT_EQ(seen[3], (Shape{6, 3}));
}

TEST(Batching, FreeSlotsRunAtOnceWithoutWaitingForCompany) {
  auto fake = std::make_shared<GatedDoubler>();
  fake->open();
  BatchingRunner runner(fake, {"test", 8, 2});
  Call c{0, 2, 4};
  Tensor in = rows_of(0, 2, 4);
  auto t0 = std::chrono::steady_clock::now();
  c.out = runner.run_call(in, &c.info);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(100));
  expect_own_rows(c);
  EXPECT_EQ(c.info.callers, 1);
  EXPECT_EQ(runner.waiting(), 0u);
}

TEST(Batching, AFailedStackedCallFailsEachOfItsCallers) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 8, 1});
  std::vector<Call> calls = {{0, 1, 2}, {1, 1, 2}, {2, 1, 2}};
  fake->fail_all_ = true;
  run_piled(runner, *fake, calls);
  for (const Call& c : calls) {
    ASSERT_FALSE(c.out.is_ok());
    EXPECT_EQ(c.out.status().code(), StatusCode::kDeviceError);
  }
  EXPECT_EQ(fake->calls().size(), 2u);  // caller 0, then 1 and 2 stacked: not retried one by one
}

TEST(Batching, OutOfMemoryOnAStackedCallRunsEachCallerAlone) {
  metrics::reset_for_testing();
  auto fake = std::make_shared<GatedDoubler>();
  fake->fail_rows_above_ = 2;
  BatchingRunner runner(fake, {"test", 8, 1});
  std::vector<Call> calls = {{0, 1, 2}, {1, 2, 2}, {2, 1, 2}};
  run_piled(runner, *fake, calls);
  for (const Call& c : calls) expect_own_rows(c);
  std::vector<Shape> seen = fake->calls();
  ASSERT_EQ(seen.size(), 4u);  // 1; 3 (out of memory); then 2 and 1 alone
  EXPECT_EQ(seen[1], (Shape{3, 2}));
  EXPECT_EQ(metrics::value("steadyocr_batch_unstacked_total", {{"stage", "test"}}), 1.0);
}

TEST(Batching, AnOutputWhoseRowsDoNotFollowTheInputIsAnError) {
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"test", 8, 1});
  std::vector<Call> calls = {{0, 1, 2}, {1, 1, 2}, {2, 1, 2}};
  fake->drop_a_row_ = true;
  run_piled(runner, *fake, calls);
  ASSERT_FALSE(calls[1].out.is_ok());
  EXPECT_EQ(calls[1].out.status().code(), StatusCode::kInternal);
  EXPECT_NE(calls[1].out.status().message().find("rows must follow"), std::string::npos);
}

TEST(Batching, RowsPerCallAreAHistogram) {
  metrics::reset_for_testing();
  auto fake = std::make_shared<GatedDoubler>();
  BatchingRunner runner(fake, {"hist", 8, 1});
  std::vector<Call> calls = {{0, 1, 2}, {1, 2, 2}, {2, 3, 2}};
  run_piled(runner, *fake, calls);
  const std::string text = metrics::prometheus_text();
  EXPECT_NE(text.find("steadyocr_batch_rows_count{stage=\"hist\"} 2"), std::string::npos) << text;
  EXPECT_NE(text.find("steadyocr_batch_rows_sum{stage=\"hist\"} 6"), std::string::npos) << text;
  EXPECT_NE(text.find("steadyocr_batch_callers_sum{stage=\"hist\"} 3"), std::string::npos) << text;
}

}  // namespace
}  // namespace steadyocr::runtime

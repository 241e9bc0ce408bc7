#include <gtest/gtest.h>

#include <thread>

#include "core/metrics.h"
#include "engine/ladder.h"

namespace steadyocr::engine {
namespace {

TEST(Ladder, StartupFailuresAboveTheServingRungAreEvents) {
  metrics::reset_for_testing();
  Ladder l({"cuda-fp16", "cuda-fp32", "cpu", "reference"});
  l.mark_healthy("cpu");  // the engine qualifies the serving rung first, then records what was ruled out
  l.mark_failed("cuda-fp16", {"L1_NO_DRIVER", "libcuda.so.1 not found", "install the NVIDIA driver"});
  l.mark_failed("cuda-fp32", {"L1_NO_DRIVER", "libcuda.so.1 not found", "install the NVIDIA driver"});
  l.mark_failed("reference", {"NOT_NEEDED", "", ""});  // below the serving rung: no event
  EXPECT_EQ(l.current(), "cpu");
  auto ev = l.events();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0].from, "cuda-fp16");
  EXPECT_EQ(ev[0].to, "cpu");
  EXPECT_EQ(ev[0].reason, "L1_NO_DRIVER");
  EXPECT_EQ(
      metrics::value("steadyocr_fallback_total", {{"from", "cuda-fp32"}, {"to", "cpu"}, {"reason", "L1_NO_DRIVER"}}),
      1.0);
}

TEST(Ladder, StepDownWhileServingThenClimbBack) {
  metrics::reset_for_testing();
  Ladder l({"gpu", "cpu"});
  l.set_backoff(std::chrono::milliseconds(20), std::chrono::milliseconds(80));
  l.mark_healthy("gpu");
  l.mark_healthy("cpu");
  EXPECT_EQ(l.current(), "gpu");
  EXPECT_TRUE(l.events().empty());
  l.mark_failed("gpu", {"WORKER_FAULT", "illegal address", ""});
  EXPECT_EQ(l.current(), "cpu");
  ASSERT_EQ(l.events().size(), 1u);
  EXPECT_EQ(l.events()[0].to, "cpu");
  EXPECT_EQ(metrics::value("steadyocr_fallback_total", {{"from", "gpu"}, {"to", "cpu"}, {"reason", "WORKER_FAULT"}}),
            1.0);

  EXPECT_TRUE(l.due_for_reprobe(std::chrono::steady_clock::now()).empty());  // back-off not elapsed
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  auto due = l.due_for_reprobe(std::chrono::steady_clock::now());
  ASSERT_EQ(due, std::vector<std::string>{"gpu"});
  l.reprobe_failed("gpu", "still bad");
  EXPECT_TRUE(l.due_for_reprobe(std::chrono::steady_clock::now()).empty());  // pushed out (40 ms)

  uint64_t before = l.last_seq();
  l.mark_healthy("gpu");
  EXPECT_EQ(l.current(), "gpu");
  auto since = l.events_since(before);
  ASSERT_EQ(since.size(), 1u);
  EXPECT_TRUE(since[0].climb);
  EXPECT_EQ(since[0].from, "cpu");
  EXPECT_EQ(since[0].to, "gpu");
}

TEST(Ladder, NothingLeftIsAnEventToo) {
  Ladder l({"cpu"});
  l.mark_healthy("cpu");
  l.mark_failed("cpu", {"SELF_TEST_MISMATCH", "nmse 0.3", ""});
  EXPECT_EQ(l.current(), "");
  ASSERT_EQ(l.events().size(), 1u);
  EXPECT_EQ(l.events()[0].to, "");
}

}  // namespace
}  // namespace steadyocr::engine

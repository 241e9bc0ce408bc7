// GraphCapturePolicy (src/backends/cuda/graph_policy.h): when a plan instance captures a CUDA graph again after its
// graph was dropped. Host logic only; runs without a device.
#include <gtest/gtest.h>

#include "backends/cuda/graph_policy.h"

namespace steadyocr::cuda {
namespace {

TEST(GraphCapturePolicy, CapturesOnTheSecondRun) {
  GraphCapturePolicy p;
  EXPECT_FALSE(p.should_capture(0));
  EXPECT_TRUE(p.should_capture(1));
  EXPECT_EQ(p.wait(), 0);
}

TEST(GraphCapturePolicy, AGraphThatDidNotPayDoublesTheWaitUpToTheCap) {
  GraphCapturePolicy p;
  int run = 1;
  int expected_wait = GraphCapturePolicy::kMinWait;
  for (int round = 0; round < 12; ++round) {
    ASSERT_TRUE(p.should_capture(run)) << "round " << round;
    p.captured();
    p.replayed();  // one replay: under kPaysAfter
    run += 3;      // the replay and two runs elsewhere
    EXPECT_TRUE(p.dropped(run));
    EXPECT_EQ(p.wait(), expected_wait);
    EXPECT_FALSE(p.should_capture(run));
    EXPECT_FALSE(p.should_capture(run + p.wait() - 1));
    run += p.wait();
    expected_wait = std::min(expected_wait * 2, GraphCapturePolicy::kMaxWait);
  }
  EXPECT_EQ(p.wait(), GraphCapturePolicy::kMaxWait);
}

TEST(GraphCapturePolicy, AGraphThatPaidClearsTheWait) {
  GraphCapturePolicy p;
  p.captured();
  EXPECT_TRUE(p.dropped(5));  // no replay at all
  EXPECT_EQ(p.wait(), GraphCapturePolicy::kMinWait);
  EXPECT_FALSE(p.should_capture(5));
  ASSERT_TRUE(p.should_capture(5 + GraphCapturePolicy::kMinWait));
  p.captured();
  for (int i = 0; i < GraphCapturePolicy::kPaysAfter; ++i) p.replayed();
  EXPECT_FALSE(p.dropped(20));
  EXPECT_EQ(p.wait(), 0);
  EXPECT_TRUE(p.should_capture(20));
  // The count of replays starts again with each capture.
  p.captured();
  p.replayed();
  EXPECT_TRUE(p.dropped(30));
  EXPECT_EQ(p.wait(), GraphCapturePolicy::kMinWait);
}

}  // namespace
}  // namespace steadyocr::cuda

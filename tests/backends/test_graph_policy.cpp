// ArenaGraphs (src/backends/cuda/graph_policy.h): which CUDA graphs a plan instance keeps, one per activation arena,
// and when it captures another. Host logic only (the handle is an int here); runs without a device.
#include <gtest/gtest.h>

#include "backends/cuda/graph_policy.h"

namespace steadyocr::cuda {
namespace {

using Graphs = ArenaGraphs<int>;

TEST(ArenaGraphs, CapturesOnTheSecondRunAndReplaysOnThatArenaOnly) {
  Graphs g(1);
  EXPECT_FALSE(g.should_capture(0));
  ASSERT_TRUE(g.should_capture(1));
  g.add(7, 70);
  const int* h = g.replay(7);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(*h, 70);
  EXPECT_EQ(g.replay(8), nullptr);  // another arena: no graph
  EXPECT_FALSE(g.should_capture(2)) << "full: no capture before the graph is evicted";
  EXPECT_EQ(g.wait(), 0);
}

TEST(ArenaGraphs, KeepsAGraphPerArenaUpToItsCapacity) {
  Graphs g(3);
  g.add(1, 10);
  ASSERT_EQ(g.replay(2), nullptr);
  EXPECT_TRUE(g.should_capture(2)) << "room left: a run on a new arena captures there at once";
  EXPECT_FALSE(g.evict(2).has_value()) << "nothing is evicted while there is room";
  g.add(2, 20);
  g.add(3, 30);
  EXPECT_FALSE(g.should_capture(3));
  EXPECT_EQ(*g.replay(1), 10);
  EXPECT_EQ(*g.replay(3), 30);
  EXPECT_EQ(*g.replay(2), 20);
  // The arenas to ask for, most recently replayed first.
  EXPECT_EQ(g.arenas(), (std::vector<uint64_t>{2, 3, 1}));
  // Full, and runs on a fourth arena: the second miss in a row evicts the least recently used (arena 1).
  ASSERT_EQ(g.replay(4), nullptr);
  EXPECT_FALSE(g.evict(5).has_value()) << "no miss yet";
  g.missed();
  ASSERT_EQ(g.replay(4), nullptr);
  EXPECT_FALSE(g.evict(6).has_value()) << "one miss";
  g.missed();
  auto out = g.evict(7);
  ASSERT_TRUE(out.has_value());
  EXPECT_EQ(*out, 10);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(g.replay(1), nullptr);
  EXPECT_EQ(*g.replay(2), 20) << "the others stay";
}

TEST(ArenaGraphs, AReplayBetweenMissesStartsTheCountAgain) {
  Graphs g(1);
  g.add(1, 10);
  g.missed();
  ASSERT_NE(g.replay(1), nullptr);
  g.missed();
  EXPECT_FALSE(g.evict(5).has_value()) << "the misses were not in a row";
  g.missed();
  EXPECT_TRUE(g.evict(6).has_value());
}

TEST(ArenaGraphs, AGraphThatDidNotPayDoublesTheWaitUpToTheCap) {
  Graphs g(1);
  int run = 1;
  int expected_wait = Graphs::kMinWait;
  for (int round = 0; round < 12; ++round) {
    ASSERT_TRUE(g.should_capture(run)) << "round " << round;
    g.add(1, round);
    ASSERT_NE(g.replay(1), nullptr);  // one replay: under kPaysAfter
    g.missed();
    g.missed();
    run += 3;  // the replay and two runs elsewhere
    ASSERT_TRUE(g.evict(run).has_value());
    EXPECT_EQ(g.wait(), expected_wait);
    EXPECT_FALSE(g.should_capture(run));
    EXPECT_FALSE(g.should_capture(run + g.wait() - 1));
    run += g.wait();
    expected_wait = std::min(expected_wait * 2, Graphs::kMaxWait);
  }
  EXPECT_EQ(g.wait(), Graphs::kMaxWait);
  EXPECT_EQ(g.waits(), 12);
}

TEST(ArenaGraphs, AGraphThatPaidClearsTheWait) {
  Graphs g(1);
  g.add(1, 10);
  g.missed();
  g.missed();
  ASSERT_TRUE(g.evict(5).has_value());  // no replay at all
  EXPECT_EQ(g.wait(), Graphs::kMinWait);
  EXPECT_FALSE(g.should_capture(5));
  ASSERT_TRUE(g.should_capture(5 + Graphs::kMinWait));
  g.add(2, 20);
  for (int i = 0; i < Graphs::kPaysAfter; ++i) ASSERT_NE(g.replay(2), nullptr);
  g.missed();
  g.missed();
  ASSERT_TRUE(g.evict(20).has_value());
  EXPECT_EQ(g.wait(), 0);
  EXPECT_TRUE(g.should_capture(20));
  // The count of replays is each graph's own.
  g.add(3, 30);
  ASSERT_NE(g.replay(3), nullptr);
  g.missed();
  g.missed();
  ASSERT_TRUE(g.evict(30).has_value());
  EXPECT_EQ(g.wait(), Graphs::kMinWait);
}

TEST(ArenaGraphs, ClearHandsBackEveryGraph) {
  Graphs g(4);
  g.add(1, 10);
  g.add(2, 20);
  auto all = g.clear();
  EXPECT_EQ(all, (std::vector<int>{10, 20}));
  EXPECT_EQ(g.size(), 0u);
  EXPECT_EQ(g.replay(1), nullptr);
}

}  // namespace
}  // namespace steadyocr::cuda

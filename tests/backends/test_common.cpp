// What the backends share (src/backends/common): the schedule, the liveness arena planner and the op tables.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/common/arena.h"
#include "backends/common/op_table.h"
#include "backends/common/schedule.h"

namespace steadyocr::common {
namespace {

using graph::OpKind;

bool overlap(size_t a_off, size_t a_bytes, size_t b_off, size_t b_bytes) {
  return a_off < b_off + b_bytes && b_off < a_off + a_bytes;
}

ArenaBuffer buffer(size_t bytes, int first, int last) {
  ArenaBuffer b;
  b.bytes = bytes;
  b.touch(first);
  b.touch(last);
  return b;
}

TEST(ArenaPlanner, BuffersAliveTogetherNeverOverlapAndDeadOnesReuse) {
  // A chain: each step reads the previous buffer and writes the next.
  std::vector<ArenaBuffer> bufs;
  for (int i = 0; i < 6; ++i) bufs.push_back(buffer(1000 + 100 * i, i, i + 1));
  const ArenaLayout l = plan_arena(bufs);
  ASSERT_EQ(l.offsets.size(), bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % 64, 0u);
    for (size_t j = i + 1; j < bufs.size(); ++j) {
      const bool alive_together = bufs[i].first <= bufs[j].last && bufs[j].first <= bufs[i].last;
      if (alive_together) EXPECT_FALSE(overlap(l.offsets[i], bufs[i].bytes, l.offsets[j], bufs[j].bytes));
    }
  }
  // At most two buffers are alive at once: the arena holds the two largest neighbours, not all six.
  EXPECT_LE(l.bytes, 2 * 1536u);
  EXPECT_EQ(l.bytes % 64, 0u);
}

TEST(ArenaPlanner, LargestFirstAtLowestFreeOffset) {
  std::vector<ArenaBuffer> bufs = {buffer(100, 0, 1), buffer(5000, 1, 2), buffer(64, 3, 3)};
  const ArenaLayout l = plan_arena(bufs, {.alignment = 256, .reuse = true});
  EXPECT_EQ(l.offsets[1], 0u);     // largest first
  EXPECT_EQ(l.offsets[0], 5120u);  // alive with it: after it, aligned
  EXPECT_EQ(l.offsets[2], 0u);     // alive with neither: reuses the start
  EXPECT_EQ(l.bytes, 5120u + 256u);
}

TEST(ArenaPlanner, UntouchedWholeRunAndNoReuse) {
  std::vector<ArenaBuffer> bufs = {buffer(128, 0, 0), ArenaBuffer{}, buffer(128, 1, 1), ArenaBuffer{}};
  bufs[1].bytes = 4096;  // never touched: not placed
  bufs[3].bytes = 64;
  bufs[3].whole_run();
  const ArenaLayout reused = plan_arena(bufs);
  EXPECT_EQ(reused.offsets[0], reused.offsets[2]);
  EXPECT_FALSE(overlap(reused.offsets[3], 64, reused.offsets[0], 128));
  EXPECT_EQ(reused.bytes, 192u);
  // Without reuse every placed buffer has its own bytes (values readable after a run), still largest first.
  const ArenaLayout own = plan_arena(bufs, {.alignment = 64, .reuse = false});
  EXPECT_EQ(own.offsets[0], 0u);
  EXPECT_EQ(own.offsets[2], 128u);
  EXPECT_EQ(own.offsets[3], 256u);
  EXPECT_EQ(own.bytes, 320u);
}

TEST(Schedule, KeepsAValidOrderAndSortsAnInvalidOne) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {4});
  g.inputs().push_back(x);
  graph::Value* a = g.add_value("a", DType::kF32, {4});
  graph::Value* b = g.add_value("b", DType::kF32, {4});
  graph::Value* c = g.add_value("c", DType::kF32, {4});
  // Listed consumer first: b = relu(a) before a = relu(x).
  g.add_node(OpKind::kRelu, "second", {a}, {b}, graph::ActAttrs{graph::Activation::relu()});
  g.add_node(OpKind::kRelu, "first", {x}, {a}, graph::ActAttrs{graph::Activation::relu()});
  g.add_node(OpKind::kRelu, "third", {b}, {c}, graph::ActAttrs{graph::Activation::relu()});
  g.outputs().push_back(c);
  EXPECT_FALSE(graph::is_topologically_ordered(g));
  auto order = schedule(g, ScheduleOrder::kGraph);
  ASSERT_TRUE(order.is_ok());
  ASSERT_EQ(order->size(), 3u);
  EXPECT_EQ((*order)[0]->name, "first");
  EXPECT_EQ((*order)[1]->name, "second");
  EXPECT_EQ((*order)[2]->name, "third");
  ASSERT_TRUE(g.toposort().is_ok());
  EXPECT_TRUE(graph::is_topologically_ordered(g));
  auto again = schedule(g, ScheduleOrder::kGraph);
  ASSERT_TRUE(again.is_ok());
  EXPECT_EQ(*again, *order);
  // A cycle is an error.
  g.nodes()[0]->inputs[0] = c;
  EXPECT_FALSE(schedule(g, ScheduleOrder::kGraph).is_ok());
  EXPECT_FALSE(schedule(g, ScheduleOrder::kDepthFirst).is_ok());
}

// Depth-first runs a branch to its end before its sibling; the graph's order (breadth-first here) interleaves them.
TEST(Schedule, DepthFirstRunsAChainToItsEnd) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {4});
  g.inputs().push_back(x);
  auto relu = [&](const char* name, graph::Value* in) {
    graph::Value* out = g.add_value(name, DType::kF32, {4});
    g.add_node(OpKind::kRelu, name, {in}, {out}, graph::ActAttrs{graph::Activation::relu()});
    return out;
  };
  graph::Value* a1 = relu("a1", x);
  graph::Value* b1 = relu("b1", x);
  graph::Value* a2 = relu("a2", a1);
  graph::Value* b2 = relu("b2", b1);
  g.outputs() = {a2, b2};
  auto names = [](const std::vector<const graph::Node*>& v) {
    std::vector<std::string> s;
    for (const graph::Node* n : v) s.push_back(n->name);
    return s;
  };
  auto kept = schedule(g, ScheduleOrder::kGraph);
  auto deep = schedule(g, ScheduleOrder::kDepthFirst);
  ASSERT_TRUE(kept.is_ok() && deep.is_ok());
  EXPECT_EQ(names(*kept), (std::vector<std::string>{"a1", "b1", "a2", "b2"}));
  EXPECT_EQ(names(*deep), (std::vector<std::string>{"a1", "a2", "b1", "b2"}));
}

using TestBuild = int (*)();
int build_one() {
  return 1;
}
bool only_rank_4(const graph::Node& n, std::string* why) {
  if (n.output() && n.output()->shape.size() == 4) return true;
  if (why) *why = "only 4-D";
  return false;
}

TEST(OpTable, SupportsReadsTheDeclaredOpsAndTheirChecks) {
  const OpTable<TestBuild> table("test", {{{OpKind::kRelu, OpKind::kSigmoid}, build_one, only_rank_4}});
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, {1, 2, 3, 4});
  graph::Value* y = g.add_value("y", DType::kF32, {1, 2, 3, 4});
  graph::Node* relu = g.add_node(OpKind::kRelu, "relu", {x}, {y}, graph::ActAttrs{graph::Activation::relu()});
  std::string why;
  EXPECT_TRUE(table.supports(*relu, &why));
  ASSERT_NE(table.find(OpKind::kSigmoid), nullptr);
  EXPECT_EQ(table.find(OpKind::kSigmoid)->build(), 1);
  y->shape = {24};
  EXPECT_FALSE(table.supports(*relu, &why));
  EXPECT_EQ(why, "only 4-D");
  relu->op = OpKind::kSoftmax;
  EXPECT_EQ(table.find(OpKind::kSoftmax), nullptr);
  EXPECT_FALSE(table.supports(*relu, &why));
  EXPECT_EQ(why, "the test backend has no kernel for Softmax");
}

}  // namespace
}  // namespace steadyocr::common

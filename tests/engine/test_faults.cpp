#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/faults.h"
#include "engine/recovery.h"
#include "test_util.h"

namespace steadyocr::engine {

using runtime::Runner;
namespace {

// Doubles its input; fails with out-of-memory when the batch exceeds `capacity`.
class FakeRunner : public Runner {
 public:
  explicit FakeRunner(int64_t capacity = 1 << 30) : capacity_(capacity) {}
  Result<Tensor> run(const Tensor& in) override {
    ++calls;
    if (in.dim(0) > capacity_) return Status(StatusCode::kOutOfMemory, "fake: batch too big");
    Tensor out = in.clone();
    for (int64_t i = 0; i < out.numel(); ++i) out.data<float>()[i] *= 2;
    return out;
  }
  std::string backend_name() const override { return "fake"; }
  int calls = 0;
  int64_t capacity_;
};

TEST(FaultSpec, ParsesRulesAndRejectsNonsense) {
  auto r = parse_fault_spec("sticky@det:3, oom@rec:2+,hang@any!");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].kind, "sticky");
  EXPECT_EQ((*r)[0].stage, "det");
  EXPECT_EQ((*r)[0].nth, 3);
  EXPECT_TRUE((*r)[1].from_nth_on);
  EXPECT_TRUE((*r)[2].persistent);
  EXPECT_EQ((*r)[2].nth, 1);
  EXPECT_EQ(persistent_fault_spec(*r), "hang@any:1!");
  for (const char* bad : {"sticky", "melt@det", "sticky@gpu", "oom@rec:0", "oom@rec:x"}) {
    auto b = parse_fault_spec(bad);
    EXPECT_FALSE(b.is_ok()) << bad;
    EXPECT_NE(b.status().message().find(bad), std::string::npos) << b.status().message();
  }
}

TEST(FaultSpec, AHealingDeviceStopsFaultingAfterItsSeconds) {
  auto r = parse_fault_spec("error@det:1+!~0.3");
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_TRUE((*r)[0].persistent);
  EXPECT_GT((*r)[0].until_ms, 0);
  auto inj = std::make_shared<FaultInjector>(*r);
  EXPECT_NE(inj->on_call("det", 1), nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  EXPECT_EQ(inj->on_call("det", 1), nullptr);  // healed
  for (const char* bad : {"error@det~5", "error@det!~", "error@det!~-1", "error@det!~x"}) {
    auto b = parse_fault_spec(bad);
    EXPECT_FALSE(b.is_ok()) << bad;
    EXPECT_NE(b.status().message().find("heal after"), std::string::npos) << b.status().message();
  }
}

TEST(FaultInjection, FiresOnTheNthCallOfItsStageOnly) {
  auto rules = parse_fault_spec("sticky@det:2");
  ASSERT_TRUE(rules.is_ok());
  auto inj = std::make_shared<FaultInjector>(*rules);
  auto inner = std::make_shared<FakeRunner>();
  FaultInjectingRunner det("det", inner, inj), rec("rec", inner, inj);
  Tensor x = testing::random_tensor({1, 4}, 1);
  EXPECT_TRUE(det.run(x).is_ok());
  EXPECT_TRUE(rec.run(x).is_ok());
  auto second = det.run(x);
  ASSERT_FALSE(second.is_ok());
  EXPECT_EQ(second.status().code(), StatusCode::kDeviceFault);
  EXPECT_TRUE(det.run(x).is_ok());  // fires once
}

TEST(OomResilience, RetriesThenSplitsTheBatchAndStitchesResults) {
  auto inner = std::make_shared<FakeRunner>(/*capacity=*/2);
  int freed = 0;
  OomResilientRunner r("rec", inner, [&] { ++freed; });
  Tensor x = testing::random_tensor({6, 3}, 2);
  auto y = r.run(x);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  EXPECT_EQ(freed, 1);
  ASSERT_EQ(y->shape(), x.shape());
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_FLOAT_EQ(y->data<float>()[i], 2 * x.data<float>()[i]);
}

TEST(OomResilience, OneItemThatDoesNotFitIsACapacityError) {
  auto inner = std::make_shared<FakeRunner>(/*capacity=*/0);
  OomResilientRunner r("det", inner, nullptr);
  auto y = r.run(testing::random_tensor({1, 3}, 3));
  ASSERT_FALSE(y.is_ok());
  EXPECT_EQ(y.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(y.status().message().find("does not fit"), std::string::npos);
}

TEST(OomResilience, InjectedBatchOomIsRecoveredBySplitting) {
  auto rules = parse_fault_spec("oom_batch@rec");
  ASSERT_TRUE(rules.is_ok());
  auto inj = std::make_shared<FaultInjector>(*rules);
  auto faulty = std::make_shared<FaultInjectingRunner>("rec", std::make_shared<FakeRunner>(), inj);
  OomResilientRunner r("rec", faulty, nullptr);
  Tensor x = testing::random_tensor({4, 2}, 4);
  auto y = r.run(x);
  ASSERT_TRUE(y.is_ok()) << y.status().to_string();
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_FLOAT_EQ(y->data<float>()[i], 2 * x.data<float>()[i]);
}

}  // namespace
}  // namespace steadyocr::engine

// What crosses the worker pipe: every status code and its finding, both ways; the engine's options whole.
#include <gtest/gtest.h>

#include "engine/options.h"
#include "engine/wire.h"

namespace steadyocr::engine {
namespace {

TEST(Wire, EveryStatusCodeAndItsFindingSurviveThePipe) {
  for (int c = static_cast<int>(StatusCode::kInvalidArgument); c <= static_cast<int>(StatusCode::kInternal); ++c) {
    const StatusCode code = static_cast<StatusCode>(c);
    Status plain(code, std::string("message of ") + status_code_name(code));
    Status back = status_from_json(nlohmann::json::parse(status_to_json(plain).dump()));
    EXPECT_EQ(back.code(), code) << status_code_name(code);
    EXPECT_EQ(back.message(), plain.message());
    EXPECT_FALSE(back.finding().has_value());
    Status with = plain.with_finding({"L3_STICKY_FAULT", "illegal address in conv", "restart the worker"});
    Status back2 = status_from_json(nlohmann::json::parse(status_to_json(with).dump()));
    EXPECT_EQ(back2.code(), code);
    ASSERT_TRUE(back2.finding().has_value());
    EXPECT_EQ(*back2.finding(), *with.finding());
  }
  EXPECT_TRUE(status_from_json(status_to_json(Status::ok())).is_ok());
  // Garbage is a data-loss error, never a silent OK.
  EXPECT_EQ(status_from_json(nlohmann::json::parse(R"({"code": "MELTED"})")).code(), StatusCode::kDataLoss);
  EXPECT_EQ(status_from_json(nlohmann::json::array()).code(), StatusCode::kDataLoss);
}

TEST(Wire, EngineOptionsCrossWhole) {
  EngineOptions o;
  o.pipeline.mode = pipeline::OcrMode::kRecOnly;
  o.pipeline.db.unclip_ratio = 1.75;
  o.pipeline.rec.merge_rows = 48;
  o.pipeline.cls.thresh = 0.8f;
  o.pipeline.execution = pipeline::ExecutionProfile::kDevice;
  o.limits.max_file_bytes = 12345;
  o.gpu_mem_mb = 2048;
  o.ladder = {"cpu-worker", "cpu"};
  auto rules = parse_fault_spec("sticky@det:3,oom@rec:2+!");
  ASSERT_TRUE(rules.is_ok());
  o.faults = *rules;
  o.retry.attempts_per_rung = 3;
  o.log_level = "debug";
  nlohmann::json j = o;
  EngineOptions back = nlohmann::json::parse(j.dump()).get<EngineOptions>();
  EXPECT_EQ(nlohmann::json(back), j);
  EXPECT_EQ(back.pipeline.mode, pipeline::OcrMode::kRecOnly);
  EXPECT_EQ(back.pipeline.rec.merge_rows, 48);
  EXPECT_EQ(back.faults, o.faults);
  EXPECT_EQ(fault_spec(back.faults), "sticky@det:3,oom@rec:2+!");
  EXPECT_EQ(back.limits.max_file_bytes, 12345);
  // Fields a peer leaves out keep their defaults.
  EngineOptions partial = nlohmann::json::parse(R"({"backend": "cpu"})").get<EngineOptions>();
  EXPECT_EQ(partial.backend, "cpu");
  EXPECT_EQ(partial.pipeline.det_limit_side, 960);
}

TEST(Wire, ImageOptionsCrossWithOnlyTheirSetFields) {
  pipeline::ImageOptions o;
  EXPECT_EQ(nlohmann::json(o).dump(), "{}");
  o.mode = pipeline::OcrMode::kDetOnly;
  o.det_box_thresh = 0.7;
  o.drop_score = 0.25f;
  nlohmann::json j = o;
  EXPECT_EQ(j.size(), 3u);
  auto back = nlohmann::json::parse(j.dump()).get<pipeline::ImageOptions>();
  EXPECT_EQ(back, o);
  EXPECT_FALSE(back.use_cls.has_value());
}

}  // namespace
}  // namespace steadyocr::engine

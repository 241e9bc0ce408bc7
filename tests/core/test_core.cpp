#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cstdio>

#include "core/log.h"
#include "core/metrics.h"
#include "core/npy.h"
#include "core/parallel.h"
#include "core/status.h"
#include "test_util.h"

namespace steadyocr {
namespace {

Result<int> half(int x) {
  if (x % 2) return invalid_argument("odd");
  return x / 2;
}

Status quarter(int x, int* out) {
  ASSIGN_OR_RETURN(int h, half(x));
  ASSIGN_OR_RETURN(*out, half(h));
  return Status::ok();
}

TEST(Status, PropagatesThroughAssignOrReturn) {
  int out = 0;
  EXPECT_TRUE(quarter(8, &out).is_ok());
  EXPECT_EQ(out, 2);
  Status s = quarter(6, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.to_string(), "INVALID_ARGUMENT: odd");
  EXPECT_EQ(s.with_context("ctx").message(), "ctx: odd");
}

TEST(Npy, RoundTripsFloatAndInt) {
  std::string path = ::testing::TempDir() + "/t.npy";
  Tensor t = testing::random_tensor({2, 3, 5}, 1);
  ASSERT_TRUE(save_npy(path, t).is_ok());
  auto r = load_npy(path);
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->shape(), (Shape{2, 3, 5}));
  EXPECT_EQ(testing::compare(*r, t).max_abs_diff, 0.0);

  Tensor i = Tensor::from_int64s({4}, {1, -2, 3, 1LL << 40});
  ASSERT_TRUE(save_npy(path, i).is_ok());
  auto ri = load_npy(path);
  ASSERT_TRUE(ri.is_ok());
  EXPECT_EQ(ri->to_int64s(), (std::vector<int64_t>{1, -2, 3, 1LL << 40}));
}

TEST(Npy, RejectsGarbageAndTruncation) {
  std::string path = ::testing::TempDir() + "/bad.npy";
  FILE* f = std::fopen(path.c_str(), "wb");
  std::fputs("not a numpy file", f);
  std::fclose(f);
  EXPECT_EQ(load_npy(path).status().code(), StatusCode::kInvalidArgument);
  Tensor t = testing::random_tensor({100}, 2);
  ASSERT_TRUE(save_npy(path, t).is_ok());
  ASSERT_EQ(::truncate(path.c_str(), 200), 0);
  EXPECT_EQ(load_npy(path).status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(load_npy("/nonexistent/x.npy").status().code(), StatusCode::kNotFound);
}

TEST(Parallel, CoversEveryIndexOnce) {
  set_num_threads(2);
  std::vector<int> hits(1000, 0);
  parallel_for(1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) ++hits[i];
  });
  for (int h : hits) ASSERT_EQ(h, 1);
  std::vector<int> each(37, 0);
  parallel_for_each(37, [&](int64_t i) { each[i] += static_cast<int>(i); });
  for (int i = 0; i < 37; ++i) ASSERT_EQ(each[i], i);
}

TEST(Log, JsonLinesAreJsonWithTheCallersFieldsAndAnyBytes) {
  const log::Level was = log::level();
  log::set_level(log::Level::kInfo);
  log::set_json(true);
  ::testing::internal::CaptureStderr();
  log::write_record(log::Level::kWarn, "http", "a \"quoted\"\tmessage\n with a bad byte \xff",
                    nlohmann::json{{"route", "/ocr"}, {"status", 503}, {"ms", 1.25}});
  log::write_record(log::Level::kInfo, "x", "plain", nlohmann::json("not an object"));
  const std::string out = ::testing::internal::GetCapturedStderr();
  log::set_json(false);
  log::set_level(was);
  std::vector<nlohmann::json> lines;
  for (size_t at = 0, end; at < out.size(); at = end + 1) {
    end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    if (end > at) lines.push_back(nlohmann::json::parse(out.substr(at, end - at)));  // throws on a line not JSON
  }
  ASSERT_EQ(lines.size(), 2u) << out;
  EXPECT_EQ(lines[0]["level"], "warn");
  EXPECT_EQ(lines[0]["component"], "http");
  EXPECT_EQ(lines[0]["msg"], "a \"quoted\"\tmessage\n with a bad byte \xef\xbf\xbd");  // U+FFFD for the byte
  EXPECT_EQ(lines[0]["route"], "/ocr");
  EXPECT_EQ(lines[0]["status"], 503);
  EXPECT_EQ(lines[0]["ms"], 1.25);
  EXPECT_TRUE(lines[0]["ts"].get<std::string>().ends_with("Z")) << lines[0];
  EXPECT_EQ(lines[1]["fields"], "not an object");
}

TEST(Metrics, CountsWithLabelsAndRendersPrometheus) {
  metrics::reset_for_testing();
  metrics::describe("steadyocr_fallback_total", "Steps down the backend ladder");
  metrics::inc("steadyocr_fallback_total", {{"from", "cuda"}, {"to", "cpu"}, {"reason", "L1_NO_DRIVER"}});
  metrics::inc("steadyocr_fallback_total", {{"from", "cuda"}, {"to", "cpu"}, {"reason", "L1_NO_DRIVER"}});
  EXPECT_EQ(metrics::value("steadyocr_fallback_total", {{"from", "cuda"}, {"to", "cpu"}, {"reason", "L1_NO_DRIVER"}}),
            2.0);
  std::string text = metrics::prometheus_text();
  EXPECT_NE(text.find("steadyocr_fallback_total{from=\"cuda\",to=\"cpu\",reason=\"L1_NO_DRIVER\"} 2"),
            std::string::npos)
      << text;
}

TEST(Metrics, ExpositionEscapesLabelValuesAndCarriesHelpAndTypes) {
  metrics::reset_for_testing();
  metrics::describe("z_bytes", "Bytes held", /*is_counter=*/false);
  metrics::set_gauge("z_bytes", {{"path", "a\"b\\c\nd"}}, 1.5);
  metrics::inc("w_total");
  const std::string text = metrics::prometheus_text();
  EXPECT_NE(text.find("# HELP z_bytes Bytes held\n# TYPE z_bytes gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("z_bytes{path=\"a\\\"b\\\\c\\nd\"} 1.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE w_total counter\nw_total 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("# HELP w_total"), std::string::npos) << text;  // no help given: no HELP line
}

TEST(Metrics, IncEachAddsToOneCounterPerLabel) {
  metrics::reset_for_testing();
  metrics::inc("b_ms_total", {{"op", "Conv"}}, 1.5);
  metrics::inc_each("b_ms_total", "op", {{"Conv", 2.0}, {"Add", 0.25}});
  metrics::inc_each("b_ms_total", "op", {{"Add", 0.25}});
  EXPECT_EQ(metrics::value("b_ms_total", {{"op", "Conv"}}), 3.5);
  EXPECT_EQ(metrics::value("b_ms_total", {{"op", "Add"}}), 0.5);
  EXPECT_EQ(metrics::total("b_ms_total"), 4.0);
}

TEST(Metrics, HistogramsRenderCumulativeBucketsSumAndCount) {
  metrics::reset_for_testing();
  const std::vector<double> b = {0.01, 0.1, 1};
  metrics::observe("x_seconds", {{"stage", "det"}}, 0.0078125, b);
  metrics::observe("x_seconds", {{"stage", "det"}}, 1, b);  // on a bound: counted in it (le)
  metrics::observe("x_seconds", {{"stage", "det"}}, 4, b);
  EXPECT_EQ(metrics::value("x_seconds", {{"stage", "det"}}), 3.0);
  metrics::set_counter("y_total", {{"rung", "cpu-worker"}}, 4);
  metrics::set_counter("y_total", {{"rung", "cpu-worker"}}, 5);
  std::string text = metrics::prometheus_text();
  EXPECT_NE(text.find("# TYPE x_seconds histogram\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_bucket{stage=\"det\",le=\"0.01\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_bucket{stage=\"det\",le=\"0.1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_bucket{stage=\"det\",le=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_bucket{stage=\"det\",le=\"+Inf\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_sum{stage=\"det\"} 5.0078125\n"), std::string::npos) << text;
  EXPECT_NE(text.find("x_seconds_count{stage=\"det\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE y_total counter\ny_total{rung=\"cpu-worker\"} 5\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace steadyocr

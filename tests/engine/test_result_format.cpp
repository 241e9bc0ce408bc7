// The CLI's output formats of engine outcomes (what ocr_eval.py reads).
#include <gtest/gtest.h>

#include "engine/result_format.h"

namespace steadyocr::engine {
namespace {

TEST(ResultFormat, JsonIsKeyedByImageAndReadableByTheEvaluator) {
  ImageOutcome ok;
  ok.name = "a.jpg";
  ok.result.backend = "cpu";
  ok.result.lines.push_back(
      {"发票 No.1", 0.98766f, {cv::Point2f(1, 2), cv::Point2f(30, 2), cv::Point2f(30, 9.5f), cv::Point2f(1, 9.5f)}});
  ok.result.timings = {1.234, 2, 3, 0, 4, 10.234};
  ImageOutcome bad;
  bad.name = "b.png";
  bad.ok = false;
  bad.error = "b.png: PNG file is truncated or corrupt";
  std::string json = format_outcomes({ok, bad}, OutputFormat::kJson);
  auto doc = nlohmann::json::parse(json);
  ASSERT_TRUE(doc.contains("a.jpg"));
  const auto& a = doc["a.jpg"];
  EXPECT_EQ(a["lines"][0]["text"], "发票 No.1");
  EXPECT_DOUBLE_EQ(a["lines"][0]["score"].get<double>(), 0.9877);
  EXPECT_EQ(a["lines"][0]["box"][0][0], 1);
  EXPECT_DOUBLE_EQ(a["lines"][0]["box"][2][1].get<double>(), 9.5);
  EXPECT_EQ(a["backend"], "cpu");
  EXPECT_DOUBLE_EQ(a["timings_ms"]["decode"].get<double>(), 1.23);
  for (const char* k : {"decode", "det", "post", "cls", "rec", "total"}) EXPECT_TRUE(a["timings_ms"].contains(k));
  EXPECT_TRUE(doc["b.png"]["lines"].empty());  // the evaluator reads "lines" of every entry
  EXPECT_EQ(doc["b.png"]["error"], bad.error);
  EXPECT_NE(json.find("发票"), std::string::npos);  // UTF-8, not \u escapes

  std::string jsonl = format_outcomes({ok, bad}, OutputFormat::kJsonl);
  auto first = nlohmann::json::parse(jsonl.substr(0, jsonl.find('\n')));
  EXPECT_EQ(first["image"], "a.jpg");
  std::string tsv = format_outcomes({ok, bad}, OutputFormat::kTsv);
  EXPECT_EQ(tsv,
            "image\tline\tscore\tbox\ttext\na.jpg\t0\t0.9877\t1,2,30,2,30,9.5,1,9.5\t发票 No.1\n"
            "b.png\terror\t\t\tb.png: PNG file is truncated or corrupt\n");
  std::string text = format_outcomes({ok, bad}, OutputFormat::kText);
  EXPECT_EQ(text, "== a.jpg ==\n发票 No.1\n== b.png ==\n[error] b.png: PNG file is truncated or corrupt\n");
}

}  // namespace
}  // namespace steadyocr::engine

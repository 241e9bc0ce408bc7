// The `steadyocr ocr` command as users run it: exit codes, formats, per-file errors, outputs.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cli/cli_run.h"
#include "test_util.h"

namespace steadyocr {
namespace {

namespace fs = std::filesystem;

using testing::CliRun;
using testing::slurp;

std::string binary() {
  return testing::steadyocr_binary();
}
std::string decode_dir() {
  return testing::source_dir() + "/tests/data/ocr/decode";
}

CliRun steadyocr(const std::string& args) {
  return testing::run_steadyocr(args);
}

class CliOcr : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::exists(binary())) << binary() << " not built (ninja -C <build> steadyocr)"; }
  std::string models() { return "--models " + testing::models_dir() + " --quiet "; }
};

TEST_F(CliOcr, UsageErrorsExitWithTwo) {
  EXPECT_EQ(steadyocr("ocr").code, 2);  // no input
  EXPECT_EQ(steadyocr("ocr --format xml " + decode_dir() + "/line.jpg").code, 2);
  EXPECT_EQ(steadyocr("ocr --det-only --rec-only " + decode_dir() + "/line.jpg").code, 2);
  EXPECT_EQ(steadyocr("ocr --threads 0 " + decode_dir() + "/line.jpg").code, 2);
  EXPECT_EQ(steadyocr("ocr --no-such-flag " + decode_dir() + "/line.jpg").code, 2);
  CliRun missing = steadyocr("ocr --models /nonexistent/dir " + decode_dir() + "/line.jpg");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/dir/ch_PP-OCRv4_det_infer.onnx"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("scripts/setup.sh"), std::string::npos) << missing.err;
  fs::path empty = fs::path(::testing::TempDir()) / "cli_empty_dir";
  fs::create_directories(empty);
  CliRun none = steadyocr("ocr " + empty.string());
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no image files"), std::string::npos) << none.err;
  CliRun backend = steadyocr("ocr " + models() + "--backend no-such-backend " + decode_dir() + "/line.jpg");
  EXPECT_EQ(backend.code, 2);
  EXPECT_NE(backend.err.find("no-such-backend"), std::string::npos) << backend.err;
}

TEST_F(CliOcr, JsonForAGoodImageExitsZero) {
  SO_REQUIRE_MODELS();
  CliRun r = steadyocr("ocr " + models() + decode_dir() + "/line.webp");
  ASSERT_EQ(r.code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_TRUE(doc.contains("line.webp")) << r.out;
  const auto& e = doc["line.webp"];
  ASSERT_EQ(e["lines"].size(), 1u);
  EXPECT_EQ(e["lines"][0]["text"], "receipt2026");
  EXPECT_EQ(e["lines"][0]["box"].size(), 4u);
  EXPECT_FALSE(e["backend"].get<std::string>().empty());
  for (const char* k : {"decode", "det", "post", "cls", "rec", "total"}) EXPECT_TRUE(e["timings_ms"].contains(k));
  EXPECT_FALSE(e.contains("error"));
}

TEST_F(CliOcr, BadFilesAreNamedTheRunContinuesAndExitsOne) {
  SO_REQUIRE_MODELS();
  std::string out = ::testing::TempDir() + "/cli_mixed.json";
  CliRun r = steadyocr("ocr " + models() + "-o " + out + " " + decode_dir() + "/truncated.jpg " + decode_dir() +
                       "/line.bmp " + decode_dir() + "/huge_dims.png " + decode_dir() + "/empty.jpg /no/such/file.png");
  EXPECT_EQ(r.code, 1);
  for (const char* f : {"truncated.jpg", "huge_dims.png", "empty.jpg", "/no/such/file.png"}) {
    EXPECT_NE(r.err.find(f), std::string::npos) << f << " not named in: " << r.err;
  }
  EXPECT_EQ(r.out, "");  // results went to -o
  auto doc = nlohmann::json::parse(slurp(out));
  EXPECT_EQ(doc["line.bmp"]["lines"][0]["text"], "receipt2026");
  for (const char* f : {"truncated.jpg", "huge_dims.png", "empty.jpg", "file.png"}) {
    ASSERT_TRUE(doc.contains(f)) << f;
    EXPECT_TRUE(doc[f].contains("error")) << f;
    EXPECT_TRUE(doc[f]["lines"].empty()) << f;
  }
}

// On a worker rung two chunks are in flight at once (chunks of 8 with --threads 1): the results still come out in
// the input order, a file that cannot be read is named where it stands, and no image is lost or read twice.
TEST_F(CliOcr, ChunksInFlightKeepTheInputOrder) {
  SO_REQUIRE_MODELS();
  const fs::path dir = fs::path(::testing::TempDir()) / "cli_chunks_in_flight";
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::string args;
  for (int i = 0; i < 21; ++i) {
    const std::string name = fmt::format("img_{:02d}.png", i);
    if (i != 11) fs::copy_file(decode_dir() + "/line_palette.png", dir / name);  // img_11 is missing
    args += " " + (dir / name).string();
  }
  CliRun r = steadyocr("ocr " + models() + "--ladder cpu-worker --threads 1 --rec-only --format text" + args);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("img_11.png"), std::string::npos) << r.err;
  std::string expected;
  for (int i = 0; i < 21; ++i) {
    expected += fmt::format("== img_{:02d}.png ==\n", i) + (i == 11 ? "[error]\n" : "receipt2026\n");
  }
  // The missing file's error line, its message cut: "[error] <path>: ..." -> "[error]".
  std::string out = r.out;
  const size_t at = out.find("[error] ");
  ASSERT_NE(at, std::string::npos) << out;
  out.erase(at + 7, out.find('\n', at) - (at + 7));
  EXPECT_EQ(out, expected);
}

TEST_F(CliOcr, OtherFormats) {
  SO_REQUIRE_MODELS();
  const std::string in = decode_dir() + "/line_gray.png " + decode_dir() + "/rgba_white_text.png";
  CliRun text = steadyocr("ocr " + models() + "--format text " + in);
  ASSERT_EQ(text.code, 0) << text.err;
  EXPECT_EQ(text.out, "== line_gray.png ==\nreceipt2026\n== rgba_white_text.png ==\nreceipt2026\n");
  CliRun jsonl = steadyocr("ocr " + models() + "--format jsonl " + in);
  ASSERT_EQ(jsonl.code, 0) << jsonl.err;
  std::istringstream rows(jsonl.out);
  std::string row;
  int n = 0;
  while (std::getline(rows, row)) {
    auto j = nlohmann::json::parse(row);
    EXPECT_EQ(j["lines"][0]["text"], "receipt2026");
    ++n;
  }
  EXPECT_EQ(n, 2);
  CliRun tsv = steadyocr("ocr " + models() + "--format tsv " + in);
  ASSERT_EQ(tsv.code, 0) << tsv.err;
  EXPECT_EQ(tsv.out.rfind("image\tline\tscore\tbox\ttext\nline_gray.png\t0\t", 0), 0u) << tsv.out;
  EXPECT_NE(tsv.out.find("\treceipt2026\n"), std::string::npos);
}

TEST_F(CliOcr, DirectoryInputAndVisualisation) {
  SO_REQUIRE_MODELS();
  fs::path dir = fs::path(::testing::TempDir()) / "cli_dir";
  fs::path vis = fs::path(::testing::TempDir()) / "cli_vis";
  fs::remove_all(dir);
  fs::remove_all(vis);
  fs::create_directories(dir / "sub");
  fs::copy_file(decode_dir() + "/line.jpg", dir / "b.jpg");
  fs::copy_file(decode_dir() + "/line.webp", dir / "a.webp");
  fs::copy_file(decode_dir() + "/line.tif", dir / "sub" / "c.tif");
  std::ofstream(dir / "notes.txt") << "not an image";
  CliRun r = steadyocr("ocr " + models() + "--format text --vis " + vis.string() + " " + dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  // Sorted, non-recursive, only image extensions.
  EXPECT_EQ(r.out, "== a.webp ==\nreceipt2026\n== b.jpg ==\nreceipt2026\n");
  EXPECT_TRUE(fs::exists(vis / "a.webp"));
  EXPECT_TRUE(fs::exists(vis / "b.jpg"));
  CliRun rec = steadyocr("ocr " + models() + "-r --format text " + dir.string());
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_NE(rec.out.find("== c.tif =="), std::string::npos) << rec.out;
}

TEST_F(CliOcr, RecOnlyAndDetOnlyModes) {
  SO_REQUIRE_MODELS();
  CliRun rec = steadyocr("ocr " + models() + "--rec-only --format text " + decode_dir() + "/line_palette.png");
  ASSERT_EQ(rec.code, 0) << rec.err;
  EXPECT_EQ(rec.out, "== line_palette.png ==\nreceipt2026\n");
  CliRun det = steadyocr("ocr " + models() + "--det-only " + decode_dir() + "/line_palette.png");
  ASSERT_EQ(det.code, 0) << det.err;
  auto doc = nlohmann::json::parse(det.out);
  ASSERT_EQ(doc["line_palette.png"]["lines"].size(), 1u);
  EXPECT_EQ(doc["line_palette.png"]["lines"][0]["text"], "");
}

// The default resize (lanczos) keeps the gaps between Latin words; --rec-interp linear (PaddleOCR's bilinear) drops
// them on this page ("Service net net" -> "Servicenetnet"); the labels are the renderer's.
TEST_F(CliOcr, DefaultResizeKeepsTheSpacesLinearDropsThem) {
  SO_REQUIRE_MODELS();
  const std::string page = testing::source_dir() + "/tests/data/ocr/latin/spaces.jpg";
  std::ifstream labels_file(testing::source_dir() + "/tests/data/ocr/latin/labels.txt");
  std::string label_line;
  ASSERT_TRUE(std::getline(labels_file, label_line));
  std::multiset<std::string> labels;
  for (const auto& l : nlohmann::json::parse(label_line.substr(label_line.find('\t') + 1))) {
    labels.insert(l["transcription"].get<std::string>());
  }
  auto read = [&](const std::string& flags) {
    CliRun r = steadyocr("ocr " + models() + flags + page);
    EXPECT_EQ(r.code, 0) << r.err;
    std::multiset<std::string> got;
    const auto doc = nlohmann::json::parse(r.out);
    for (const auto& l : doc["spaces.jpg"]["lines"]) got.insert(l["text"].get<std::string>());
    return got;
  };
  EXPECT_EQ(read(""), labels);
  EXPECT_EQ(read("--rec-interp lanczos "), labels);
  const auto linear = read("--rec-interp linear ");
  EXPECT_EQ(linear.size(), labels.size());
  EXPECT_EQ(linear.count("Servicenetnet"), 1u);
  EXPECT_EQ(linear.count("Service net net"), 0u);
  CliRun bad = steadyocr("ocr " + models() + "--rec-interp nearest " + page);
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--rec-interp"), std::string::npos) << bad.err;
  CliRun narrow = steadyocr("ocr " + models() + "--rec-min-width 8 " + page);
  EXPECT_EQ(narrow.code, 2);
  EXPECT_NE(narrow.err.find("--rec-min-width"), std::string::npos) << narrow.err;
}

TEST_F(CliOcr, JsonIsReadByTheEvaluator) {
  SO_REQUIRE_MODELS();
  const std::string eval = testing::source_dir() + "/../shared/tools/ocr_eval.py";
  if (!fs::exists(eval) || !fs::exists("/usr/bin/python3")) GTEST_SKIP() << eval << " or /usr/bin/python3 not found";
  std::string docs = testing::source_dir() + "/tests/data/ocr/docs";
  std::string out = ::testing::TempDir() + "/cli_docs.json";
  CliRun r = steadyocr("ocr " + models() + "-o " + out + " " + docs);
  ASSERT_EQ(r.code, 0) << r.err;
  std::string score = ::testing::TempDir() + "/cli_score.json";
  std::string cmd = "/usr/bin/python3 " + eval + " " + docs + "/labels.txt " + out + " --json >" + score;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  auto s = nlohmann::json::parse(slurp(score));
  EXPECT_EQ(s["images_missing"], 0);
  EXPECT_DOUBLE_EQ(s["line_exact"].get<double>(), 1.0);  // the committed documents read exactly
  EXPECT_DOUBLE_EQ(s["det_hmean"].get<double>(), 1.0);
}

}  // namespace
}  // namespace steadyocr

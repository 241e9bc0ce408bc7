// `steadyocr ocr` under faults and fallback, as users see it: a batch with a sticky fault injected mid-way
// finishes with the clean run's results and its summary lists what happened; every result carries its
// backend and the ladder moves; a GPU that is not there is never a silent fallback.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_run.h"
#include "test_util.h"

namespace steadyocr {
namespace {

using CliResult = testing::CliRun;

CliResult run(const std::string& env, const std::string& args) {
  return testing::run_steadyocr(args, env);
}

std::map<std::string, std::vector<std::string>> texts(const nlohmann::json& j) {
  std::map<std::string, std::vector<std::string>> t;
  for (auto& [name, r] : j.items()) {
    for (auto& l : r["lines"]) t[name].push_back(l["text"]);
  }
  return t;
}

class CliFallback : public ::testing::Test {
 protected:
  void SetUp() override {
    SO_REQUIRE_MODELS();
    if (!testing::file_exists(std::string(STEADYOCR_BINARY_DIR) + "/steadyocr")) GTEST_SKIP() << "steadyocr not built";
  }
  // `inputs`: the four documents by default.
  std::string args(const std::string& extra, const std::string& inputs = "/tests/data/engine") {
    return "ocr --models " + testing::models_dir() + " --threads 2 " + extra + " " + testing::source_dir() + inputs;
  }
};

TEST_F(CliFallback, StickyFaultMidBatchGivesTheCleanResultsAndTheSummarySaysSo) {
  CliResult clean = run("", args("--backend cpu -q"));
  ASSERT_EQ(clean.code, 0) << clean.err;
  // The CPU backend in a supervised worker stands in for the GPU rung; every worker dies on its 2nd det call,
  // so the engine steps down to the in-process CPU rung.
  // No re-probe during the run (a slow host's run outlasted the default 5 s and the worker rung climbed back).
  CliResult faulty = run("STEADYOCR_FAULT='sticky@det:2!'", args("--ladder cpu-worker,cpu --reprobe-ms 600000"));
  ASSERT_EQ(faulty.code, 0) << faulty.err;
  auto a = nlohmann::json::parse(clean.out), b = nlohmann::json::parse(faulty.out);
  EXPECT_EQ(texts(a), texts(b));
  EXPECT_EQ(a.size(), b.size());
  // The summary lists the step down with its reason, and the worker losses.
  EXPECT_NE(faulty.err.find("backend event"), std::string::npos) << faulty.err;
  EXPECT_NE(faulty.err.find("cpu-worker -> cpu: DEVICE_FAULT"), std::string::npos) << faulty.err;
  EXPECT_NE(faulty.err.find("cpu-worker worker:"), std::string::npos) << faulty.err;
  // Results say where they ran and which ladder moves touched them.
  int on_cpu = 0, with_event = 0;
  for (auto& [name, r] : b.items()) {
    on_cpu += r["rung"] == "cpu";  // the in-process rung (cpu-worker runs the cpu backend too)
    EXPECT_EQ(r["backend"], "cpu");
    with_event += !r["fallbacks"].empty();
    for (auto& e : r["fallbacks"]) {
      EXPECT_EQ(e["reason"], "DEVICE_FAULT");
      EXPECT_EQ(e["from"], "cpu-worker");
      EXPECT_EQ(e["to"], "cpu");
    }
  }
  EXPECT_GE(on_cpu, 1);
  EXPECT_GE(with_event, 1);
}

TEST_F(CliFallback, NoGpuIsReportedNeverSilent) {
  CliResult r = run("", args("-q"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::string backend = j.begin().value()["backend"];
  if (backend.rfind("cuda", 0) == 0) GTEST_SKIP() << "a GPU serves here";
  EXPECT_EQ(backend, "cpu");
  // Even with --quiet the step down from the GPU rungs is on stderr, with the doctor's code and a fix.
  EXPECT_NE(r.err.find("cuda-fp32 -> cpu: L1_"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fix:"), std::string::npos) << r.err;
  for (auto& [name, res] : j.items()) EXPECT_TRUE(res.contains("fallbacks"));
}

// The Vulkan rung: with CUDA out (the plugin moved away) `--backend auto` lands on vulkan, visibly, and reads what the
// cpu backend reads. Lavapipe (a CPU Vulkan device) stands in for the GPU in CI: STEADYOCR_VULKAN_CPU_DEVICES=1 puts
// it on the ladder.
TEST_F(CliFallback, WithCudaOutTheLadderLandsOnVulkan) {
  const std::string env = "STEADYOCR_VULKAN_CPU_DEVICES=1 STEADYOCR_CUDA_PLUGIN=/nonexistent/libsteadyocr_cuda13.so";
  // Two of the documents: lavapipe runs the models on the CPU, slowly (four took 251 s in the pristine CI of 20560b2);
  // the Vulkan backend's results are the VulkanModels and op-case tests' job, the ladder's landing is this one's.
  const std::string two =
      "/tests/data/engine/doc_0000.jpg " + testing::source_dir() + "/tests/data/engine/doc_0002.jpg";
  CliResult r = run(env, args("-q", two));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const std::string backend = j.begin().value()["backend"];
  if (backend == "cpu") GTEST_SKIP() << "no Vulkan device here (the cpu rung serves): " << r.err;
  EXPECT_EQ(backend, "vulkan");
  EXPECT_EQ(j.size(), 2u);
  // Named with the finding that ruled CUDA out (no driver here; PLUGIN_NOT_FOUND on a GPU machine).
  EXPECT_NE(r.err.find("cuda-fp32 -> vulkan: "), std::string::npos) << r.err;
  for (auto& [name, res] : j.items()) {
    EXPECT_EQ(res["rung"], "vulkan") << name;
    ASSERT_TRUE(res.contains("fallbacks")) << name;
    ASSERT_FALSE(res["fallbacks"].empty()) << name;
    EXPECT_EQ(res["fallbacks"][0]["to"], "vulkan") << name;
  }
  CliResult cpu = run("", args("--backend cpu -q", two));
  ASSERT_EQ(cpu.code, 0) << cpu.err;
  EXPECT_EQ(texts(j), texts(nlohmann::json::parse(cpu.out)));
}

TEST_F(CliFallback, RequireGpuTurnsMissingGpuIntoAnError) {
  CliResult r = run("", args("--require-gpu -q"));
  if (r.code == 0) GTEST_SKIP() << "a GPU serves here";
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--require-gpu: no GPU backend can serve"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("L1_"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliFallback, BadFaultSpecIsAnError) {
  CliResult r = run("STEADYOCR_FAULT='melt@det'", args("--ladder cpu-worker,cpu -q"));
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("unknown kind 'melt'"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace steadyocr

// `steadyocr bench` as users run it: the JSON report's figures, the table, usage errors, failed images, and a
// fallback that the report cannot hide.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/cli_run.h"
#include "test_util.h"

namespace steadyocr {
namespace {

namespace fs = std::filesystem;

using BenchRun = testing::CliRun;
using testing::slurp;

std::string binary() {
  return testing::steadyocr_binary();
}
std::string engine_dir() {
  return testing::source_dir() + "/tests/data/engine";
}

BenchRun steadyocr(const std::string& args, const std::string& env = "") {
  return testing::run_steadyocr(args, env);
}

int images_in(const std::string& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir))
    n += e.path().extension() == ".jpg" || e.path().extension() == ".png";
  return n;
}

class CliBench : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(fs::exists(binary())) << binary() << " not built (ninja -C <build> steadyocr)"; }
  std::string bench(const std::string& extra) {
    return "bench --models " + testing::models_dir() + " --threads 2 " + extra;
  }
};

TEST_F(CliBench, UsageErrorsExitWithTwo) {
  EXPECT_EQ(steadyocr("bench").code, 2);  // no input
  EXPECT_EQ(steadyocr("bench --repeat 0 " + engine_dir()).code, 2);
  EXPECT_EQ(steadyocr("bench --warmup -1 " + engine_dir()).code, 2);
  EXPECT_EQ(steadyocr("bench --no-such-flag " + engine_dir()).code, 2);
  EXPECT_EQ(steadyocr("bench --det-only --rec-only " + engine_dir()).code, 2);
  fs::path empty = fs::path(::testing::TempDir()) / "bench_empty_dir";
  fs::create_directories(empty);
  BenchRun none = steadyocr(bench(empty.string()));
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no image files"), std::string::npos) << none.err;
  BenchRun backend = steadyocr(bench("--backend no-such-backend " + engine_dir()));
  EXPECT_EQ(backend.code, 2);
  EXPECT_NE(backend.err.find("no-such-backend"), std::string::npos) << backend.err;
  BenchRun models = steadyocr("bench --models /nonexistent/dir " + engine_dir());
  EXPECT_EQ(models.code, 2);
  EXPECT_NE(models.err.find("scripts/setup.sh"), std::string::npos) << models.err;
}

TEST_F(CliBench, NothingReadableIsAUsageError) {
  SO_REQUIRE_MODELS();
  BenchRun r = steadyocr(bench("/no/such/a.png /no/such/b.jpg"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("/no/such/a.png"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no images to benchmark"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST_F(CliBench, JsonReportOnTheEngineImages) {
  SO_REQUIRE_MODELS();
  const int n = images_in(engine_dir());
  ASSERT_GT(n, 0);
  BenchRun r = steadyocr(bench("--backend cpu --repeat 1 --warmup 0 --json " + engine_dir()));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["images"], n);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["passes"], 1);
  EXPECT_EQ(j["warmup"], 0);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["backend"], "cpu");
  EXPECT_EQ(j["backends_used"]["cpu"], n);
  EXPECT_FALSE(j["fell_back"].get<bool>());
  EXPECT_TRUE(j["events"].empty());
  EXPECT_GT(j["startup_ms"].get<double>(), 0);
  ASSERT_EQ(j["pass_ms"].size(), 1u);
  const double pass = j["pass_ms"][0];
  EXPECT_GT(pass, 0);
  EXPECT_DOUBLE_EQ(j["pass_ms_median"].get<double>(), pass);
  EXPECT_DOUBLE_EQ(j["pass_ms_best"].get<double>(), pass);
  const double ips = j["images_per_s"];
  EXPECT_GT(ips, 0);
  EXPECT_NEAR(ips, n * 1000.0 / pass, 0.01);
  const auto& st = j["stage_ms"];
  EXPECT_EQ(st["samples"], n);
  for (const char* k : {"decode", "det", "post", "cls", "rec", "total"}) {
    ASSERT_TRUE(st.contains(k)) << k;
    EXPECT_GE(st[k]["p90"].get<double>(), st[k]["median"].get<double>()) << k;
  }
  const double det = st["det"]["mean"], rec = st["rec"]["mean"], total = st["total"]["mean"];
  EXPECT_GT(det, 0);
  EXPECT_GT(rec, 0);
  EXPECT_GT(st["decode"]["mean"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(st["cls"]["mean"].get<double>(), 0);  // no --cls
  EXPECT_GE(total, det + rec);
  // --warmup 0: the first pass is the timed one, so it adds nothing over itself.
  EXPECT_DOUBLE_EQ(j["first_pass_ms"].get<double>(), pass);
  EXPECT_NEAR(j["new_shape_ms_per_image"].get<double>(), 0.0, 1e-3);
  // The host's CPU over the timed pass: the engine computes on this process's two threads, so at least a good part of
  // one core and at most the two (and a little for the process's other threads).
  const double cpu = j["host_cpu_ms_per_image"], cores = j["host_cpu_cores"];
  EXPECT_NEAR(cpu * n, cores * pass, 0.01 * cpu * n + 1.0);
  EXPECT_GT(cores, 0.3);
  EXPECT_LT(cores, 2.5);
  EXPECT_EQ(j["first_pass_stage_ms"]["samples"], n);
  EXPECT_DOUBLE_EQ(j["first_pass_stage_ms"]["total"]["mean"].get<double>(), total);
  for (const char* k : {"decode", "det", "post", "cls", "rec", "total"}) {
    EXPECT_GE(st[k]["p99"].get<double>(), st[k]["p90"].get<double>()) << k;
  }

  // The time table: inside det and rec, per image. The parts measured on the host fit inside the stage.
  const auto& t = j["time_table_ms"];
  ASSERT_TRUE(t.contains("det") && t.contains("rec")) << t.dump();
  EXPECT_DOUBLE_EQ(t["det"]["calls"].get<double>(), 1.0);  // one detector call per image
  EXPECT_GE(t["rec"]["calls"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(t["cls"]["calls"].get<double>(), 0.0);  // no --cls
  for (const char* m : {"det", "rec"}) {
    const auto& x = t[m];
    EXPECT_GT(x["run"].get<double>(), 0) << m;
    EXPECT_GT(x["prep"].get<double>(), 0) << m;
    const double inside = x["prep"].get<double>() + x["wait"].get<double>() + x["plan"].get<double>() +
                          x["run"].get<double>() + x["finish"].get<double>();
    EXPECT_LE(inside, st[m]["mean"].get<double>() * 1.001 + 0.01) << m << ": " << x.dump();
    // The cpu backend measures no device events.
    EXPECT_DOUBLE_EQ(x["compute"].get<double>(), 0.0) << m;
    EXPECT_DOUBLE_EQ(x["upload"].get<double>(), 0.0) << m;
  }
  EXPECT_GT(t["rec"]["finish"].get<double>(), 0);  // CTC decoding
  // The first pass plans every shape: its plan time is in the first pass only, but a timed pass still looks up.
  EXPECT_GE(t["det"]["plan"].get<double>(), 0);
}

// The host's CPU counts the worker processes: with the cpu backend in a worker (as every GPU rung runs), this process
// only waits on pipes, and without the workers' CPU the figure would be near zero.
TEST_F(CliBench, HostCpuCountsTheWorkerProcesses) {
  SO_REQUIRE_MODELS();
  BenchRun r = steadyocr(bench("--ladder cpu-worker --repeat 1 --warmup 0 --json " + engine_dir()));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["rung"], "cpu-worker");
  const double cores = j["host_cpu_cores"], cpu = j["host_cpu_ms_per_image"];
  std::printf("host CPU %.1f ms per image, %.2f cores busy\n", cpu, cores);
  EXPECT_GT(cores, 0.3);
  EXPECT_LT(cores, 2.5);
  EXPECT_NEAR(cpu * j["images"].get<double>(), cores * j["pass_ms"][0].get<double>(),
              0.01 * cpu * j["images"].get<double>() + 1.0);
}

// A pass goes to the engine as one call by default; --chunk N sends calls of N images. Both read every image.
TEST_F(CliBench, ChunkSetsTheImagesPerEngineCall) {
  SO_REQUIRE_MODELS();
  const int n = images_in(engine_dir());
  ASSERT_GE(n, 3);
  for (const std::string& flag : {std::string(), std::string("--chunk 2")}) {
    BenchRun r = steadyocr(bench("--ladder cpu-worker --repeat 1 --warmup 0 --json " + flag + " " + engine_dir()));
    ASSERT_EQ(r.code, 0) << flag << ": " << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["chunk_images"].get<int>(), flag.empty() ? n : 2) << flag;
    EXPECT_EQ(j["images"].get<int>(), n) << flag;
    EXPECT_EQ(j["stage_ms"]["samples"].get<int>(), n) << flag;
    EXPECT_EQ(j["failed"].get<int>(), 0) << flag;
  }
  EXPECT_EQ(steadyocr(bench("--chunk -1 " + engine_dir())).code, 2);
}

// With a warm-up pass the first pass is that one: new shapes there, none in the timed one.
TEST_F(CliBench, FirstPassIsReportedBesideTheSteadyOne) {
  SO_REQUIRE_MODELS();
  BenchRun r = steadyocr(bench("--backend cpu --repeat 1 --warmup 1 --json " + engine_dir() + "/doc_0000.jpg"));
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  const double first = j["first_pass_ms"], steady = j["pass_ms_median"];
  EXPECT_GT(first, 0);
  EXPECT_NEAR(j["new_shape_ms_per_image"].get<double>(), first - steady, 1e-3);
  EXPECT_EQ(j["first_pass_stage_ms"]["samples"], 1);
  EXPECT_EQ(j["stage_ms"]["samples"], 1);
  EXPECT_GT(j["first_pass_stage_ms"]["total"]["median"].get<double>(), 0);
  std::printf("first pass %.1f ms, steady %.1f ms\n", first, steady);
}

TEST_F(CliBench, TableAndFailedImages) {
  SO_REQUIRE_MODELS();
  const std::string bad = testing::source_dir() + "/tests/data/ocr/decode/truncated.jpg";
  BenchRun r = steadyocr(bench("--backend cpu --repeat 2 --warmup 0 " + engine_dir() + "/doc_0000.jpg " + bad));
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("truncated.jpg"), std::string::npos) << r.err;
  for (const char* s : {"2 images", "images/s", "startup", "first pass", "det", "rec", "total",
                        "results by backend: cpu 2", "backend events: none", "1 images failed"}) {
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in: " << r.out;
  }
  EXPECT_EQ(r.out.find("FELL BACK"), std::string::npos) << r.out;
}

TEST_F(CliBench, FallbackIsLoud) {
  SO_REQUIRE_MODELS();
  // The CPU backend in a supervised worker stands in for a GPU rung; each worker dies on its 2nd det call, so the
  // engine steps down to the in-process CPU rung during the timed pass.
  const std::string fault = "STEADYOCR_FAULT='sticky@det:2!'";
  // No re-probe during the pass (on a slow host it outlasted the default 5 s and the worker rung climbed back).
  BenchRun j = steadyocr(
      bench("--ladder cpu-worker,cpu --reprobe-ms 600000 --repeat 1 --warmup 0 --json " + engine_dir()), fault);
  ASSERT_EQ(j.code, 0) << j.err;
  auto r = nlohmann::json::parse(j.out);
  EXPECT_TRUE(r["fell_back"].get<bool>());
  EXPECT_EQ(r["rung"], "cpu");
  EXPECT_EQ(r["backend"], "cpu");
  ASSERT_FALSE(r["events"].empty());
  EXPECT_EQ(r["events"][0]["from"], "cpu-worker");
  EXPECT_EQ(r["events"][0]["reason"], "DEVICE_FAULT");
  EXPECT_NE(j.err.find("bench: WARNING: fell back"), std::string::npos) << j.err;
  BenchRun t =
      steadyocr(bench("--ladder cpu-worker,cpu --reprobe-ms 600000 --repeat 1 --warmup 0 " + engine_dir()), fault);
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("!!! FELL BACK"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("cpu-worker -> cpu: DEVICE_FAULT"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace steadyocr

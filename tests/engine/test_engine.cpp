// The engine's ladder and fault recovery on CPU: the "cpu-worker" rung runs the oneDNN backend in a supervised
// worker process (the same path a GPU rung takes), so CI drives every fault path without a GPU.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "core/host_memory.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "engine/engine.h"
#include "pipeline/pipeline.h"
#include "runtime/backend_registry.h"
#include "test_util.h"

namespace steadyocr::engine {

using pipeline::model_paths_in;
namespace {

std::vector<ImageJob> fixture_jobs() {
  std::vector<ImageJob> jobs;
  std::string dir = testing::source_dir() + "/tests/data/engine";
  for (const char* f : {"doc_0000.jpg", "doc_0001.jpg", "doc_0002.jpg", "doc_0003.jpg"}) {
    std::ifstream in(dir + "/" + f, std::ios::binary);
    ImageJob job;
    job.name = f;
    job.bytes.assign(std::istreambuf_iterator<char>(in), {});
    jobs.push_back(std::move(job));
  }
  return jobs;
}

bool have_cpu_backend() {
  auto names = runtime::available_backends();
  return std::find(names.begin(), names.end(), "cpu") != names.end();
}

// Faults as the front door hands them over from $STEADYOCR_FAULT (engine/faults.h).
std::vector<FaultRule> faults(const char* spec) {
  auto rules = parse_fault_spec(spec);
  EXPECT_TRUE(rules.is_ok()) << rules.status().to_string();
  return rules.is_ok() ? *rules : std::vector<FaultRule>{};
}

EngineOptions options(std::vector<std::string> ladder) {
  EngineOptions o;
  o.models = model_paths_in(testing::models_dir());
  o.ladder = std::move(ladder);
  o.worker_exe = std::string(STEADYOCR_BINARY_DIR) + "/steadyocr";
  o.job_timeout_ms = 20000;
  o.threads = 2;
  o.reprobe = false;
  return o;
}

std::vector<std::string> texts(const EngineOutcome& o) {
  std::vector<std::string> t;
  for (auto& l : o.result.lines) t.push_back(l.text);
  return t;
}

class Engine : public ::testing::Test {
 protected:
  void SetUp() override {
    SO_REQUIRE_MODELS();
    if (!have_cpu_backend()) GTEST_SKIP() << "the oneDNN cpu backend is not in this build";
    if (!testing::file_exists(std::string(STEADYOCR_BINARY_DIR) + "/steadyocr")) {
      GTEST_SKIP() << "steadyocr binary not built (needed as the worker)";
    }
    jobs_ = fixture_jobs();
    ASSERT_FALSE(clean().empty());
  }

  // Texts of a clean in-process run: what every faulty run must reproduce exactly.
  static const std::vector<std::vector<std::string>>& clean() {
    static std::vector<std::vector<std::string>> c = [] {
      auto e = OcrEngine::create(options({"cpu"}));
      EXPECT_TRUE(e.is_ok()) << e.status().to_string();
      std::vector<std::vector<std::string>> out;
      for (auto& o : (*e)->ocr_batch(fixture_jobs())) out.push_back(texts(o));
      return out;
    }();
    return c;
  }

  // The fault tests' ladder: the cpu backend in a supervised worker, then in-process; `fault` armed on the worker.
  static EngineOptions worker_options(const char* fault) {
    auto o = options({"cpu-worker", "cpu"});
    o.faults = faults(fault);
    return o;
  }

  void expect_same_as_clean(const std::vector<EngineOutcome>& got) {
    ASSERT_EQ(got.size(), clean().size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i].status.is_ok()) << jobs_[i].name << ": " << got[i].status.to_string();
      EXPECT_EQ(texts(got[i]), clean()[i]) << jobs_[i].name;
    }
  }

  std::vector<ImageJob> jobs_;
};

// Ground-truth lines of the fixtures (synth_docs.py labels), spaces removed (the recogniser drops some).
std::vector<std::vector<std::string>> ground_truth() {
  std::vector<std::vector<std::string>> gt;
  std::ifstream in(testing::source_dir() + "/tests/data/engine/labels.txt");
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> texts;
    for (auto& item : nlohmann::json::parse(line.substr(line.find('\t') + 1))) {
      std::string t = item["transcription"];
      t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
      texts.push_back(t);
    }
    gt.push_back(texts);
  }
  return gt;
}

TEST_F(Engine, CleanRunReadsTheDocuments) {
  auto gt = ground_truth();
  ASSERT_EQ(clean().size(), gt.size());
  size_t total = 0, found = 0;
  for (size_t i = 0; i < gt.size(); ++i) {
    std::vector<std::string> got = clean()[i];
    for (auto& t : got) t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
    for (auto& t : gt[i]) {
      ++total;
      found += std::find(got.begin(), got.end(), t) != got.end();
    }
  }
  EXPECT_GE(found * 10, total * 8) << found << " of " << total << " ground-truth lines read exactly";
  // Worker rung and in-process rung agree exactly.
  auto e = OcrEngine::create(options({"cpu-worker", "cpu"}));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");
  auto got = (*e)->ocr_batch(jobs_);
  expect_same_as_clean(got);
  for (auto& o : got) {
    EXPECT_EQ(o.rung, "cpu-worker");
    EXPECT_TRUE(o.events.empty());
  }
}

// Per-image options (a server request's) reach the pipeline in process and across the worker pipe alike, and change
// only their own image.
TEST_F(Engine, PerImageOptionsApplyOnEveryRungKind) {
  for (const char* rung : {"cpu", "cpu-worker"}) {
    auto e = OcrEngine::create(options({rung}));
    ASSERT_TRUE(e.is_ok()) << e.status().to_string();
    std::vector<ImageJob> jobs = {jobs_[0], jobs_[0], jobs_[0]};
    jobs[1].options.mode = pipeline::OcrMode::kDetOnly;
    jobs[2].options.drop_score = 0.99f;  // most lines read with less
    auto got = (*e)->ocr_batch(jobs);
    ASSERT_EQ(got.size(), 3u);
    for (auto& o : got) ASSERT_TRUE(o.status.is_ok()) << rung << ": " << o.status.to_string();
    EXPECT_EQ(texts(got[0]), clean()[0]) << rung;
    ASSERT_EQ(got[1].result.lines.size(), got[0].result.lines.size()) << rung;
    for (auto& l : got[1].result.lines) EXPECT_EQ(l.text, "") << rung;
    EXPECT_LT(got[2].result.lines.size(), got[0].result.lines.size()) << rung;
    for (auto& l : got[2].result.lines) EXPECT_GE(l.score, 0.99f) << rung;
    // A model that is not loaded is the image's own error, not a rung failure.
    ImageJob cls = jobs_[0];
    cls.options.use_cls = true;
    EngineOutcome r = (*e)->ocr(cls);
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidArgument) << rung << ": " << r.status.to_string();
    EXPECT_EQ((*e)->current_rung(), rung);
  }
}

TEST_F(Engine, StickyFaultMidRunKillsOnlyTheWorkerAndLosesNothing) {
  auto o = worker_options("sticky@det:3");
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto got = (*e)->ocr_batch(jobs_);
  expect_same_as_clean(got);
  auto stats = (*e)->worker_stats()["cpu-worker"];
  EXPECT_EQ(stats.worker_losses, 1u);
  EXPECT_GE(stats.retries, 1u);
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");  // the restarted worker serves on: a transient fault
  for (auto& o : got) EXPECT_EQ(o.rung, "cpu-worker");
}

TEST_F(Engine, DeviceThatStaysBadStepsDownVisiblyAndFinishesEveryImage) {
  metrics::reset_for_testing();
  auto o = worker_options("sticky@det:2!");  // every worker dies on its 2nd det call
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto got = (*e)->ocr_batch(jobs_);
  expect_same_as_clean(got);
  EXPECT_EQ((*e)->current_rung(), "cpu");
  auto events = (*e)->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].from, "cpu-worker");
  EXPECT_EQ(events[0].to, "cpu");
  EXPECT_EQ(events[0].reason, "DEVICE_FAULT");
  EXPECT_EQ(
      metrics::value("steadyocr_fallback_total", {{"from", "cpu-worker"}, {"to", "cpu"}, {"reason", "DEVICE_FAULT"}}),
      1.0);
  int on_cpu = 0;
  for (auto& o : got) {
    on_cpu += o.rung == "cpu";
    EXPECT_EQ(o.events.size(), 1u);  // every result of this batch carries the step down
  }
  EXPECT_GE(on_cpu, 1);
}

TEST_F(Engine, HungWorkerIsKilledByTheWatchdogAndTheImageRetried) {
  auto o = worker_options("hang@rec:2");
  o.job_timeout_ms = 4000;
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto got = (*e)->ocr_batch(jobs_);
  expect_same_as_clean(got);
  auto stats = (*e)->worker_stats()["cpu-worker"];
  EXPECT_EQ(stats.hangs, 1u);
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");
}

// A worker that hangs on every attempt: the step down names the watchdog's limit as a fix (a slow device, such as
// lavapipe on a large page, looks hung to it).
TEST_F(Engine, AHangThatStaysStepsDownNamingTheWatchdog) {
  auto o = worker_options("hang@rec:1+!");
  o.job_timeout_ms = 1500;
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto got = (*e)->ocr_batch({jobs_[0]});
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(got[0].status.is_ok()) << got[0].status.to_string();
  EXPECT_EQ(got[0].rung, "cpu");  // read after the step down
  const auto events = (*e)->events();
  ASSERT_GE(events.size(), 1u);
  EXPECT_EQ(events[0].reason, "WORKER_HANG");
  EXPECT_NE(events[0].fix.find("raise --watchdog (now 2 s)"), std::string::npos) << events[0].fix;
  EXPECT_NE(events[0].fix.find("steadyocr doctor --level 4"), std::string::npos) << events[0].fix;
}

TEST_F(Engine, OutOfMemoryIsRecoveredBySplittingBatches) {
  metrics::reset_for_testing();
  auto o = options({"cpu"});
  o.faults = faults("oom_batch@rec");
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  expect_same_as_clean((*e)->ocr_batch(jobs_));
  EXPECT_GE(metrics::value("steadyocr_oom_recovered_total", {{"stage", "rec"}, {"how", "split"}}), 1.0);
  EXPECT_TRUE((*e)->events().empty());
}

TEST_F(Engine, ClimbsBackWhenTheDegradedRungPassesItsReprobe) {
  auto o = worker_options("sticky@det:2!");
  o.reprobe = true;
  o.reprobe_backoff_ms = 200;
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  expect_same_as_clean((*e)->ocr_batch(jobs_));
  ASSERT_GE((*e)->events().size(), 1u);
  EXPECT_EQ((*e)->events()[0].to, "cpu");
  // The re-probe starts a fresh worker, which passes its self-test: the engine moves back up.
  for (int i = 0; i < 300 && (*e)->events().size() < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");
  auto events = (*e)->events();
  ASSERT_EQ(events.size(), 2u);
  EXPECT_TRUE(events[1].climb);
  EXPECT_EQ(events[1].from, "cpu");
  EXPECT_EQ(events[1].to, "cpu-worker");
  EXPECT_EQ(events[1].reason, "RECOVERED");
}

TEST_F(Engine, RequireGpuOnAMachineWithoutOneSaysWhy) {
  auto o = options({});
  o.require_gpu = true;
  auto e = OcrEngine::create(o);
  if (e.is_ok()) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ(e.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(e.status().message().find("--require-gpu"), std::string::npos) << e.status().message();
  EXPECT_NE(e.status().message().find("L1_"), std::string::npos) << e.status().message();
}

TEST_F(Engine, NoGpuHereMeansVisibleStartupFallbackToCpu) {
  auto o = options({});
  o.self_test = true;
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  if ((*e)->current_rung().rfind("cuda", 0) == 0) GTEST_SKIP() << "a GPU is usable here";
  EXPECT_EQ((*e)->current_rung(), "cpu");
  auto events = (*e)->events();
  ASSERT_EQ(events.size(), 2u);  // cuda-fp32 and cuda-fp16 ruled out, each with the doctor's finding
  for (auto& ev : events) {
    EXPECT_EQ(ev.to, "cpu");
    EXPECT_EQ(ev.reason.rfind("L", 0), 0u) << ev.reason;  // a doctor code (L1_NO_DRIVER here)
    EXPECT_FALSE(ev.fix.empty());
  }
  // Every result read on the CPU says why: the startup step-downs are in its fallbacks.
  for (auto& r : (*e)->ocr_batch(jobs_)) {
    EXPECT_EQ(r.rung, "cpu");
    ASSERT_EQ(r.events.size(), 2u);
    EXPECT_EQ(r.events[0].from, "cuda-fp32");  // the ladder's order (engine/options.h)
    EXPECT_EQ(r.events[1].from, "cuda-fp16");
  }
}

}  // namespace
}  // namespace steadyocr::engine

namespace steadyocr::engine {
namespace {

TEST(EngineWorkers, GpuRungsKeepManyImagesInFlight) {
  EngineOptions o;
  EXPECT_EQ(worker_in_flight(o, "cpu-worker"), 4);
  EXPECT_EQ(worker_jobs(o, "cpu-worker"), 2);
  EXPECT_GE(worker_in_flight(o, "cuda-fp16"), 2);
  EXPECT_EQ(worker_jobs(o, "cuda-fp16"), worker_in_flight(o, "cuda-fp16"));
  o.worker_concurrency = 3;
  EXPECT_EQ(worker_in_flight(o, "cuda-fp32"), 3);
  EXPECT_EQ(worker_in_flight(o, "cpu-worker"), 3);
}

TEST(EngineWorkers, CpuWorkerJobsFollowTheImageGroups) {
  const int saved = num_threads();
  set_num_threads(32);
  EngineOptions o;  // 32 threads: 16 groups of 2, fewer where this machine has under 4 GiB available
  const int groups = pipeline::host_groups_here(o.pipeline, "cpu");
  EXPECT_EQ(groups, pipeline::host_groups_for(o.pipeline, "cpu", 32, host_memory::available_bytes()));
  EXPECT_EQ(worker_jobs(o, "cpu-worker"), std::max(2, groups));
  EXPECT_EQ(worker_in_flight(o, "cpu-worker"), std::max(4, groups));
  o.pipeline.host_groups = 3;
  EXPECT_EQ(worker_jobs(o, "cpu-worker"), 3);
  EXPECT_EQ(worker_in_flight(o, "cpu-worker"), 4);
  o.pipeline.host_groups = 1;
  EXPECT_EQ(worker_jobs(o, "cpu-worker"), 2);  // two jobs sharing every core, as below 8 threads
  EXPECT_EQ(worker_jobs(o, "cuda-fp16"), worker_in_flight(o, "cuda-fp16"));
  set_num_threads(saved);
}

// The worker watchdog: 120 s by default; 600 s on a vulkan rung whose device is a CPU implementation (lavapipe is
// only slow, not hung: on two cores it passed 120 s on some pages); --watchdog, when given, on every rung.
TEST(EngineWorkers, WatchdogIsLongerOnACpuVulkanDeviceUnlessGiven) {
  EngineOptions o;
  EXPECT_EQ(worker_watchdog_ms(o, "cuda-fp16", false), 120000);
  EXPECT_EQ(worker_watchdog_ms(o, "vulkan", false), 120000);
  EXPECT_EQ(worker_watchdog_ms(o, "vulkan", true), 600000);
  EXPECT_EQ(worker_watchdog_ms(o, "vulkan-fp16", true), 600000);
  EXPECT_EQ(worker_watchdog_ms(o, "cpu-worker", true), 120000);  // only a vulkan rung runs on the Vulkan device
  o.job_timeout_ms = 30000;
  EXPECT_EQ(worker_watchdog_ms(o, "vulkan", true), 30000);
  EXPECT_EQ(worker_watchdog_ms(o, "cuda-fp32", false), 30000);
}

// The CUDA pool's budget: 576 MiB by default on cuda rungs (the 1.5 GiB footprint), scaled with the largest detector
// input and recognition merge so that those still fit; --gpu-mem as given; 0 is none; no default budget elsewhere.
TEST(EngineWorkers, GpuMemoryBudgetDefaultsTo576MiBScaledWithTheLargestShapes) {
  EngineOptions o;
  EXPECT_EQ(o.gpu_mem_mb, kGpuMemAuto);
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 576);
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp16-nocudnn"), 576);
  EXPECT_EQ(gpu_mem_budget_mb(o, "vulkan"), 0);
  EXPECT_EQ(gpu_mem_budget_mb(o, "cpu-worker"), 0);
  o.pipeline.det_limit_side = 1920;  // four times the pixels
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 2304);
  o.pipeline.det_limit_side = 640;  // smaller: never below the default
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 576);
  o.pipeline.rec.batch = 12;  // merges of 8 * 12 = 96 rows
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 1152);
  o.pipeline.batching.rec_rows = 24;  // an explicit merge wins
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 576);
  o.gpu_mem_mb = 0;
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 0);
  o.gpu_mem_mb = 300;
  EXPECT_EQ(gpu_mem_budget_mb(o, "cuda-fp32"), 300);
  EXPECT_EQ(gpu_mem_budget_mb(o, "vulkan"), 300);
}

}  // namespace
}  // namespace steadyocr::engine

namespace steadyocr::engine {
namespace {

// One sticky fault with many jobs in flight in the same worker: the other jobs fail on the dead context too (the
// injector fails every call of that process after it), and all of that is one event, a worker restart — no step
// down, nothing lost, every result as clean.
TEST_F(Engine, StickyFaultWithManyJobsInFlightIsOneLossNotAStepDown) {
  auto o = worker_options("sticky@det:3");
  o.worker_concurrency = 8;
  auto e = OcrEngine::create(o);
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::vector<ImageJob> many;
  for (int k = 0; k < 3; ++k) many.insert(many.end(), jobs_.begin(), jobs_.end());
  auto got = (*e)->ocr_batch(many);
  ASSERT_EQ(got.size(), 12u);
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].status.is_ok()) << got[i].status.to_string();
    EXPECT_EQ(texts(got[i]), clean()[i % clean().size()]) << many[i].name;
    EXPECT_EQ(got[i].rung, "cpu-worker");
    EXPECT_TRUE(got[i].events.empty());
  }
  EXPECT_TRUE((*e)->events().empty());
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");
  auto stats = (*e)->worker_stats()["cpu-worker"];
  EXPECT_EQ(stats.worker_losses, 1u);
  EXPECT_GE(stats.retries, 2u);  // the faulting job and at least one job hit by the loss
}

TEST(RetryPolicy, OneRetryOnTheSameRungThenStepDown) {
  RetryPolicy p;
  EXPECT_EQ(next_step(p, Status::ok(), 1), NextStep::kDone);
  EXPECT_EQ(next_step(p, data_loss("truncated"), 1), NextStep::kDone);  // the image's own error
  // A device error may be collateral of a context loss that the restarted worker has healed: once more here.
  EXPECT_EQ(next_step(p, Status(StatusCode::kDeviceError, "cublas"), 1), NextStep::kRetryHere);
  EXPECT_EQ(next_step(p, Status(StatusCode::kDeviceError, "cublas"), 2), NextStep::kStepDown);
  // Losses and hangs were already retried on restarted workers by the supervisor.
  EXPECT_EQ(next_step(p, Status(StatusCode::kDeviceFault, "died"), 1), NextStep::kStepDown);
  EXPECT_EQ(next_step(p, Status(StatusCode::kDeadlineExceeded, "hung"), 1), NextStep::kStepDown);
  Finding f = failure_finding(Status(StatusCode::kDeadlineExceeded, "hung"), true);
  EXPECT_EQ(f.code, "WORKER_HANG");
  EXPECT_FALSE(f.fix.empty());
  Finding own = failure_finding(Status(StatusCode::kUnavailable, "x", {"L1_NO_DRIVER", "no driver", "install"}), true);
  EXPECT_EQ(own.code, "L1_NO_DRIVER");
}

}  // namespace
}  // namespace steadyocr::engine

// ---- several GPUs (issue 20): the test rung cpu-worker stands in for each device --------------------------------

namespace steadyocr::engine {
namespace {

// Two stand-in GPUs (the cpu-worker rung on each), two images in flight per worker, `fault` armed as STEADYOCR_FAULT.
EngineOptions two_gpus(const char* fault = "") {
  auto o = options({"cpu-worker", "cpu"});
  o.gpus = "0,1";
  o.worker_concurrency = 2;
  if (*fault) o.faults = faults(fault);
  return o;
}

// Two stand-in GPUs: a worker each, the images spread over both, every result as one GPU reads it and naming its GPU.
TEST_F(Engine, TwoGpusShareTheImagesAndReadThemAsOne) {
  auto e = OcrEngine::create(two_gpus());
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  ASSERT_EQ((*e)->gpu_count(), 2u);
  std::vector<ImageJob> many;
  for (int k = 0; k < 2; ++k) many.insert(many.end(), jobs_.begin(), jobs_.end());
  auto got = (*e)->ocr_batch(many);
  ASSERT_EQ(got.size(), 8u);
  std::map<std::string, int> per_gpu;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].status.is_ok()) << got[i].status.to_string();
    EXPECT_EQ(texts(got[i]), clean()[i % clean().size()]) << many[i].name;
    EXPECT_EQ(got[i].rung, "cpu-worker");
    EXPECT_TRUE(got[i].events.empty());
    ++per_gpu[got[i].gpu];
  }
  // Least loaded: with both idle, the batch is split evenly.
  EXPECT_EQ(per_gpu["0"], 4);
  EXPECT_EQ(per_gpu["1"], 4);
  auto gpus = (*e)->gpus();
  ASSERT_EQ(gpus.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(gpus[k].gpu, std::to_string(k));
    EXPECT_EQ(gpus[k].device, std::to_string(k));  // the workers' CUDA_VISIBLE_DEVICES
    EXPECT_TRUE(gpus[k].in_service);
    EXPECT_EQ(gpus[k].rung, "cpu-worker");
    EXPECT_EQ(gpus[k].images_ok, 4u);
    EXPECT_GE(gpus[k].last_ok_age_ms, 0);
    EXPECT_EQ(gpus[k].workers["cpu-worker"].worker_starts, 1u);  // one worker per GPU
  }
  EXPECT_EQ((*e)->worker_stats()["cpu-worker"].worker_starts, 2u);
  EXPECT_EQ(metrics::value("steadyocr_gpu_in_service", {{"gpu", "1"}}), 1.0);
  // One GPU's own path (the readiness probe of each device): not routed elsewhere.
  EngineOutcome one = (*e)->ocr_on_gpu(1, jobs_[2]);
  ASSERT_TRUE(one.status.is_ok()) << one.status.to_string();
  EXPECT_EQ(one.gpu, "1");
  EXPECT_EQ(texts(one), clean()[2]);
  EXPECT_EQ((*e)->ocr_on_gpu(2, jobs_[0]).status.code(), StatusCode::kInvalidArgument);
}

// A device that stays bad on GPU 1 only: GPU 1 leaves service, visibly (its event, in the results it handed back),
// its images are read on GPU 0, and GPU 0's worker never notices.
TEST_F(Engine, OneBadGpuLeavesServiceAloneAndLosesNoImage) {
  metrics::reset_for_testing();
  auto e = OcrEngine::create(two_gpus("gpu1/sticky@det:1!"));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  std::vector<ImageJob> many;
  for (int k = 0; k < 2; ++k) many.insert(many.end(), jobs_.begin(), jobs_.end());
  auto got = (*e)->ocr_batch(many);
  ASSERT_EQ(got.size(), 8u);
  int carried = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_TRUE(got[i].status.is_ok()) << got[i].status.to_string();
    EXPECT_EQ(texts(got[i]), clean()[i % clean().size()]) << many[i].name;
    EXPECT_EQ(got[i].gpu, "0");
    EXPECT_EQ(got[i].rung, "cpu-worker");
    for (auto& ev : got[i].events) carried += ev.gpu == "1" && ev.reason == "DEVICE_FAULT";
  }
  EXPECT_GE(carried, 1) << "the images GPU 1 handed back carry why";
  auto gpus = (*e)->gpus();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_TRUE(gpus[0].in_service);
  EXPECT_EQ(gpus[0].workers["cpu-worker"].worker_losses, 0u);
  EXPECT_EQ(gpus[0].images_ok, 8u);
  EXPECT_FALSE(gpus[1].in_service);
  EXPECT_GE(gpus[1].workers["cpu-worker"].worker_losses, 1u);
  EXPECT_EQ(gpus[1].images_ok, 0u);
  auto events = (*e)->events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu, "1");
  EXPECT_EQ(events[0].from, "cpu-worker");
  EXPECT_EQ(events[0].reason, "DEVICE_FAULT");
  EXPECT_EQ((*e)->current_rung(), "cpu-worker");
  EXPECT_GE(metrics::value("steadyocr_gpu_rerouted_total", {{"gpu", "1"}}), 1.0);
  EXPECT_EQ(metrics::value("steadyocr_gpu_in_service", {{"gpu", "1"}}), 0.0);
  // What comes later goes to GPU 0 only.
  auto later = (*e)->ocr_batch({jobs_[0], jobs_[1]});
  for (auto& r : later) {
    EXPECT_TRUE(r.status.is_ok());
    EXPECT_EQ(r.gpu, "0");
    EXPECT_TRUE(r.events.empty());
  }
}

// Every GPU bad: each leaves service, and the shared host rung reads everything, as with one GPU.
TEST_F(Engine, EveryGpuBadFallsToTheSharedHostRung) {
  auto e = OcrEngine::create(two_gpus("sticky@det:1!"));
  ASSERT_TRUE(e.is_ok()) << e.status().to_string();
  auto got = (*e)->ocr_batch(jobs_);
  expect_same_as_clean(got);
  for (auto& r : got) EXPECT_EQ(r.rung, "cpu");
  EXPECT_EQ((*e)->current_rung(), "cpu");
  std::set<std::string> left;
  for (auto& ev : (*e)->events()) {
    EXPECT_EQ(ev.from, "cpu-worker");
    left.insert(ev.gpu);
  }
  EXPECT_EQ(left, (std::set<std::string>{"0", "1"}));
  for (auto& g : (*e)->gpus()) EXPECT_FALSE(g.in_service);
}

TEST(Gpus, ChoicesAreCheckedAndNameWhatIsWrong) {
  // Without cuda rungs the entries stand for the test rung's stand-ins, as given.
  auto two = choose_gpus("0, 1", false);
  ASSERT_TRUE(two.is_ok()) << two.status().to_string();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].device, "1");
  auto mig = choose_gpus("MIG-4f1d2c3b-0000-1111-2222-333344445555,MIG-4f1d2c3b-0000-1111-2222-333344446666", false);
  ASSERT_TRUE(mig.is_ok());
  EXPECT_EQ((*mig)[0].device, "MIG-4f1d2c3b-0000-1111-2222-333344445555");
  EXPECT_TRUE(choose_gpus("all", false)->empty());
  for (const char* bad : {"0,0", "0,,1", "x", "1a", "-1"}) {
    auto r = choose_gpus(bad, false);
    ASSERT_FALSE(r.is_ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("--gpus"), std::string::npos) << r.status().message();
  }
  // With cuda rungs an index must be a visible device (none here, or fewer than 100).
  auto far = choose_gpus("99", true);
  ASSERT_FALSE(far.is_ok());
  EXPECT_NE(far.status().message().find("no visible device 99"), std::string::npos) << far.status().message();
  // --gpus without a rung that runs on a device is a usage error.
  EngineOptions o;
  o.backend = "cpu";
  o.gpus = "0,1";
  auto e = OcrEngine::create(o);
  ASSERT_FALSE(e.is_ok());
  EXPECT_EQ(e.status().code(), StatusCode::kInvalidArgument);
}

TEST(Gpus, FaultRulesTakeAGpuPrefix) {
  auto rules = parse_fault_spec("gpu1/sticky@det:2!,oom@rec");
  ASSERT_TRUE(rules.is_ok()) << rules.status().to_string();
  ASSERT_EQ(rules->size(), 2u);
  EXPECT_EQ((*rules)[0].gpu, 1);
  EXPECT_EQ((*rules)[0].kind, "sticky");
  EXPECT_EQ((*rules)[1].gpu, -1);
  EXPECT_EQ(fault_spec(*rules), "gpu1/sticky@det:2!,oom@rec:1");
  EXPECT_EQ(faults_for_gpu(*rules, 0).size(), 1u);  // the rule for every GPU only
  auto on1 = faults_for_gpu(*rules, 1);
  ASSERT_EQ(on1.size(), 2u);
  EXPECT_EQ(on1[0].gpu, -1);  // its worker sees one device
  for (const char* bad : {"gpu/sticky@det", "gpux/sticky@det", "gpu1/", "gpu1sticky@det"}) {
    EXPECT_FALSE(parse_fault_spec(bad).is_ok()) << bad;
  }
}

}  // namespace
}  // namespace steadyocr::engine

namespace steadyocr::engine {
namespace {

// On the driver's and NVML's facts: every visible GPU by UUID; indices into the visible list; one entry per MIG
// instance when MIG is on and CUDA_VISIBLE_DEVICES does not narrow the choice.
TEST(Gpus, AllIsEveryVisibleGpuOrEveryMigInstance) {
  doctor::DriverFacts d;
  d.loaded = true;
  d.init_result = 0;
  for (int i = 0; i < 2; ++i) {
    doctor::DriverDevice dev;
    dev.index = i;
    dev.name = "NVIDIA H200";
    dev.uuid = "GPU-0000000" + std::to_string(i);
    d.devices.push_back(dev);
  }
  doctor::NvmlFacts n;
  auto all = choose_gpus_from("all", true, d, n, false);
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].device, "GPU-00000001");
  auto second = choose_gpus_from("1", true, d, n, false);
  ASSERT_TRUE(second.is_ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].device, "GPU-00000001");  // pinned by UUID, whatever CUDA_VISIBLE_DEVICES held
  EXPECT_FALSE(choose_gpus_from("2", true, d, n, false).is_ok());
  d.devices.pop_back();
  EXPECT_TRUE(choose_gpus_from("all", true, d, n, false)->empty()) << "one GPU: the single ladder of before";
  // MIG on the first GPU (three instances), not on the second.
  for (int i = 0; i < 2; ++i) {
    doctor::NvmlDevice nd;
    nd.name = "NVIDIA H200";
    nd.uuid = "GPU-0000000" + std::to_string(i);
    nd.mig_current = i == 0 ? 1 : 0;
    if (i == 0) nd.mig_uuids = {"MIG-a", "MIG-b", "MIG-c"};
    n.devices.push_back(nd);
  }
  auto mig = choose_gpus_from("all", true, d, n, false);
  ASSERT_TRUE(mig.is_ok());
  ASSERT_EQ(mig->size(), 4u);
  EXPECT_EQ((*mig)[2].device, "MIG-c");
  EXPECT_EQ((*mig)[3].device, "GPU-00000001");
  EXPECT_TRUE(choose_gpus_from("all", true, d, n, true)->empty()) << "CUDA_VISIBLE_DEVICES set: what CUDA lists";
}

}  // namespace
}  // namespace steadyocr::engine

namespace steadyocr::engine {
namespace {

// Each GPU's pre-flight judges that device alone: a card without kernels for its architecture (here a 7.5 beside a
// 9.0) must not rule out the other.
TEST(Gpus, PreflightSeesThePinnedDeviceAlone) {
  doctor::Layer1Facts f;
  f.driver.loaded = true;
  f.driver.init_result = 0;
  f.driver.device_count = 2;
  for (int i = 0; i < 2; ++i) {
    doctor::DriverDevice d;
    d.index = i;
    d.uuid = "GPU-0000000" + std::to_string(i);
    d.cc_major = i == 0 ? 7 : 9;
    d.cc_minor = i == 0 ? 5 : 0;
    f.driver.devices.push_back(d);
    doctor::NvmlDevice n;
    n.uuid = d.uuid;
    n.ecc_uncorrected_volatile = i == 0 ? 3 : 0;
    f.nvml.devices.push_back(n);
  }
  doctor::Layer1Facts one = facts_for_device(f, "GPU-00000001");
  ASSERT_EQ(one.driver.devices.size(), 1u);
  EXPECT_EQ(one.driver.device_count, 1);
  EXPECT_EQ(one.driver.devices[0].cc_major, 9);
  ASSERT_EQ(one.nvml.devices.size(), 1u);
  EXPECT_EQ(one.nvml.devices[0].ecc_uncorrected_volatile, 0);
  for (const char* as_is : {"", "1", "MIG-a", "GPU-not-here"}) {
    EXPECT_EQ(facts_for_device(f, as_is).driver.devices.size(), 2u) << as_is;
  }
}

}  // namespace
}  // namespace steadyocr::engine

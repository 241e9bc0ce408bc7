// The CUDA backend as a runtime component: concurrent sessions, flat device memory over 1000 runs, the memory
// budget, CUDA graph replay, injected faults (docs/FAULTS.md), and first timings. Skips without a CUDA device.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/compare.h"
#include "core/metrics.h"
#include "core/timer.h"
#include "cuda_test_util.h"
#include "runtime/model.h"

namespace steadyocr::testing {
namespace {

size_t device_free_bytes() {
  const SteadyocrPluginApi* api = runtime::cuda_plugin_api();
  if (!api) return 0;
  SoPluginDeviceInfo info{};
  SoPluginStatus status{};
  return api->query_device(0, &info, &status) == 0 ? info.free_bytes : 0;
}

bool identical(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

// Several threads, each with its own prepared plan (own stream and buffers), give exactly the single-thread results.
void concurrency(const std::string& name, const Shape& shape = {6, 3, 48, 320}, int kRuns = 12) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, name);
  auto g = optimized_model(kRecModel, shape);
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  constexpr int kThreads = 4;
  std::vector<Tensor> inputs;
  for (int i = 0; i < kThreads * kRuns; ++i) inputs.push_back(random_tensor(shape, 100 + i));
  std::vector<Tensor> expected(inputs.size());
  {
    auto p = backend->prepare(*g);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    for (size_t i = 0; i < inputs.size(); ++i) {
      std::vector<Tensor> out;
      ASSERT_TRUE((*p)->run({inputs[i]}, &out).is_ok());
      expected[i] = out[0].clone();
    }
  }
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      auto p = backend->prepare(*g);
      if (!p.is_ok()) {
        ++errors;
        return;
      }
      for (int r = 0; r < kRuns; ++r) {
        size_t i = static_cast<size_t>(t * kRuns + (r * 5 + t) % kRuns);
        std::vector<Tensor> out;
        if (!(*p)->run({inputs[i]}, &out).is_ok()) {
          ++errors;
          continue;
        }
        if (!identical(out[0], expected[i])) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "concurrent results differ from the single-thread ones";
}

TEST(CudaRuntime, ConcurrentSessionsMatchSingleThreadFp32) {
  concurrency("cuda-fp32");
}
TEST(CudaRuntime, ConcurrentSessionsMatchSingleThreadFp16) {
  concurrency("cuda-fp16");
}
// The Vulkan plugin: one queue shared by the plans of four threads, each plan with its own command buffer and
// buffers; planning (weights, pipelines, the buffer pool) racing with runs. Small shapes: lavapipe runs it in CI.
TEST(VulkanRuntime, ConcurrentSessionsMatchSingleThread) {
  concurrency("vulkan", {2, 3, 48, 96}, 2);
}
TEST(VulkanRuntime, ConcurrentSessionsMatchSingleThreadFp16) {
  concurrency("vulkan-fp16", {2, 3, 48, 96}, 2);
}

TEST(CudaRuntime, DeviceMemoryFlatOver1000Runs) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp16");
  auto model = runtime::Model::load(models_dir() + "/" + kDetModel, backend);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  // Two alternating shape buckets, as a server sees: both plans stay cached, nothing is allocated per run.
  Tensor a = random_tensor({1, 3, 96, 160}, 1), b = random_tensor({1, 3, 128, 96}, 2);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((*model)->run(a).is_ok());
    ASSERT_TRUE((*model)->run(b).is_ok());
  }
  const size_t before = device_free_bytes();
  const double in_use_before = metrics::value("steadyocr_gpu_memory_bytes", {{"device", "0"}, {"state", "in_use"}});
  for (int i = 0; i < 500; ++i) {
    auto ya = (*model)->run(a);
    auto yb = (*model)->run(b);
    ASSERT_TRUE(ya.is_ok() && yb.is_ok());
  }
  const size_t after = device_free_bytes();
  const double in_use_after = metrics::value("steadyocr_gpu_memory_bytes", {{"device", "0"}, {"state", "in_use"}});
  std::printf("device free before %zu MiB, after 1000 runs %zu MiB; pool in use %.0f -> %.0f bytes\n", before >> 20,
              after >> 20, in_use_before, in_use_after);
  EXPECT_EQ(in_use_after, in_use_before);
  EXPECT_LE(before > after ? before - after : 0, size_t{2} << 20) << "device memory grew over 1000 runs";
}

// Plans hold no device memory of their own: runs lease activation arenas, so a model with many shapes planned and
// run in turn holds one arena (sized for the largest), not one per shape. The shapes come largest first, so the
// arena never grows: after the first run, no more than a few KiB are taken from the pool.
TEST(CudaRuntime, ShapesRunInTurnShareOneArena) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  runtime::ModelOptions mo;
  mo.max_cached_shapes = 64;
  auto model = runtime::Model::load(models_dir() + "/" + kDetModel, backend, mo);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  const auto in_use = [] {
    return metrics::value("steadyocr_gpu_memory_bytes", {{"device", "0"}, {"state", "in_use"}});
  };
  ASSERT_TRUE((*model)->run(random_tensor({1, 3, 320, 320}, 1)).is_ok());
  const double first = in_use();
  for (int i = 0; i < 12; ++i) {  // 288..192 x 320..256, multiples of 32 as the detector takes them
    Tensor x = random_tensor({1, 3, 288 - 32 * (i / 3), 320 - 32 * (i % 3)}, 10 + i);
    for (int rep = 0; rep < 3; ++rep) {  // eager, capture, replay
      auto y = (*model)->run(x);
      ASSERT_TRUE(y.is_ok()) << "shape " << i << ": " << y.status().to_string();
    }
  }
  const double after = in_use();
  std::printf("pool in use after the first shape %.1f MiB, after 12 more shapes %.1f MiB\n", first / 1048576.0,
              after / 1048576.0);
  EXPECT_EQ((*model)->stats().plans_built, 13u);
  // Small constants a shape folds differently may add a few KiB of weights; an arena of these shapes is megabytes.
  EXPECT_LE(after - first, 1048576.0) << "a plan took device memory of its own";
}

TEST(CudaRuntime, BudgetRefusesAPlanThatDoesNotFit) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_BUDGET_OR_SKIP(backend, "cuda-fp32", size_t{8} << 20);
  auto g = optimized_model(kDetModel, {1, 3, 960, 960});
  ASSERT_TRUE(g.is_ok());
  auto p = backend->prepare(*g);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status().to_string();
  EXPECT_NE(p.status().message().find("budget"), std::string::npos) << p.status().to_string();
}

// --gpu-mem is a ceiling met by waiting: 8 threads run two detector shapes at once under a budget that holds only a
// few of their arenas. Every run succeeds (the ones that find no memory wait for an arena to come back, counted in
// steadyocr_cuda_arena_waits_total), gives the one-at-a-time result, and what the pool gives out never goes above
// the budget.
TEST(CudaRuntime, BudgetIsACeilingMetByWaiting) {
  SO_REQUIRE_MODELS();
  // Weights (~5 MiB) and 8 lanes' cuBLAS workspaces (4 MiB each) come from the same budget: ~2-3 arenas are left.
  constexpr size_t kBudget = size_t{96} << 20;
  SO_CUDA_BACKEND_BUDGET_OR_SKIP(backend, "cuda-fp32", kBudget);
  const Shape shapes[2] = {{1, 3, 384, 384}, {1, 3, 256, 320}};
  runtime::ModelOptions mo;
  mo.max_replicas = 8;  // each thread its own instance of a shape: 8 runs in flight, each wanting an arena
  auto model = runtime::Model::load(models_dir() + "/" + kDetModel, backend, mo);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  std::vector<Tensor> inputs, expected;
  for (int i = 0; i < 2; ++i) {  // one at a time first: the results every concurrent run must give
    inputs.push_back(random_tensor(shapes[i], 40 + i));
    auto y = (*model)->run(inputs[i]);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expected.push_back(*y);
  }
  for (int i = 0; i < 2; ++i) ASSERT_TRUE((*model)->warm_up(inputs[i], 4, 1).is_ok());  // 4 instances of each
  const auto gauge = [](const char* state) {
    return metrics::value("steadyocr_gpu_memory_bytes", {{"device", "0"}, {"state", state}});
  };
  const double waits = metrics::total("steadyocr_cuda_arena_waits_total");
  std::atomic<int> failures{0}, mismatches{0};
  std::atomic<double> held_peak{0}, mapped_peak{0};  // the gauges of this backend's pool (the only one running)
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 12; ++r) {
        const int k = (t + r) % 2;
        auto y = (*model)->run(inputs[k]);
        if (!y.is_ok()) {
          std::printf("run failed: %s\n", y.status().to_string().c_str());
          ++failures;
          continue;
        }
        if (!identical(*y, expected[k])) ++mismatches;
        // in_use alone: the pool publishes it under its lock, so each reading is exact. The sum of two readings is
        // not (a block given back between them counts in both).
        const double held = gauge("in_use"), mapped = gauge("mapped");
        for (double cur = held_peak; held > cur && !held_peak.compare_exchange_weak(cur, held);) {
        }
        for (double cur = mapped_peak; mapped > cur && !mapped_peak.compare_exchange_weak(cur, mapped);) {
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  const double waited = metrics::total("steadyocr_cuda_arena_waits_total") - waits;
  std::printf(
      "budget %zu MiB: pool gave out at most %.1f MiB, the driver kept at most %.1f MiB mapped; %.0f waits for an "
      "arena; %.0f arenas at the end\n",
      kBudget >> 20, held_peak.load() / 1048576.0, mapped_peak.load() / 1048576.0, waited,
      metrics::value("steadyocr_cuda_arenas", {{"device", "0"}}));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(held_peak.load(), static_cast<double>(kBudget));
  // "mapped" is the driver's pool of the whole process, which the other tests' backends share: printed, not checked.
  EXPECT_GT(waited, 0) << "the budget never made a run wait: it holds more arenas than the test puts in flight";
}

// cuDNN handles are few (about 9 MiB of device memory each) and leased only while a run enqueues, captures or
// plans: 8 threads on 4 shapes (each thread its own instance: 8 lanes) make at most the cap of handles, and every
// result is the one-at-a-time result.
TEST(CudaRuntime, CudnnHandlesAreFewerThanLanes) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  const Shape shapes[4] = {{1, 3, 160, 224}, {1, 3, 192, 256}, {1, 3, 224, 224}, {1, 3, 256, 192}};
  runtime::ModelOptions mo;
  mo.max_replicas = 8;
  auto model = runtime::Model::load(models_dir() + "/" + kDetModel, backend, mo);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  std::vector<Tensor> inputs, expected;
  for (int i = 0; i < 4; ++i) {
    inputs.push_back(random_tensor(shapes[i], 60 + i));
    auto y = (*model)->run(inputs[i]);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expected.push_back(*y);
  }
  const char* cap_env = std::getenv("STEADYOCR_CUDA_CUDNN_HANDLES");
  const double cap = cap_env && std::atoi(cap_env) > 0 ? std::atoi(cap_env) : 8;
  const double lanes_before = metrics::total("steadyocr_cuda_lanes_created_total");
  const double handles_before = metrics::total("steadyocr_cuda_cudnn_handles_created_total");
  std::atomic<int> failures{0}, mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 6; ++r) {
        const int k = (t + r) % 4;
        auto y = (*model)->run(inputs[k]);
        if (!y.is_ok()) {
          ++failures;
          continue;
        }
        if (!identical(*y, expected[k])) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  const double handles = metrics::total("steadyocr_cuda_cudnn_handles_created_total") - handles_before;
  const double lanes = metrics::total("steadyocr_cuda_lanes_created_total") - lanes_before;
  std::printf("%.0f lanes and %.0f cuDNN handles made by 8 threads on 4 shapes (cap %.0f); %.0f waits in the process\n",
              lanes, handles, cap, metrics::total("steadyocr_cuda_cudnn_handle_waits_total"));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_LE(handles, cap);
  EXPECT_GE(metrics::total("steadyocr_cuda_cudnn_handles_created_total"), 1) << "cuDNN was never used";
}

// fp16's static precision rules (which nodes keep fp32 for their weights) are worked out once per model: plans of six
// rec shapes prepared at once scan the weights once, the others wait for that result (each scanning them itself cost
// 116-131 ms of host time per fp16 warm-up).
TEST(CudaRuntime, Fp16StaticRulesAreWorkedOutOncePerModel) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp16");
  std::vector<graph::Graph> graphs;
  for (int w : {160, 224, 320, 416, 512, 640}) {
    auto g = optimized_model(kRecModel, {6, 3, 48, w});
    ASSERT_TRUE(g.is_ok()) << g.status().to_string();
    graphs.push_back(std::move(*g));
  }
  const double scans = metrics::total("steadyocr_cuda_static_precision_scans_total");
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < graphs.size(); ++i) {
    threads.emplace_back([&, i] {
      auto p = backend->prepare(graphs[i]);
      if (!p.is_ok()) {
        std::printf("prepare %zu: %s\n", i, p.status().to_string().c_str());
        ++failures;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(metrics::total("steadyocr_cuda_static_precision_scans_total") - scans, 1)
      << "six plans of one model scanned its weights more than once";
}

// fp16's calibration runs an fp32 plan that keeps every value: for a large recognition batch that is over a GiB. Under
// a budget it does not fit, the run goes ahead with the static policy and the model waits for a smaller input: the
// large plan's second run does not build a keep-all plan again, a small input calibrates the model, and the large
// plan then takes that result (its outputs equal a plan made after the calibration).
TEST(CudaRuntime, Fp16CalibrationTooLargeForTheBudgetWaitsForASmallerInput) {
  SO_REQUIRE_MODELS();
  constexpr size_t kBudget = size_t{384} << 20;
  SO_CUDA_BACKEND_BUDGET_OR_SKIP(backend, "cuda-fp16", kBudget);
  const Shape large = {48, 3, 48, 320}, small = {2, 3, 48, 96};
  auto g_large = optimized_model(kRecModel, large);
  auto g_small = optimized_model(kRecModel, small);
  ASSERT_TRUE(g_large.is_ok() && g_small.is_ok());
  const auto deferred = [](const char* reason) {
    return metrics::value("steadyocr_cuda_precision_calibration_deferred_total",
                          {{"model", "rec"}, {"reason", reason}});
  };
  const auto calibrations = [] { return metrics::total("steadyocr_cuda_precision_calibrations_total"); };
  const double budget0 = deferred("budget"), too_large0 = deferred("too_large"), cal0 = calibrations();
  Tensor x = random_tensor(large, 11);
  auto p_large = backend->prepare(*g_large);
  ASSERT_TRUE(p_large.is_ok()) << p_large.status().to_string();
  std::vector<Tensor> out;
  ASSERT_TRUE((*p_large)->run({x}, &out).is_ok());
  EXPECT_EQ(deferred("budget") - budget0, 1) << "the large input's check should have been refused by the budget";
  ASSERT_TRUE((*p_large)->run({x}, &out).is_ok());
  EXPECT_EQ(deferred("budget") - budget0, 1) << "the second run tried the keep-all check again";
  EXPECT_EQ(deferred("too_large") - too_large0, 1);
  EXPECT_EQ(calibrations() - cal0, 0);

  auto p_small = backend->prepare(*g_small);
  ASSERT_TRUE(p_small.is_ok()) << p_small.status().to_string();
  ASSERT_TRUE((*p_small)->run({random_tensor(small, 12)}, &out).is_ok());
  EXPECT_EQ(calibrations() - cal0, 1) << "the small input did not calibrate the model";

  std::vector<Tensor> adopted, fresh;
  ASSERT_TRUE((*p_large)->run({x}, &adopted).is_ok());
  EXPECT_EQ(deferred("too_large") - too_large0, 1) << "the large plan did not take the model's calibration";
  auto p_after = backend->prepare(*g_large);  // made after the calibration: built with its result
  ASSERT_TRUE(p_after.is_ok()) << p_after.status().to_string();
  ASSERT_TRUE((*p_after)->run({x}, &fresh).is_ok());
  EXPECT_TRUE(identical(adopted[0], fresh[0])) << "the large plan's outputs differ from a plan made after calibration";
  EXPECT_EQ(calibrations() - cal0, 1);
}

TEST(CudaRuntime, GraphReplayGivesTheEagerResult) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  auto g = optimized_model(kDetModel, {1, 3, 160, 224});
  ASSERT_TRUE(g.is_ok());
  auto p = backend->prepare(*g);
  ASSERT_TRUE(p.is_ok());
  const double captured = metrics::total("steadyocr_cuda_graphs_captured_total");
  Tensor x = random_tensor({1, 3, 160, 224}, 7);
  std::vector<Tensor> first, again;
  ASSERT_TRUE((*p)->run({x}, &first).is_ok());  // eager; captures afterwards
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE((*p)->run({x}, &again).is_ok());
    EXPECT_TRUE(identical(first[0], again[0])) << "replay " << i;
  }
  EXPECT_EQ(metrics::total("steadyocr_cuda_graphs_captured_total"), captured + 1);
}

// Two plans of one shape run side by side, round after round, so that each meets both activation arenas: with
// BackendConfig::graph_arenas 4 each keeps a CUDA graph per arena, so after its first (eager) run every run replays,
// whichever arena it gets, and each replay gives the eager result. With one graph per plan (the default) a plan runs
// eagerly whenever the other holds its graph's arena.
TEST(CudaRuntime, GraphsReplayOnEveryArenaAPlanRanOn) {
  SO_REQUIRE_MODELS();
  const SteadyocrPluginApi* api = runtime::cuda_plugin_api();
  if (!api) GTEST_SKIP() << "no CUDA plugin loaded (no device)";
  cuda::BackendConfig config = runtime::cuda_backend_config("fp32");
  config.graph_arenas = 4;
  auto made = runtime::create_plugin_backend(api, config);
  if (!made.is_ok()) GTEST_SKIP() << "cuda-fp32 unavailable: " << made.status().to_string();
  std::shared_ptr<Backend> backend = std::move(made).value();
  auto g = optimized_model(kDetModel, {1, 3, 160, 224});
  ASSERT_TRUE(g.is_ok());
  auto p1 = backend->prepare(*g);
  auto p2 = backend->prepare(*g);
  ASSERT_TRUE(p1.is_ok() && p2.is_ok());
  const Tensor x = random_tensor({1, 3, 160, 224}, 9);
  std::vector<Tensor> expected;
  {
    // The reference: a third plan's first run, which is eager.
    auto p0 = backend->prepare(*g);
    ASSERT_TRUE(p0.is_ok());
    ASSERT_TRUE((*p0)->run({x}, &expected).is_ok());
  }
  auto mode = [](const char* m) {
    return metrics::value("steadyocr_cuda_run_modes_total", {{"model", "det"}, {"mode", m}});
  };
  const double replays0 = mode("replay"), eager0 = mode("eager");
  const double captured0 = metrics::total("steadyocr_cuda_graphs_captured_total");
  constexpr int kRounds = 12;
  std::atomic<int> mismatches{0}, failures{0};
  for (int round = 0; round < kRounds; ++round) {
    auto one = [&](PreparedGraph* p) {
      std::vector<Tensor> out;
      if (!p->run({x}, &out).is_ok()) {
        ++failures;
      } else if (!identical(expected[0], out[0])) {
        ++mismatches;
      }
    };
    std::thread a(one, p1->get()), b(one, p2->get());
    a.join();
    b.join();
  }
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "a replay on some arena differs from the eager result";
  const double captured = metrics::total("steadyocr_cuda_graphs_captured_total") - captured0;
  const double eager = mode("eager") - eager0, replays = mode("replay") - replays0;
  // Two runs at once make at most two arenas (same size): each plan captures on each at most once.
  EXPECT_LE(captured, 4);
  EXPECT_GE(captured, 2);
  EXPECT_EQ(eager, 2) << "only each plan's first run goes eagerly";
  EXPECT_EQ(replays, 2 * kRounds - 2);
}

// Every way of waiting for a run's stream (BackendConfig::sync_wait) gives the same outputs, and each wait is
// counted under the mode it took: spin and block as configured; auto spins while a run waits alone and sleeps while
// another run waits too (8 threads at once).
TEST(CudaRuntime, EveryStreamWaitGivesTheSameResults) {
  SO_REQUIRE_MODELS();
  const SteadyocrPluginApi* api = runtime::cuda_plugin_api();
  if (!api) GTEST_SKIP() << "no CUDA plugin loaded (no device)";
  auto g = optimized_model(kDetModel, {1, 3, 160, 224});
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  const Tensor x = random_tensor({1, 3, 160, 224}, 11);
  auto waits = [](const char* mode) { return metrics::value("steadyocr_cuda_stream_waits_total", {{"mode", mode}}); };
  Tensor expected;
  for (cuda::SyncWait w : {cuda::SyncWait::kSpin, cuda::SyncWait::kBlock, cuda::SyncWait::kAuto}) {
    SCOPED_TRACE(cuda::sync_wait_name(w));
    cuda::BackendConfig config = runtime::cuda_backend_config("fp32");
    config.sync_wait = w;
    auto backend = runtime::create_plugin_backend(api, config);
    if (!backend.is_ok()) GTEST_SKIP() << "cuda-fp32 unavailable: " << backend.status().to_string();
    auto p = (*backend)->prepare(*g);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    const double spin0 = waits("spin"), block0 = waits("block");
    for (int i = 0; i < 3; ++i) {
      std::vector<Tensor> out;
      ASSERT_TRUE((*p)->run({x}, &out).is_ok());
      if (!expected.defined()) expected = out[0].clone();
      EXPECT_TRUE(identical(out[0], expected)) << "run " << i;
    }
    EXPECT_EQ(waits("spin") - spin0, w == cuda::SyncWait::kBlock ? 0 : 3);
    EXPECT_EQ(waits("block") - block0, w == cuda::SyncWait::kBlock ? 3 : 0);
    if (w != cuda::SyncWait::kAuto) continue;
    // Eight threads, each with its own plan: their waits overlap, so auto sleeps in some of them.
    constexpr int kThreads = 8, kRuns = 10;
    std::atomic<int> failures{0}, mismatches{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        auto q = (*backend)->prepare(*g);
        if (!q.is_ok()) {
          ++failures;
          return;
        }
        for (int r = 0; r < kRuns; ++r) {
          std::vector<Tensor> out;
          if (!(*q)->run({x}, &out).is_ok()) {
            ++failures;
          } else if (!identical(out[0], expected)) {
            ++mismatches;
          }
        }
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
    EXPECT_EQ(mismatches.load(), 0);
    const double spun = waits("spin") - spin0 - 3, slept = waits("block") - block0;
    std::printf("auto: %.0f waits spun, %.0f slept (8 threads x 10 runs)\n", spun, slept);
    EXPECT_EQ(spun + slept, kThreads * kRuns);
    EXPECT_GT(slept, 0) << "no wait overlapped another: auto never slept";
  }
}

// ---- injected faults (docs/FAULTS.md) -------------------------------------------------------------------------

struct FaultGuard {
  ~FaultGuard() { (void)runtime::set_cuda_fault(""); }
};

std::unique_ptr<PreparedGraph> small_det(Backend& b, Tensor* x) {
  auto g = optimized_model(kDetModel, {1, 3, 64, 96});
  if (!g.is_ok()) return nullptr;
  auto p = b.prepare(*g);
  *x = random_tensor({1, 3, 64, 96}, 3);
  return p.is_ok() ? std::move(p).value() : nullptr;
}

TEST(CudaFaults, OutOfMemoryIsNotSticky) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Tensor x;
  auto p = small_det(*backend, &x);
  ASSERT_TRUE(p);
  FaultGuard guard;
  ASSERT_TRUE(runtime::set_cuda_fault("oom@det:2").is_ok());
  std::vector<Tensor> out;
  EXPECT_TRUE(p->run({x}, &out).is_ok());
  Status s = p->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kOutOfMemory) << s.to_string();
  EXPECT_NE(s.message().find("cudaErrorMemoryAllocation"), std::string::npos) << s.to_string();
  EXPECT_TRUE(p->run({x}, &out).is_ok()) << "the device must still work after an out-of-memory error";
}

TEST(CudaFaults, CudnnNotSupportedAndNoKernelImageAreDeviceErrors) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Tensor x;
  auto p = small_det(*backend, &x);
  ASSERT_TRUE(p);
  FaultGuard guard;
  std::vector<Tensor> out;
  ASSERT_TRUE(runtime::set_cuda_fault("cudnn_not_supported@det:1").is_ok());
  Status s = p->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kDeviceError) << s.to_string();
  EXPECT_NE(s.message().find("CUDNN_STATUS_NOT_SUPPORTED"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("Conv"), std::string::npos) << "the error names the step: " << s.to_string();
  ASSERT_TRUE(runtime::set_cuda_fault("no_kernel_image@det:1").is_ok());
  s = p->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kDeviceError) << s.to_string();
  EXPECT_NE(s.message().find("cudaErrorNoKernelImageForDevice"), std::string::npos) << s.to_string();
  EXPECT_TRUE(p->run({x}, &out).is_ok());
}

// cuDNN with no algorithm for a convolution at plan time (fault cudnn_no_algo): that convolution runs on our own
// kernels inside the cuDNN backend, logged and counted, and the model's output is the same.
TEST(CudaFaults, ConvolutionCudnnCannotPlanRunsOnOwnKernels) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(faulted, "cuda-fp32");  // a backend of its own: no plan of this graph made before
  FaultGuard guard;
  ASSERT_TRUE(runtime::set_cuda_fault("cudnn_no_algo@det:1+").is_ok());
  const double before = metrics::total("steadyocr_cuda_conv_cudnn_fallbacks_total");
  Tensor x;
  auto p = small_det(*faulted, &x);
  ASSERT_TRUE(p);
  std::vector<Tensor> got;
  Status s = p->run({x}, &got);
  ASSERT_TRUE(s.is_ok()) << s.to_string();
  const double fell = metrics::total("steadyocr_cuda_conv_cudnn_fallbacks_total") - before;
  EXPECT_GT(fell, 0) << "no convolution was planned without cuDNN";
  std::printf("convolutions planned on own kernels under cudnn_no_algo: %.0f\n", fell);
  ASSERT_TRUE(runtime::set_cuda_fault("").is_ok());
  SO_CUDA_BACKEND_OR_SKIP(plain, "cuda-fp32");
  Tensor x2;
  auto q = small_det(*plain, &x2);
  ASSERT_TRUE(q);
  std::vector<Tensor> want;
  ASSERT_TRUE(q->run({x2}, &want).is_ok());
  ASSERT_EQ(got.size(), want.size());
  const Comparison c = compare_tensors(got[0], want[0]);
  EXPECT_LT(c.nmse, 1e-10) << "max abs diff " << c.max_abs_diff;
  EXPECT_EQ(metrics::total("steadyocr_cuda_conv_cudnn_fallbacks_total") - before, fell) << "only under the fault";
}

TEST(CudaFaults, BadSpecIsRefusedWithTheSyntax) {
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Status s = runtime::set_cuda_fault("explode@det:1");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("illegal_address"), std::string::npos) << s.to_string();
  EXPECT_FALSE(runtime::set_cuda_fault("oom@det:zero").is_ok());
  EXPECT_TRUE(runtime::set_cuda_fault("").is_ok());
}

TEST(CudaFaults, HangIsReleasedByClearingTheFault) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Tensor x;
  auto p = small_det(*backend, &x);
  ASSERT_TRUE(p);
  FaultGuard guard;
  ASSERT_TRUE(runtime::set_cuda_fault("hang@det:1,timeout_ms=20000").is_ok());
  std::thread release([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    (void)runtime::set_cuda_fault("");
  });
  Stopwatch sw;
  std::vector<Tensor> out;
  Status s = p->run({x}, &out);
  release.join();
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_GE(sw.elapsed_ms(), 350.0);
  EXPECT_LE(sw.elapsed_ms(), 10000.0);
}

// Kills the CUDA context of the whole process: run it alone (STEADYOCR_TEST_STICKY_FAULT=1, gtest filter).
TEST(CudaFaults, IllegalAddressIsStickyDeviceFault) {
  if (!std::getenv("STEADYOCR_TEST_STICKY_FAULT")) {
    GTEST_SKIP() << "loses the CUDA context of the process: run alone with STEADYOCR_TEST_STICKY_FAULT=1";
  }
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Tensor x;
  auto p = small_det(*backend, &x);
  ASSERT_TRUE(p);
  FaultGuard guard;
  ASSERT_TRUE(runtime::set_cuda_fault("illegal_address@det:2").is_ok());
  std::vector<Tensor> out;
  EXPECT_TRUE(p->run({x}, &out).is_ok());
  Status s = p->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s.to_string();
  EXPECT_NE(s.message().find("cudaErrorIllegalAddress"), std::string::npos) << s.to_string();
  EXPECT_NE(s.message().find("sticky"), std::string::npos) << s.to_string();
  s = p->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << "later runs must report the lost context: " << s.to_string();
  auto g = optimized_model(kDetModel, {1, 3, 32, 32});
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(backend->prepare(*g).status().code(), StatusCode::kDeviceFault);
}

// Kills the CUDA context of the whole process: run it alone (STEADYOCR_TEST_STICKY_FAULT=1, gtest filter).
// Jobs in flight on other lanes when one job hits an illegal address fail in calls of their own (a cuBLAS GEMM:
// CUBLAS_STATUS_EXECUTION_FAILED); each must report the lost context, never a plain device error.
TEST(CudaFaults, ContextLossReachesEveryJobInFlight) {
  if (!std::getenv("STEADYOCR_TEST_STICKY_FAULT")) {
    GTEST_SKIP() << "loses the CUDA context of the process: run alone with STEADYOCR_TEST_STICKY_FAULT=1";
  }
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, "cuda-fp32");
  Tensor x;
  auto det = small_det(*backend, &x);
  ASSERT_TRUE(det);
  const Shape rec_shape{6, 3, 48, 320};
  auto rec = optimized_model(kRecModel, rec_shape);
  ASSERT_TRUE(rec.is_ok()) << rec.status().to_string();
  constexpr int kJobs = 3;
  std::vector<std::unique_ptr<PreparedGraph>> plans;
  for (int j = 0; j < kJobs; ++j) {
    auto p = backend->prepare(*rec);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    plans.push_back(std::move(p).value());
  }
  FaultGuard guard;
  std::atomic<bool> started{false};
  std::mutex mu;
  std::vector<Status> failures;
  std::vector<std::thread> jobs;
  for (int j = 0; j < kJobs; ++j) {
    jobs.emplace_back([&, j] {
      Tensor in = random_tensor(rec_shape, 40 + j);
      int failed = 0;
      for (int r = 0; r < 2000 && failed < 2; ++r) {  // until two failures (the first and a later one)
        std::vector<Tensor> out;
        Status s = plans[j]->run({in}, &out);
        started = true;
        if (s.is_ok()) continue;
        ++failed;
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back(s);
      }
    });
  }
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(runtime::set_cuda_fault("illegal_address@det:1").is_ok());
  std::vector<Tensor> out;
  Status s = det->run({x}, &out);
  EXPECT_EQ(s.code(), StatusCode::kDeviceFault) << s.to_string();
  for (auto& t : jobs) t.join();
  EXPECT_EQ(failures.size(), static_cast<size_t>(2 * kJobs)) << "every job must fail once the context is lost";
  for (const Status& f : failures) {
    EXPECT_EQ(f.code(), StatusCode::kDeviceFault) << f.to_string();
    ASSERT_TRUE(f.finding().has_value()) << f.to_string();
    EXPECT_EQ(f.finding()->code, "L3_STICKY_FAULT") << f.to_string();
  }
}

// ---- first timings (informative; the end-to-end numbers come from scripts/device_bench.sh) ---------------------

double stage_ms(const std::string& role, const std::string& backend, const char* stage) {
  return metrics::value("steadyocr_cuda_stage_ms_total", {{"model", role}, {"backend", backend}, {"stage", stage}});
}

void timing(const std::string& name) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, name);
  struct Case {
    const char* model;
    const char* role;
    Shape shape;
  };
  for (const Case& c : {Case{kDetModel, "det", {1, 3, 736, 960}}, Case{kDetModel, "det", {1, 3, 960, 704}},
                        Case{kRecModel, "rec", {6, 3, 48, 320}}, Case{kRecModel, "rec", {6, 3, 48, 640}},
                        Case{kClsModel, "cls", {6, 3, 48, 192}}}) {
    auto model = runtime::Model::load(models_dir() + "/" + c.model, backend);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    Tensor x = random_tensor(c.shape, 11);
    Stopwatch first;
    ASSERT_TRUE((*model)->run(x).is_ok());
    const double first_ms = first.elapsed_ms();
    Stopwatch second;
    ASSERT_TRUE((*model)->run(x).is_ok());  // captures the CUDA graph
    const double second_ms = second.elapsed_ms();
    const char* stages[] = {"host_staging", "h2d", "compute", "d2h"};
    double before[4];
    for (int i = 0; i < 4; ++i) before[i] = stage_ms(c.role, name, stages[i]);
    constexpr int kN = 50;
    Stopwatch sw;
    for (int i = 0; i < kN; ++i) ASSERT_TRUE((*model)->run(x).is_ok());
    const double steady = sw.elapsed_ms() / kN;
    double per[4];
    for (int i = 0; i < 4; ++i) per[i] = (stage_ms(c.role, name, stages[i]) - before[i]) / kN;
    std::printf(
        "TIMING %s %s %s: first %.1f ms (plan + eager), second %.1f ms (capture), steady %.3f ms/run = "
        "staging %.3f + h2d %.3f + compute %.3f + d2h %.3f ms (+ host rest)\n",
        name.c_str(), c.role, shape_str(c.shape).c_str(), first_ms, second_ms, steady, per[0], per[1], per[2], per[3]);
  }
}

// What a new shape bucket costs: the runtime's specialisation + passes, our plan, the first (eager) run.
void bucket_cost(const std::string& name, const char* file, const std::vector<Shape>& shapes) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(backend, name);
  auto model = runtime::Model::load(models_dir() + "/" + file, backend);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  ASSERT_TRUE((*model)->run(random_tensor(shapes[0], 5)).is_ok());  // calibration (fp16) and lazy loading
  const double plan0 = (*model)->stats().plan_ms_total;
  const double ours0 = metrics::total("steadyocr_cuda_plan_ms_total");
  const char* phases[] = {"build", "fuse", "place"};
  double phase0[3];
  for (int i = 0; i < 3; ++i) phase0[i] = metrics::value("steadyocr_cuda_prepare_ms_total", {{"phase", phases[i]}});
  std::vector<Tensor> inputs;
  for (size_t i = 1; i < shapes.size(); ++i) inputs.push_back(random_tensor(shapes[i], 5));
  Stopwatch sw;
  for (const Tensor& x : inputs) ASSERT_TRUE((*model)->run(x).is_ok());
  const double n = static_cast<double>(shapes.size() - 1);
  double phase[3];
  for (int i = 0; i < 3; ++i) {
    phase[i] = (metrics::value("steadyocr_cuda_prepare_ms_total", {{"phase", phases[i]}}) - phase0[i]) / n;
  }
  std::printf(
      "BUCKET %s %s: new bucket %.1f ms/first run (runtime plan %.1f ms of which CUDA prepare %.1f ms: "
      "build %.1f, fuse %.1f, place %.1f)\n",
      name.c_str(), file, sw.elapsed_ms() / n, ((*model)->stats().plan_ms_total - plan0) / n,
      (metrics::total("steadyocr_cuda_plan_ms_total") - ours0) / n, phase[0], phase[1], phase[2]);
}

TEST(CudaTiming, NewBucketCost) {
  bucket_cost("cuda-fp32", kDetModel,
              {{1, 3, 960, 704}, {1, 3, 960, 736}, {1, 3, 896, 960}, {1, 3, 640, 960}, {1, 3, 960, 512}});
  bucket_cost("cuda-fp16", kDetModel,
              {{1, 3, 960, 704}, {1, 3, 960, 736}, {1, 3, 896, 960}, {1, 3, 640, 960}, {1, 3, 960, 512}});
  bucket_cost("cuda-fp16", kRecModel,
              {{6, 3, 48, 320}, {6, 3, 48, 347}, {6, 3, 48, 512}, {6, 3, 48, 800}, {5, 3, 48, 1203}});
}

TEST(CudaTiming, Fp32) {
  timing("cuda-fp32");
}
TEST(CudaTiming, Fp16) {
  timing("cuda-fp16");
}

}  // namespace
}  // namespace steadyocr::testing

// The Vulkan plugin and backend on whatever Vulkan device the machine has: Mesa's lavapipe (a Vulkan device on the
// CPU, Debian's mesa-vulkan-drivers) in CI, the GPU's own driver on the GPU machine. Skips, saying why, where the
// plugin is not built or no Vulkan device is usable. The op cases (test_backend_ops.cpp) and the models
// (test_cuda_models.cpp, VulkanModels.*) cover the arithmetic; this file covers the plugin's contract.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/timer.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "runtime/placement.h"
#include "runtime/vulkan_plugin.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

#define SO_VULKAN_OR_SKIP()                                                                \
  do {                                                                                     \
    const auto& so_st = runtime::vulkan_plugin_status();                                   \
    if (so_st.devices.empty()) GTEST_SKIP() << "no usable Vulkan device: " << so_st.error; \
  } while (0)

graph::Graph one_op_graph(graph::OpKind op, graph::OpAttrs attrs, const Shape& shape) {
  graph::Graph g;
  graph::Value* x = g.add_value("x", DType::kF32, shape);
  graph::Value* y = g.add_value("y", DType::kF32, shape);
  g.inputs().push_back(x);
  g.outputs().push_back(y);
  g.add_node(op, "op", {x}, {y}, std::move(attrs));
  return g;
}

TEST(VulkanPlugin, LoadsAndListsItsDevices) {
  const auto& st = runtime::vulkan_plugin_status();
  if (!st.loaded) GTEST_SKIP() << "Vulkan plugin not loaded: " << st.error;
  EXPECT_GT(st.runtime.instance_version, 0u);
  EXPECT_NE(std::string(st.runtime.loader_path).find("libvulkan"), std::string::npos) << st.runtime.loader_path;
  ASSERT_FALSE(st.devices.empty()) << st.error;
  for (const auto& d : st.devices) {
    EXPECT_GE(d.compute_queue_family, 0) << d.name;
    EXPECT_EQ(std::string(d.uuid).size(), 36u) << d.name;
  }
  EXPECT_FALSE(st.shader_compiler.empty());
  const auto names = runtime::available_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "vulkan"), names.end());
}

TEST(VulkanPlugin, BackendNamesItsDeviceAndDriver) {
  SO_VULKAN_OR_SKIP();
  auto b = runtime::create_backend("vulkan");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ((*b)->name(), "vulkan");
  const DeviceInfo info = (*b)->device_info();
  EXPECT_EQ(info.backend, "vulkan");
  EXPECT_NE(info.name.find("Vulkan"), std::string::npos) << info.name;
  EXPECT_TRUE(info.libraries.count("vulkan_loader")) << info.name;
  EXPECT_TRUE(info.libraries.count("vulkan_driver")) << info.name;
}

TEST(VulkanPlugin, RunsAPlanAgainAndAgainWithFreshInputs) {
  SO_VULKAN_OR_SKIP();
  auto b = runtime::create_backend("vulkan");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  graph::Graph g = one_op_graph(graph::OpKind::kRelu, graph::ActAttrs{graph::Activation::relu()}, {2, 3, 5, 7});
  auto p = (*b)->prepare(g);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_GT((*p)->workspace_bytes(), 0u);
  for (int rep = 0; rep < 3; ++rep) {
    Tensor x = Tensor::empty(DType::kF32, {2, 3, 5, 7});
    for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>((i * 7 + rep) % 11) - 5.f;
    std::vector<Tensor> out;
    ASSERT_TRUE((*p)->run({x}, &out).is_ok());
    ASSERT_EQ(out.size(), 1u);
    for (int64_t i = 0; i < x.numel(); ++i) {
      ASSERT_EQ(out[0].data<float>()[i], std::max(0.f, x.data<float>()[i])) << "rep " << rep << " at " << i;
    }
  }
}

TEST(VulkanPlugin, WrongInputIsAClearError) {
  SO_VULKAN_OR_SKIP();
  auto b = runtime::create_backend("vulkan");
  ASSERT_TRUE(b.is_ok());
  graph::Graph g = one_op_graph(graph::OpKind::kSigmoid, graph::ActAttrs{graph::Activation::sigmoid()}, {1, 4});
  auto p = (*b)->prepare(g);
  ASSERT_TRUE(p.is_ok());
  std::vector<Tensor> out;
  Status s = (*p)->run({Tensor::zeros(DType::kF32, {1, 5})}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("plan was made for"), std::string::npos) << s.message();
}

TEST(VulkanPlugin, MemoryBudgetRefusesAPlanWithTheFigures) {
  SO_VULKAN_OR_SKIP();
  runtime::BackendOptions o;
  o.gpu_memory_budget_bytes = size_t{1} << 20;  // 1 MiB
  auto b = runtime::create_backend("vulkan", o);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  graph::Graph g = one_op_graph(graph::OpKind::kRelu, graph::ActAttrs{graph::Activation::relu()}, {1, 4, 256, 256});
  auto p = (*b)->prepare(g);  // 1 MiB of input and 1 MiB of output: over the budget
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kResourceExhausted) << p.status().to_string();
  EXPECT_NE(p.status().message().find("budget"), std::string::npos) << p.status().message();
  EXPECT_NE(p.status().message().find("--gpu-mem"), std::string::npos) << p.status().message();
}

TEST(VulkanPlugin, TheLadderSkipsACpuOnlyVulkanDeviceUnlessAllowed) {
  SO_VULKAN_OR_SKIP();
  const auto& st = runtime::vulkan_plugin_status();
  const bool only_cpu = std::all_of(st.devices.begin(), st.devices.end(),
                                    [](const SoVkDeviceInfo& d) { return runtime::vulkan_device_is_cpu(d); });
  std::string why;
  const int dev = runtime::vulkan_ladder_device(&why);
  if (only_cpu && !runtime::vulkan_cpu_devices_allowed()) {
    EXPECT_EQ(dev, -1);
    EXPECT_NE(why.find("CPU implementation"), std::string::npos) << why;
    EXPECT_NE(why.find("STEADYOCR_VULKAN_CPU_DEVICES=1"), std::string::npos) << why;
  } else {
    EXPECT_GE(dev, 0) << why;
  }
}

TEST(VulkanPlugin, CandidatesHonourThePin) {
  setenv("STEADYOCR_VULKAN_PLUGIN", "/nonexistent/libsteadyocr_vulkan.so", 1);
  const auto c = runtime::vulkan_plugin_candidates();
  unsetenv("STEADYOCR_VULKAN_PLUGIN");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0], "/nonexistent/libsteadyocr_vulkan.so");
  const auto d = runtime::vulkan_plugin_candidates();
  ASSERT_GE(d.size(), 2u);
  EXPECT_EQ(d.back(), "libsteadyocr_vulkan.so");  // last: the loader's own search path
}

}  // namespace
}  // namespace steadyocr::testing

namespace steadyocr::testing {
namespace {

// Weights are found again by their host storage (vk::WeightCache::known), so a plan for a new input shape neither
// converts nor hashes them. A freed storage whose address comes back with other bytes is not taken for the old one:
// each round wraps the same buffer under a new owner with new values, and plans two shapes with it.
TEST(VulkanPlugin, WeightsAreFoundByTheirStorageNotByAReusedAddress) {
  SO_VULKAN_OR_SKIP();
  for (const char* name : {"vulkan", "vulkan-fp16"}) {
    auto b = runtime::create_backend(name);
    if (!b.is_ok() && std::string(name) == "vulkan-fp16") continue;  // no 16-bit storage on this device
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    const Shape cs{1, 3, 1, 7};
    std::vector<float> buffer(21);
    for (int round = 0; round < 3; ++round) {
      // Small integers times 0.5: exact in fp16 as in fp32, and so are the products below.
      for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(round * 8 + static_cast<int>(i)) * 0.5f;
      const Tensor c = Tensor::wrap(DType::kF32, cs, buffer.data(), std::make_shared<int>(round));
      for (const Shape& xs : {Shape{2, 3, 5, 7}, Shape{1, 3, 4, 7}}) {
        graph::Graph g;
        graph::Value* x = g.add_value("x", DType::kF32, xs);
        graph::Value* k = g.add_constant("c", c);
        graph::Value* y = g.add_value("y", DType::kF32, xs);
        g.inputs().push_back(x);
        g.outputs().push_back(y);
        g.add_node(graph::OpKind::kMul, "mul", {x, k}, {y});
        auto p = (*b)->prepare(g);
        ASSERT_TRUE(p.is_ok()) << name << ": " << p.status().to_string();
        Tensor in = Tensor::empty(DType::kF32, xs);
        for (int64_t i = 0; i < in.numel(); ++i) in.data<float>()[i] = static_cast<float>(i % 5) - 2.f;
        std::vector<Tensor> out;
        ASSERT_TRUE((*p)->run({in}, &out).is_ok()) << name;
        ASSERT_EQ(out.size(), 1u);
        for (int64_t i = 0; i < in.numel(); ++i) {
          const int64_t ch = (i / (xs[2] * 7)) % 3, col = i % 7;
          ASSERT_EQ(out[0].data<float>()[i], in.data<float>()[i] * buffer[static_cast<size_t>(ch * 7 + col)])
              << name << ", round " << round << ", input " << xs[0] << "x" << xs[2] << ", element " << i;
        }
      }
    }
  }
}

// The angle classifier with free N and W, specialised on symbols and optimised as the runtime does.
graph::Graph symbolic_cls_graph() {
  auto imported = graph::import_onnx(models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx");
  EXPECT_TRUE(imported.is_ok()) << imported.status().to_string();
  if (!imported.is_ok()) return graph::Graph();
  graph::Graph g = imported->clone();
  g.inputs()[0]->shape = {-1, 3, 48, -1};
  EXPECT_TRUE(graph::specialize_symbolic(g, runtime::reference_pass_options()).is_ok());
  EXPECT_TRUE(graph::optimize(g, runtime::reference_pass_options()).is_ok());
  return g;
}

// One plan for every input shape (Backend::prepare_symbolic) on a real model, the angle classifier (small enough for
// lavapipe): each shape reads the bits its own plan reads, a shape seen before plans nothing, and one arena and
// staging pair serve every shape (grown for the largest), so that many shapes hold about what the largest one's own
// plan holds. The runtime takes it: one plan built for seven calls of four shapes.
TEST(VulkanPlugin, OnePlanServesEveryShapeWithThatShapesOwnBits) {
  SO_VULKAN_OR_SKIP();
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("vulkan");
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  const std::string path = models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  graph::Graph g = symbolic_cls_graph();
  ASSERT_FALSE(HasFailure());
  auto shape_free = (*backend)->prepare_symbolic(g);
  ASSERT_TRUE(shape_free.is_ok()) << shape_free.status().to_string();
  // Largest first: the shared buffers fit every shape after it, and a shape seen again plans nothing. Then a larger
  // one: the buffers grow, the instances made on the old ones go with them, and a shape seen before is planned again.
  const std::vector<Shape> shapes = {{3, 3, 48, 320}, {1, 3, 48, 64},  {3, 3, 48, 320}, {2, 3, 48, 192},
                                     {1, 3, 48, 64},  {4, 3, 48, 480}, {1, 3, 48, 64}};
  const std::vector<bool> planned = {true, true, false, true, false, true, true};
  size_t largest_own = 0;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Tensor x = random_tensor(shapes[i], static_cast<uint32_t>(40 + i));
    auto fixed = graph::instantiate(g, {shapes[i]});
    ASSERT_TRUE(fixed.is_ok()) << fixed.status().to_string();
    auto own = (*backend)->prepare(*fixed);
    ASSERT_TRUE(own.is_ok()) << own.status().to_string();
    largest_own = std::max(largest_own, (*own)->workspace_bytes());
    std::vector<Tensor> want, got;
    ASSERT_TRUE((*own)->run({x}, &want).is_ok());
    Status s = (*shape_free)->run({x}, &got);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(got.size(), 1u);
    ASSERT_EQ(got[0].describe(), want[0].describe());
    EXPECT_EQ(0, std::memcmp(got[0].raw(), want[0].raw(), want[0].nbytes())) << shape_str(shapes[i]);
    if (planned[i]) {
      EXPECT_GT((*shape_free)->last_plan_ms(), 0.0) << "call " << i << ", " << shape_str(shapes[i]);
    } else {
      EXPECT_EQ((*shape_free)->last_plan_ms(), 0.0) << "call " << i << ", " << shape_str(shapes[i]) << " planned again";
    }
  }
  // The arena and staging once, at most a quarter over the largest shape's, and each shape's parameters.
  EXPECT_LE((*shape_free)->workspace_bytes(), largest_own * 5 / 4 + (size_t{256} << 10))
      << "largest shape's own plan: " << largest_own;

  // Through the runtime: the plan is made at load and serves every shape; the per-shape runtime plans each one.
  runtime::ModelOptions free_options, per_shape_options;
  free_options.reuse_generic_passes = per_shape_options.reuse_generic_passes = true;
  per_shape_options.symbolic_plans = false;
  auto a = runtime::Model::load(path, *backend, free_options);
  auto b = runtime::Model::load(path, *backend, per_shape_options);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  ASSERT_TRUE((*a)->stats().symbolic_plan);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Tensor x = random_tensor(shapes[i], static_cast<uint32_t>(60 + i));
    auto ya = (*a)->run(x);
    auto yb = (*b)->run(x);
    ASSERT_TRUE(ya.is_ok() && yb.is_ok()) << shape_str(shapes[i]);
    ASSERT_EQ(ya->describe(), yb->describe());
    EXPECT_EQ(0, std::memcmp(ya->raw(), yb->raw(), yb->nbytes())) << shape_str(shapes[i]);
  }
  EXPECT_EQ((*a)->stats().plans_built, 1u);
  EXPECT_EQ((*b)->stats().plans_built, 4u);
}

// Many new shapes, largest first (the shared buffers never grow): what the plan holds grows by about one instance's
// parameters per shape, not faster. The next instance's objects are made ahead, sized by the last instance's use;
// sizing them by the last buffer (a spare a quarter larger) grew every spare by a quarter, to hundreds of MiB and
// seconds per new shape on NVIDIA's driver (2026-12-07).
TEST(VulkanPlugin, ManyShapesKeepEachInstanceSmall) {
  SO_VULKAN_OR_SKIP();
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("vulkan");
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  graph::Graph g = symbolic_cls_graph();
  ASSERT_FALSE(HasFailure());
  auto plan = (*backend)->prepare_symbolic(g);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  std::vector<size_t> held;  // after each new shape
  for (int i = 0; i < 24; ++i) {
    const Tensor x = random_tensor({1, 3, 48, 320 - 8 * i}, static_cast<uint32_t>(80 + i));
    std::vector<Tensor> out;
    Status s = (*plan)->run({x}, &out);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    held.push_back((*plan)->workspace_bytes());
  }
  const size_t first_seven = held[7] - held[0], next_sixteen = held[23] - held[7];
  std::printf("held after 1, 8 and 24 shapes: %zu, %zu, %zu bytes\n", held[0], held[7], held[23]);
  EXPECT_GT(first_seven, 0u);
  EXPECT_LE(next_sixteen, 4 * first_seven) << "the instances' own memory grows faster than their number";
}

// The pipeline's device profile as the Vulkan plugin sees it: several threads calling one model with shapes that
// come and go, every result equal to a serial run's. Per shape: plans made, replicated, evicted while other plans
// run. With the plan for every shape: its instances made and reused while the other threads wait for it.
class VulkanThreads : public ::testing::TestWithParam<bool> {};

TEST_P(VulkanThreads, PlanningAndEvictingShapesGetTheSerialResults) {
  SO_VULKAN_OR_SKIP();
  SO_REQUIRE_MODELS();
  auto backend = runtime::create_backend("vulkan");
  ASSERT_TRUE(backend.is_ok()) << backend.status().to_string();
  runtime::ModelOptions mo;
  mo.max_replicas = 2;
  mo.max_cached_shapes = 3;  // fewer than the shapes below: plans are evicted while others run
  mo.reuse_generic_passes = true;
  mo.symbolic_plans = GetParam();
  mo.fallbacks = runtime::fallback_chain("vulkan");
  auto model = runtime::Model::load(models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx", *backend, mo);
  ASSERT_TRUE(model.is_ok()) << model.status().to_string();
  std::vector<Tensor> inputs;
  for (int i = 0; i < 12; ++i) {
    Tensor t = Tensor::empty(DType::kF32, {1 + i % 2, 3, 48, 64 + 32 * (i % 5)});
    for (int64_t k = 0; k < t.numel(); ++k) t.data<float>()[k] = static_cast<float>((k * 37 + i) % 101) / 50.f - 1.f;
    inputs.push_back(std::move(t));
  }
  std::vector<Tensor> expected;
  for (const Tensor& t : inputs) {
    auto y = (*model)->run(t);
    ASSERT_TRUE(y.is_ok()) << y.status().to_string();
    expected.push_back(y->clone());
  }
  std::atomic<int> errors{0}, mismatches{0};
  std::vector<std::thread> threads;
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int r = 0; r < 6; ++r) {
        const size_t i = static_cast<size_t>((th * 5 + r * 7) % 12);
        auto y = (*model)->run(inputs[i]);
        if (!y.is_ok()) {
          ++errors;
          continue;
        }
        if (y->shape() != expected[i].shape() || std::memcmp(y->raw(), expected[i].raw(), expected[i].nbytes()) != 0) {
          ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ((*model)->stats().symbolic_plan, GetParam());
}

INSTANTIATE_TEST_SUITE_P(Plans, VulkanThreads, ::testing::Bool(), [](const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "OneForEveryShape" : "PerShape";
});

}  // namespace
}  // namespace steadyocr::testing

namespace steadyocr::testing {
namespace {

// One queue per device: a thread's submission waits behind the others'. That is a busy queue, not a hang: with the
// hang limit set below the time the queue takes for all of them (but well above one run), every run still succeeds
// (the limit counts time in which the queue completes nothing). On lavapipe, before this rule, the device profile's
// threads waited past a fixed 60 s, the plan was freed while the device still ran it, and the process crashed.
TEST(VulkanPlugin, AQueueBusyWithOtherThreadsWorkIsNotAHang) {
  SO_VULKAN_OR_SKIP();
  SO_REQUIRE_MODELS();
  constexpr int kThreads = 16;
  auto cpu = runtime::create_backend("cpu");
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  auto calib = runtime::create_backend("vulkan");
  ASSERT_TRUE(calib.is_ok()) << calib.status().to_string();
  // The case needs the queue busy with the other threads' runs for longer than the limit, which is at least 0.1 s and
  // four runs: the smallest input whose one run takes a quarter of the floor (a GPU runs the first one in ~2 ms, the
  // second in ~17, lavapipe the first in ~50). Runs of several threads overlap in part (copies beside kernels): with
  // 10 threads and 17 ms runs an H100 finished them all in 72 ms (2026-12-07), under the floor.
  std::optional<graph::Graph> g;
  Tensor x;
  std::vector<Tensor> expected;
  double one_s = 0;
  for (const Shape& shape : {Shape{1, 3, 48, 80}, Shape{8, 3, 48, 640}, Shape{16, 3, 48, 1600}}) {
    x = Tensor::empty(DType::kF32, shape);
    for (int64_t k = 0; k < x.numel(); ++k) x.data<float>()[k] = static_cast<float>((k * 29) % 97) / 48.f - 1.f;
    auto imported = graph::import_onnx(models_dir() + "/ch_PP-OCRv4_rec_infer.onnx");
    ASSERT_TRUE(imported.is_ok()) << imported.status().to_string();
    const graph::PassOptions po = runtime::reference_pass_options({});
    ASSERT_TRUE(graph::specialize(*imported, {shape}, po).is_ok());
    ASSERT_TRUE(graph::optimize(*imported, po).is_ok());
    g.emplace(std::move(imported).value());
    auto placed = runtime::prepare_placed(*g, {*calib, *cpu});
    ASSERT_TRUE(placed.is_ok()) << placed.status().to_string();
    ASSERT_TRUE(placed->prepared->run({x}, &expected).is_ok());
    Stopwatch one;
    ASSERT_TRUE(placed->prepared->run({x}, &expected).is_ok());
    one_s = one.elapsed_ms() / 1000.0;
    if (one_s >= 0.025) break;
  }
  if (one_s < 0.025)
    GTEST_SKIP() << "the largest input runs in " << one_s << " s: the queue cannot be kept busy past "
                 << "the 0.1 s hang limit's floor by " << kThreads << " runs";
  auto prepare_on = [&](const std::shared_ptr<Backend>& b) {
    auto placed = runtime::prepare_placed(*g, {b, *cpu});
    return placed.is_ok() ? std::move(placed->prepared) : nullptr;
  };
  const double limit_s = std::max(0.1, 4 * one_s);  // well above one run, below what the last of the threads waits

  ::setenv("STEADYOCR_VULKAN_HANG_S", fmt::format("{:.3f}", limit_s).c_str(), 1);
  auto b = runtime::create_backend("vulkan");
  ::unsetenv("STEADYOCR_VULKAN_HANG_S");
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  std::vector<std::unique_ptr<PreparedGraph>> plans;
  for (int i = 0; i < kThreads; ++i) {
    plans.push_back(prepare_on(*b));
    ASSERT_TRUE(plans.back());
  }
  std::atomic<int> errors{0}, mismatches{0};
  std::vector<double> waited(kThreads, 0.0);
  std::string first_error;
  std::mutex mu;
  std::vector<std::thread> pool;
  for (int th = 0; th < kThreads; ++th) {
    pool.emplace_back([&, th] {
      std::vector<Tensor> y;
      Stopwatch sw;
      Status s = plans[static_cast<size_t>(th)]->run({x}, &y);
      waited[static_cast<size_t>(th)] = sw.elapsed_ms() / 1000.0;
      if (!s.is_ok()) {
        ++errors;
        std::lock_guard<std::mutex> lock(mu);
        first_error = s.to_string();
      } else if (y.size() != 1 || std::memcmp(y[0].raw(), expected[0].raw(), expected[0].nbytes()) != 0) {
        ++mismatches;
      }
    });
  }
  for (auto& t : pool) t.join();
  EXPECT_EQ(errors.load(), 0) << first_error;
  EXPECT_EQ(mismatches.load(), 0);
  // The case was made: a thread waited longer than the limit.
  EXPECT_GT(*std::max_element(waited.begin(), waited.end()), limit_s)
      << "one run " << one_s << " s, limit " << limit_s << " s";
}

}  // namespace
}  // namespace steadyocr::testing

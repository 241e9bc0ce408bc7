// runtime::Model planning: shapes specialised from the pre-optimised (generic) graph compute what the plain path
// computes, warm-up prepares instances per shape, and concurrent callers of one shape share them correctly.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <thread>

#include "backends/reference/reference_backend.h"
#include "core/metrics.h"
#include "core/parallel.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::runtime {
namespace {

std::shared_ptr<Backend> host_backend() {
  auto b = create_backend(available_backends().front());
  EXPECT_TRUE(b.is_ok()) << b.status().to_string();
  return b.is_ok() ? *b : nullptr;
}

struct Case {
  const char* file;
  std::vector<Shape> shapes;
};

TEST(ModelPlans, GenericPassesComputeWhatThePlainPathComputes) {
  SO_REQUIRE_MODELS();
  auto backend = host_backend();
  const Case cases[] = {
      {"ch_PP-OCRv4_det_infer.onnx", {{1, 3, 96, 64}, {1, 3, 64, 160}}},
      {"ch_PP-OCRv4_rec_infer.onnx", {{2, 3, 48, 120}, {1, 3, 48, 200}}},
      {"ch_ppocr_mobile_v2.0_cls_infer.onnx", {{3, 3, 48, 192}}},
  };
  for (const Case& c : cases) {
    ModelOptions plain_options, generic_options;
    generic_options.reuse_generic_passes = true;
    generic_options.symbolic_plans = false;  // the passes alone (the cpu backend's plan for every shape: its own test)
    auto plain = Model::load(testing::models_dir() + "/" + c.file, backend, plain_options);
    auto generic = Model::load(testing::models_dir() + "/" + c.file, backend, generic_options);
    ASSERT_TRUE(plain.is_ok() && generic.is_ok()) << c.file;
    EXPECT_FALSE((*plain)->stats().generic_passes);
    EXPECT_TRUE((*generic)->stats().generic_passes) << c.file << ": the generic graph was rejected at load";
    for (const Shape& s : c.shapes) {
      Tensor x = testing::random_tensor(s, 11);
      auto a = (*plain)->run(x);
      auto b = (*generic)->run(x);
      ASSERT_TRUE(a.is_ok() && b.is_ok()) << c.file << " " << shape_str(s);
      auto cmp = testing::compare(*b, *a);
      EXPECT_LT(cmp.nmse, 1e-12) << c.file << " " << shape_str(s) << ": " << cmp.describe();
    }
  }
}

// The symbolic graph's check at load (plain passes and two reference runs) is remembered in the cache directory: the
// next load of the same file skips it, a marker that does not describe the graph the passes made is checked again,
// and another file (other bytes) is checked on its own.
TEST(ModelPlans, TheSymbolicChecksPassIsRememberedForTheSameFile) {
  SO_REQUIRE_MODELS();
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("so_symcheck_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string path = testing::models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  ModelOptions o;
  o.reuse_generic_passes = true;
  o.cache_dir = dir.string();
  auto count = [](const char* result) {
    return metrics::value("steadyocr_model_symbolic_checks_total", {{"result", result}});
  };
  const double passed = count("passed"), remembered = count("remembered");
  auto first = Model::load(path, host_backend(), o);
  ASSERT_TRUE(first.is_ok()) << first.status().to_string();
  EXPECT_TRUE((*first)->stats().generic_passes);
  EXPECT_EQ(count("passed"), passed + 1);
  std::vector<fs::path> markers;
  for (const auto& e : fs::directory_iterator(dir / "symbolic")) markers.push_back(e.path());
  ASSERT_EQ(markers.size(), 1u);
  auto second = Model::load(path, host_backend(), o);
  ASSERT_TRUE(second.is_ok());
  EXPECT_TRUE((*second)->stats().generic_passes);
  EXPECT_EQ(count("passed"), passed + 1);
  EXPECT_EQ(count("remembered"), remembered + 1);
  Tensor x = testing::random_tensor({2, 3, 48, 192}, 4);
  auto a = (*first)->run(x), b = (*second)->run(x);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(testing::compare(*b, *a).max_abs_diff, 0.0);
  // A marker that does not describe this graph (another build's passes, a hand edit): the check runs again and
  // rewrites it.
  std::ofstream(markers[0], std::ios::trunc) << "3 nodes: Conv 3\n";
  ASSERT_TRUE(Model::load(path, host_backend(), o).is_ok());
  EXPECT_EQ(count("passed"), passed + 2);
  ASSERT_TRUE(Model::load(path, host_backend(), o).is_ok());
  EXPECT_EQ(count("remembered"), remembered + 2);
  // No directory: always checked, nothing written.
  ModelOptions none = o;
  none.cache_dir.clear();
  ASSERT_TRUE(Model::load(path, host_backend(), none).is_ok());
  EXPECT_EQ(count("passed"), passed + 3);
  fs::remove_all(dir);
}

// A top-1 output (ModelOptions::top1_output) returns, per step, the largest probability and its class: the same as
// picking them from the plain model's output. A backend without Top1 (the cpu backend) keeps the plain output.
TEST(ModelPlans, TopOneOutputIsThePlainOutputsLargestClass) {
  SO_REQUIRE_MODELS();
  const std::string path = testing::models_dir() + "/ch_PP-OCRv4_rec_infer.onnx";
  std::shared_ptr<Backend> ref(make_reference_backend());
  ModelOptions top;
  top.top1_output = true;
  auto plain = Model::load(path, ref, {});
  auto top1 = Model::load(path, ref, top);
  ASSERT_TRUE(plain.is_ok() && top1.is_ok()) << top1.status().to_string();
  EXPECT_TRUE((*top1)->options().top1_output);
  Tensor x = testing::random_tensor({2, 3, 48, 160}, 3);
  auto a = (*plain)->run(x);
  auto b = (*top1)->run(x);
  ASSERT_TRUE(a.is_ok() && b.is_ok()) << b.status().to_string();
  const int64_t classes = a->dim(-1), rows = a->numel() / classes;
  ASSERT_EQ(classes, 6625);
  ASSERT_EQ(b->shape(), (Shape{a->dim(0), a->dim(1), 2}));
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = a->data<float>() + r * classes;
    const int64_t best = std::max_element(row, row + classes) - row;
    EXPECT_EQ(b->data<float>()[2 * r + 1], static_cast<float>(best)) << "step " << r;
    EXPECT_EQ(b->data<float>()[2 * r], row[best]) << "step " << r;
  }

  auto cpu = create_backend("cpu");
  ASSERT_TRUE(cpu.is_ok());
  auto on_cpu = Model::load(path, *cpu, top);
  ASSERT_TRUE(on_cpu.is_ok()) << on_cpu.status().to_string();
  EXPECT_FALSE((*on_cpu)->options().top1_output);  // the cpu backend does not run Top1
  auto c = (*on_cpu)->run(x);
  ASSERT_TRUE(c.is_ok());
  EXPECT_EQ(c->dim(-1), classes);
}

TEST(ModelPlans, AShapeTheModelRefusesStillNamesTheProblem) {
  SO_REQUIRE_MODELS();
  ModelOptions o;
  o.reuse_generic_passes = true;
  auto m = Model::load(testing::models_dir() + "/ch_PP-OCRv4_rec_infer.onnx", host_backend(), o);
  ASSERT_TRUE(m.is_ok());
  auto r = (*m)->run(Tensor::zeros(DType::kF32, {1, 4, 48, 100}));  // 4 channels
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("dimension 1 must be 3"), std::string::npos) << r.status().message();
}

TEST(ModelPlans, WarmUpInstancesServeConcurrentCallersIdentically) {
  SO_REQUIRE_MODELS();
  ModelOptions o;
  o.max_replicas = 3;
  auto m = Model::load(testing::models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx", host_backend(), o);
  ASSERT_TRUE(m.is_ok());
  Tensor x = testing::random_tensor({2, 3, 48, 192}, 5);
  ASSERT_TRUE((*m)->warm_up(x, 5, 1).is_ok());  // capped at max_replicas
  EXPECT_EQ((*m)->stats().plans_built, 1u);
  EXPECT_EQ((*m)->stats().replicas_built, 2u);
  auto want = (*m)->run(x);
  ASSERT_TRUE(want.is_ok());
  std::vector<Tensor> got(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < got.size(); ++i) {
    threads.emplace_back([&, i] {
      SerialScope serial;  // each caller on its own thread, as a worker's jobs
      auto r = (*m)->run(x);
      if (r.is_ok()) got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  for (const Tensor& g : got) {
    ASSERT_TRUE(g.defined());
    EXPECT_EQ(testing::compare(g, *want).max_abs_diff, 0.0);
  }
  EXPECT_EQ((*m)->stats().plans_built, 1u);
  EXPECT_EQ((*m)->stats().runs, 9u);
}

// The host backend as is; the test backends below change only its plan for every shape.
class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::shared_ptr<Backend> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return inner_->name(); }
  DeviceInfo device_info() const override { return inner_->device_info(); }
  bool supports(const graph::Node& node) const override { return inner_->supports(node); }
  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override { return inner_->prepare(graph); }

 protected:
  std::shared_ptr<Backend> inner_;
};

// A backend whose plan for every shape declines inputs wider than `widest` at run time, as the Vulkan plan declines
// a shape past a device limit; everything else is the host backend's.
class DecliningBackend final : public ForwardingBackend {
 public:
  DecliningBackend(std::shared_ptr<Backend> inner, int64_t widest)
      : ForwardingBackend(std::move(inner)), widest_(widest) {}
  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override {
    ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> p, inner_->prepare_symbolic(graph));
    return std::unique_ptr<PreparedGraph>(new Declining(std::move(p), widest_));
  }

 private:
  class Declining final : public PreparedGraph {
   public:
    Declining(std::unique_ptr<PreparedGraph> inner, int64_t widest) : inner_(std::move(inner)), widest_(widest) {}
    Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
      if (inputs[0].dim(-1) > widest_) return unsupported("wider than the device's limit in this test");
      return inner_->run(inputs, outputs);
    }

   private:
    std::unique_ptr<PreparedGraph> inner_;
    int64_t widest_;
  };
  int64_t widest_;
};

// A shape the plan for every shape declines at run time is planned on its own, as every shape is without that plan:
// the caller gets the result, not the refusal; the decline is counted and logged, and asked only once per shape.
TEST(ModelPlans, AShapeTheOnePlanDeclinesIsPlannedOnItsOwn) {
  SO_REQUIRE_MODELS();
  auto host = host_backend();
  auto declining = std::make_shared<DecliningBackend>(host, 160);
  const std::string path = testing::models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  ModelOptions o;
  o.reuse_generic_passes = true;
  auto m = Model::load(path, declining, o);
  auto plain = Model::load(path, host, ModelOptions{});
  ASSERT_TRUE(m.is_ok() && plain.is_ok());
  if (!(*m)->stats().symbolic_plan) GTEST_SKIP() << host->name() << " makes no plan for every shape";
  const double before =
      metrics::value("steadyocr_model_symbolic_declined_total", {{"model", "ch_ppocr_mobile_v2.0_cls_infer.onnx"}});
  const Tensor narrow = testing::random_tensor({2, 3, 48, 128}, 3);
  const Tensor wide = testing::random_tensor({2, 3, 48, 192}, 4);
  for (const Tensor* x : {&narrow, &wide, &wide, &narrow}) {
    auto got = (*m)->run(*x);
    auto want = (*plain)->run(*x);
    ASSERT_TRUE(got.is_ok()) << shape_str(x->shape()) << ": " << got.status().to_string();
    ASSERT_TRUE(want.is_ok());
    EXPECT_LT(testing::compare(*got, *want).nmse, 1e-9) << shape_str(x->shape());
  }
  EXPECT_EQ(
      metrics::value("steadyocr_model_symbolic_declined_total", {{"model", "ch_ppocr_mobile_v2.0_cls_infer.onnx"}}) -
          before,
      1.0);
  EXPECT_EQ((*m)->stats().plans_built, 2u);  // the plan for every shape, and the wide shape's own
  EXPECT_EQ((*m)->stats().runs, 4u);
}

// A backend whose plan for every shape takes concurrent calls (PreparedGraph::concurrent, as the CUDA backend's): its
// run holds each caller until `together` callers are inside at once (or a few seconds pass), then runs the host
// backend's plan for every shape one call at a time.
class ConcurrentBackend final : public ForwardingBackend {
 public:
  explicit ConcurrentBackend(std::shared_ptr<Backend> inner) : ForwardingBackend(std::move(inner)) {}
  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override {
    ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> p, inner_->prepare_symbolic(graph));
    ++symbolic_prepared;
    return std::unique_ptr<PreparedGraph>(new Gate(std::move(p), this));
  }
  std::atomic<int> symbolic_prepared{0};
  std::atomic<int> together{1};
  std::atomic<int> most_inside{0};  // the most callers seen inside run() at once

 private:
  class Gate final : public PreparedGraph {
   public:
    Gate(std::unique_ptr<PreparedGraph> inner, ConcurrentBackend* b) : inner_(std::move(inner)), b_(b) {}
    bool concurrent() const override { return true; }
    Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) override {
      {
        std::unique_lock<std::mutex> lock(mu_);
        ++inside_;
        b_->most_inside = std::max(b_->most_inside.load(), inside_);
        cv_.notify_all();
        cv_.wait_for(lock, std::chrono::seconds(5), [&] { return inside_ >= b_->together; });
      }
      Status s;
      {
        std::lock_guard<std::mutex> one(run_mu_);  // the host backend's plan runs one call at a time
        s = inner_->run(inputs, outputs);
      }
      std::lock_guard<std::mutex> lock(mu_);
      --inside_;
      return s;
    }

   private:
    std::unique_ptr<PreparedGraph> inner_;
    ConcurrentBackend* b_;
    std::mutex mu_, run_mu_;
    std::condition_variable cv_;
    int inside_ = 0;
  };
};

// A plan for every shape that takes concurrent calls is one object for every call in flight: the model makes no
// replicas of it, lets every caller in at once (the per-shape instances are the backend's), and warm_up sends as
// many callers at once as instances were asked for.
TEST(ModelPlans, AConcurrentPlanTakesEveryCallerAtOnce) {
  SO_REQUIRE_MODELS();
  auto host = host_backend();
  auto concurrent = std::make_shared<ConcurrentBackend>(host);
  const std::string path = testing::models_dir() + "/ch_ppocr_mobile_v2.0_cls_infer.onnx";
  ModelOptions o;
  o.reuse_generic_passes = true;
  o.max_replicas = 2;  // per-shape replicas: a concurrent plan is not bound by them
  auto m = Model::load(path, concurrent, o);
  auto plain = Model::load(path, host, ModelOptions{});
  ASSERT_TRUE(m.is_ok() && plain.is_ok());
  if (!(*m)->stats().symbolic_plan) GTEST_SKIP() << host->name() << " makes no plan for every shape";
  ASSERT_EQ(concurrent->symbolic_prepared.load(), 1);
  constexpr int kCallers = 6;
  concurrent->together = kCallers;
  std::vector<Tensor> inputs, got(kCallers);
  for (int i = 0; i < kCallers; ++i) inputs.push_back(testing::random_tensor({1, 3, 48, 96 + 32 * (i % 3)}, 20 + i));
  std::vector<std::thread> threads;
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      SerialScope serial;
      auto r = (*m)->run(inputs[i]);
      if (r.is_ok()) got[i] = *r;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(concurrent->most_inside.load(), kCallers) << "the model held callers back from a concurrent plan";
  for (int i = 0; i < kCallers; ++i) {
    ASSERT_TRUE(got[i].defined()) << i;
    auto want = (*plain)->run(inputs[i]);
    ASSERT_TRUE(want.is_ok());
    EXPECT_LT(testing::compare(got[i], *want).nmse, 1e-9) << i;
  }
  // Warm-up: as many callers at once as instances asked for, capped at max_replicas; no replica is made.
  concurrent->most_inside = 0;
  concurrent->together = 2;
  ASSERT_TRUE((*m)->warm_up(inputs[0], 5, 1).is_ok());
  EXPECT_EQ(concurrent->most_inside.load(), 2);
  EXPECT_EQ(concurrent->symbolic_prepared.load(), 1);
  EXPECT_EQ((*m)->stats().replicas_built, 0u);
  EXPECT_EQ((*m)->stats().runs, static_cast<uint64_t>(kCallers));
}

}  // namespace
}  // namespace steadyocr::runtime

// The device backends (CUDA, Vulkan) on the real models: golden outputs (fp32 and reduced precision), and a per-node
// comparison with the reference backend that names the first op that goes wrong. Skips where the backend is not
// usable (no CUDA device; no Vulkan device — Mesa's lavapipe gives CI one, so the Vulkan tests run there).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "backends/reference/reference_backend.h"
#include "cuda_test_util.h"
#include "runtime/model.h"

namespace steadyocr::testing {
namespace {

struct GoldenCase {
  const char* model;
  const char* input;
  const char* output;
  bool saturated_sigmoid;  // det: see tests/backends/test_golden_models.cpp (NMSE measures ORT's sigmoid rounding)
};

const GoldenCase kGolden[] = {{kDetModel, "det_input", "det_output", true},
                              {kDetModel, "det_odd_input", "det_odd_output", true},
                              {kRecModel, "rec_input", "rec_output", false},
                              {kClsModel, "cls_input", "cls_output", false}};

// Share of rows (over the last axis) whose argmax agrees.
double argmax_agreement(const Tensor& a, const Tensor& b) {
  const int64_t cols = a.shape().back();
  const int64_t rows = a.numel() / cols;
  int64_t same = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const float* pa = a.data<float>() + r * cols;
    const float* pb = b.data<float>() + r * cols;
    same += (std::max_element(pa, pa + cols) - pa) == (std::max_element(pb, pb + cols) - pb);
  }
  return rows ? static_cast<double>(same) / rows : 1.0;
}

std::string test_data_dir() {
  if (const char* e = std::getenv("STEADYOCR_TEST_DATA")) return e;
  return source_dir() + "/tests/data";
}

// Makes the det graph output its logits (drops the sigmoid fused into the last layer); false when absent.
bool strip_final_sigmoid(graph::Graph& g) {
  graph::Node* last = g.outputs()[0]->producer;
  if (!last) return false;
  if (last->op == graph::OpKind::kSigmoid) {
    g.outputs()[0] = last->input(0);
    g.remove_dead();
    return true;
  }
  if (auto* a = std::get_if<graph::ConvTransposeAttrs>(&last->attrs); a && a->act.kind == graph::ActKind::kSigmoid) {
    a->act = graph::Activation{};
    return true;
  }
  if (auto* a = std::get_if<graph::ConvAttrs>(&last->attrs); a && a->act.kind == graph::ActKind::kSigmoid) {
    a->act = graph::Activation{};
    return true;
  }
  return false;
}

struct Tolerance {
  double nmse;           // rec, cls
  double min_agreement;  // rec, cls argmax rows
  double det_max_diff;   // det probability map vs ORT
  double logits_nmse;    // det logits vs the float64 evaluation
};

void check_golden(const std::string& backend_name, const Tolerance& tol) {
  SO_REQUIRE_MODELS();
  SO_REQUIRE_SHARED_DATA();
  SO_CUDA_BACKEND_OR_SKIP(backend, backend_name);
  for (const GoldenCase& gc : kGolden) {
    SCOPED_TRACE(gc.input);
    auto model = runtime::Model::load(models_dir() + "/" + gc.model, backend);
    ASSERT_TRUE(model.is_ok()) << model.status().to_string();
    SO_REQUIRE_GOLDEN(gc.input);
    SO_REQUIRE_GOLDEN(gc.output);
    auto in = golden(gc.input);
    auto expect = golden(gc.output);
    ASSERT_TRUE(in.is_ok() && expect.is_ok());
    for (int rep = 0; rep < 3; ++rep) {  // eager, capture, replay
      auto out = (*model)->run(*in);
      ASSERT_TRUE(out.is_ok()) << out.status().to_string();
      Comparison c = compare(*out, *expect);
      std::printf("%s %s run %d: %s\n", backend_name.c_str(), gc.input, rep, c.describe().c_str());
      EXPECT_TRUE(c.shape_match);
      EXPECT_EQ(c.non_finite, 0);
      if (gc.saturated_sigmoid) {
        EXPECT_LE(c.max_abs_diff, tol.det_max_diff) << c.describe();
      } else {
        EXPECT_LE(c.nmse, tol.nmse) << c.describe();
        EXPECT_GE(argmax_agreement(*out, *expect), tol.min_agreement);
      }
    }
    if (!gc.saturated_sigmoid) continue;
    const std::string logits_file = test_data_dir() + "/backends/" +
                                    std::string(gc.input).substr(0, std::string(gc.input).size() - 6) + "_logits.npy";
    auto logits = load_npy(logits_file);
    if (!logits.is_ok()) {
      std::printf("no %s: logits not checked\n", logits_file.c_str());
      continue;
    }
    auto g = optimized_model(gc.model, in->shape());
    ASSERT_TRUE(g.is_ok());
    ASSERT_TRUE(strip_final_sigmoid(*g));
    auto p = backend->prepare(*g);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    std::vector<Tensor> z;
    ASSERT_TRUE((*p)->run({*in}, &z).is_ok());
    Comparison cz = compare(z[0], *logits);
    std::printf("%s %s logits vs float64: %s\n", backend_name.c_str(), gc.input, cz.describe().c_str());
    EXPECT_LE(cz.nmse, tol.logits_nmse) << cz.describe();
  }
}

// det: within four steps of ORT's sigmoid resolution (2^-24) in fp32, like the reference backend.
TEST(CudaModels, GoldenFp32) {
  check_golden("cuda-fp32", {1e-6, 1.0, 4.0 / (1 << 24), 1e-9});
}

TEST(CudaModels, GoldenFp16) {
  check_golden("cuda-fp16", {1e-3, 0.98, 1e-3, 1e-4});
}

// Runs every node of the optimised model alone on CUDA, fed with the reference's own intermediate values, and
// compares each output with the reference: a failing golden test then points at the op.
void per_node(const std::string& backend_name, const char* model_file, const char* input_name, double tol) {
  SO_REQUIRE_MODELS();
  SO_REQUIRE_SHARED_DATA();
  SO_CUDA_BACKEND_OR_SKIP(backend, backend_name);
  SO_REQUIRE_GOLDEN(input_name);
  auto in = golden(input_name);
  ASSERT_TRUE(in.is_ok());
  auto g = optimized_model(model_file, in->shape());
  ASSERT_TRUE(g.is_ok()) << g.status().to_string();
  // Node by node means op by op: fused epilogues become their nodes again (as each backend ran them before fusion
  // became an IR attribute); the fused kernels are checked by the golden tests of the whole model.
  graph::expand_epilogues(*g);
  std::map<const graph::Value*, Tensor> values;
  values[g->inputs()[0]] = *in;
  int failures = 0, checked = 0;
  for (const auto& n : g->nodes()) {
    std::vector<const Tensor*> ins;
    for (const graph::Value* v : n->inputs) {
      if (!v) {
        ins.push_back(nullptr);
      } else if (v->is_constant()) {
        ins.push_back(&v->constant);
      } else {
        ins.push_back(&values[v]);
      }
    }
    std::vector<Tensor> ref;
    Status s = run_node_reference(*n, ins, &ref);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    for (size_t i = 0; i < n->outputs.size(); ++i) values[n->outputs[i]] = ref[i];
    // The node alone, its computed inputs as graph inputs.
    graph::Graph one;
    std::vector<graph::Value*> one_ins;
    std::vector<Tensor> feeds;
    for (const graph::Value* v : n->inputs) {
      if (!v) {
        one_ins.push_back(nullptr);
      } else if (v->is_constant()) {
        one_ins.push_back(one.add_constant(v->name, v->constant));
      } else {
        graph::Value* nv = one.add_value(v->name, v->dtype, v->shape);
        one.inputs().push_back(nv);
        one_ins.push_back(nv);
        feeds.push_back(values[v]);
      }
    }
    std::vector<graph::Value*> one_outs;
    for (const graph::Value* v : n->outputs) one_outs.push_back(one.add_value(v->name, v->dtype, v->shape));
    one.add_node(n->op, n->name, one_ins, one_outs, n->attrs);
    for (auto* o : one_outs) one.outputs().push_back(o);
    auto prepared = backend->prepare(one);
    ASSERT_TRUE(prepared.is_ok()) << n->describe() << ": " << prepared.status().to_string();
    std::vector<Tensor> got;
    s = (*prepared)->run(feeds, &got);
    ASSERT_TRUE(s.is_ok()) << n->describe() << ": " << s.to_string();
    ++checked;
    for (size_t i = 0; i < got.size(); ++i) {
      if (ref[i].dtype() != DType::kF32) continue;
      Comparison c = compare(got[i], ref[i]);
      if (c.nmse > tol || c.non_finite || !c.shape_match) {
        if (++failures <= 12) {
          ADD_FAILURE() << n->describe() << " output " << i << " " << shape_str(ref[i].shape()) << ": " << c.describe();
        }
      }
    }
  }
  std::printf("%s %s: %d nodes checked alone, %d differ beyond %.0e\n", backend_name.c_str(), model_file, checked,
              failures, tol);
}

TEST(CudaModels, PerNodeDetFp32) {
  per_node("cuda-fp32", kDetModel, "det_input", 1e-7);
}
TEST(CudaModels, PerNodeRecFp32) {
  per_node("cuda-fp32", kRecModel, "rec_input", 1e-7);
}
TEST(CudaModels, PerNodeClsFp32) {
  per_node("cuda-fp32", kClsModel, "cls_input", 1e-7);
}
// The Vulkan backend: the same bars as cuda-fp32 (the NMSE < 1e-6 in fp32 against the reference).
TEST(VulkanModels, GoldenFp32) {
  check_golden("vulkan", {1e-6, 1.0, 4.0 / (1 << 24), 1e-9});
}
// fp16 storage (fp32 arithmetic): cuda-fp16's bars.
TEST(VulkanModels, GoldenFp16) {
  check_golden("vulkan-fp16", {1e-3, 0.98, 1e-3, 1e-4});
}
TEST(VulkanModels, PerNodeDetFp32) {
  per_node("vulkan", kDetModel, "det_input", 1e-7);
}
TEST(VulkanModels, PerNodeRecFp32) {
  per_node("vulkan", kRecModel, "rec_input", 1e-7);
}
TEST(VulkanModels, PerNodeClsFp32) {
  per_node("vulkan", kClsModel, "cls_input", 1e-7);
}

TEST(CudaModels, PerNodeDetFp16) {
  per_node("cuda-fp16", kDetModel, "det_input", 3e-3);
}

// Reduced precision on a page-sized input: the det probability map must agree with fp32 where it matters.
TEST(CudaModels, Fp16MatchesFp32OnPageSizedDet) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(b32, "cuda-fp32");
  SO_CUDA_BACKEND_OR_SKIP(b16, "cuda-fp16");
  // A synthetic page: bright background with dark horizontal strokes ("lines of text"), ImageNet-normalised.
  Tensor x = Tensor::empty(DType::kF32, {1, 3, 736, 960});
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 736; ++y) {
      for (int xx = 0; xx < 960; ++xx) {
        bool ink = (y % 48) > 30 && (y % 48) < 42 && (xx % 37) < 29 && xx > 40 && xx < 900;
        float v = ink ? 0.1f : 0.95f;
        x.data<float>()[(c * 736 + y) * 960 + xx] = (v - 0.45f) / 0.226f;
      }
    }
  }
  auto m32 = runtime::Model::load(models_dir() + "/" + kDetModel, b32);
  auto m16 = runtime::Model::load(models_dir() + "/" + kDetModel, b16);
  ASSERT_TRUE(m32.is_ok() && m16.is_ok());
  auto y32 = (*m32)->run(x);
  auto y16 = (*m16)->run(x);
  ASSERT_TRUE(y32.is_ok()) << y32.status().to_string();
  ASSERT_TRUE(y16.is_ok()) << y16.status().to_string();
  Comparison c = compare(*y16, *y32);
  int64_t flips = 0;
  for (int64_t i = 0; i < y32->numel(); ++i) flips += (y32->data<float>()[i] > 0.3f) != (y16->data<float>()[i] > 0.3f);
  std::printf("det 736x960 fp16 vs fp32: %s, %lld of %lld pixels change side of the 0.3 threshold\n",
              c.describe().c_str(), static_cast<long long>(flips), static_cast<long long>(y32->numel()));
  EXPECT_EQ(c.non_finite, 0);
  EXPECT_LE(c.nmse, 1e-3);
  EXPECT_LE(static_cast<double>(flips) / y32->numel(), 1e-3);
}

// One CUDA plan for every input shape (CudaSymbolicPlan), taking every caller at once: 8 threads read recogniser
// batches of four widths three times over through one model, and each output must be the bits of the per-shape plan's
// on the same backend (the same kernels and algorithms). The model makes no replica of the plan.
void concurrent_symbolic_rec(const std::string& backend) {
  SO_REQUIRE_MODELS();
  SO_CUDA_BACKEND_OR_SKIP(b, backend);
  runtime::ModelOptions shape_free;
  shape_free.reuse_generic_passes = true;
  shape_free.max_replicas = 4;
  runtime::ModelOptions per_shape = shape_free;
  per_shape.symbolic_plans = false;
  auto m = runtime::Model::load(models_dir() + "/" + kRecModel, b, shape_free);
  auto own = runtime::Model::load(models_dir() + "/" + kRecModel, b, per_shape);
  ASSERT_TRUE(m.is_ok() && own.is_ok());
  ASSERT_TRUE((*m)->stats().symbolic_plan) << backend << " made no plan for every shape";
  const std::vector<int64_t> widths = {96, 160, 320, 488};
  std::vector<Tensor> inputs, want;
  for (size_t i = 0; i < widths.size(); ++i) {
    inputs.push_back(random_tensor({static_cast<int64_t>(1 + i), 3, 48, widths[i]}, 40 + static_cast<int>(i)));
    auto w = (*own)->run(inputs.back());
    ASSERT_TRUE(w.is_ok()) << w.status().to_string();
    want.push_back(*w);
  }
  constexpr int kThreads = 8, kRounds = 3;
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < kRounds && errors[t].empty(); ++r) {
        const size_t i = static_cast<size_t>(t + r) % inputs.size();
        auto got = (*m)->run(inputs[i]);
        if (!got.is_ok()) {
          errors[t] = got.status().to_string();
        } else if (got->describe() != want[i].describe() ||
                   std::memcmp(got->raw(), want[i].raw(), want[i].nbytes()) != 0) {
          errors[t] = fmt::format("width {}: not the bits of the per-shape plan ({})", widths[i],
                                  compare(*got, want[i]).describe());
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
  EXPECT_EQ((*m)->stats().replicas_built, 0u);
  EXPECT_EQ((*m)->stats().runs, static_cast<uint64_t>(kThreads * kRounds));
}

TEST(CudaModels, OnePlanForEveryShapeTakesConcurrentCallersFp32) {
  concurrent_symbolic_rec("cuda-fp32");
}
TEST(CudaModels, OnePlanForEveryShapeTakesConcurrentCallersFp16) {
  concurrent_symbolic_rec("cuda-fp16");
}

}  // namespace
}  // namespace steadyocr::testing

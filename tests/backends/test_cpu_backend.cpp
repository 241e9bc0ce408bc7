// Unit tests of the oneDNN CPU backend's own machinery where the cross-backend op cases do not reach: the
// elementwise engine's broadcast patterns, fusion of epilogues into oneDNN primitives, elementwise chains in
// channel-blocked layouts with padded channels, liveness-based memory reuse, the weight cache, the arena
// pool, thread-count independence and clear refusals.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <thread>

#include "backends/cpu/arena_pool.h"
#include "backends/cpu/eltwise_kernels.h"
#include "backends/cpu/plan.h"
#include "backends/cpu/weight_cache.h"
#include "backends/reference/reference_backend.h"
#include "core/parallel.h"
#include "graph/passes/passes.h"
#include "op_cases.h"
#include "runtime/backend_registry.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

using graph::Activation;
using graph::OpKind;
using graph::Value;

std::shared_ptr<Backend> cpu_or_null() {
  auto b = runtime::create_backend("cpu");
  return b.is_ok() ? b.value() : nullptr;
}

#define SO_REQUIRE_CPU_BACKEND(b) \
  if (!(b)) GTEST_SKIP() << "the cpu (oneDNN) backend is not in this build"

// ---- elementwise engine ----

struct EwCase {
  std::vector<int64_t> dims;
  std::vector<std::vector<int64_t>> operand_dims;  // per operand, same rank as dims (1 = broadcast)
};

std::vector<int64_t> dense_strides(const std::vector<int64_t>& d) {
  std::vector<int64_t> s(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * d[i + 1];
  return s;
}

float apply_ref(cpu::EwOp op, float acc, float b, float alpha, float beta) {
  using cpu::EwOp;
  switch (op) {
    case EwOp::kAdd:
      return acc + b;
    case EwOp::kSub:
      return acc - b;
    case EwOp::kRSub:
      return b - acc;
    case EwOp::kMul:
      return acc * b;
    case EwOp::kDiv:
      return acc / b;
    case EwOp::kRDiv:
      return b / acc;
    case EwOp::kRelu:
      return acc > 0 ? acc : 0;
    case EwOp::kSigmoid:
      return 1.f / (1.f + std::exp(-acc));
    case EwOp::kHardSigmoid:
      return std::clamp(alpha * acc + beta, 0.f, 1.f);
    case EwOp::kHardSwish:
      return acc * std::clamp(acc / 6.f + 0.5f, 0.f, 1.f);
    case EwOp::kClip:
      return std::clamp(acc, alpha, beta);
    case EwOp::kLinear:
      return alpha * acc + beta;
    case EwOp::kSwish:
      return acc / (1.f + std::exp(-alpha * acc));
    case EwOp::kSquare:
      return acc * acc;
    default:
      return acc;
  }
}

// Broadcast patterns the engine specialises: same shape, scalar, per-lane (channel-blocked per-channel),
// per-row, and fully general (transposed) operands; chains mixing binary and unary steps; in place.
TEST(CpuEltwiseEngine, BroadcastPatternsAndChainsMatchNaive) {
  using cpu::EwOp;
  const std::vector<EwCase> cases = {
      {{2, 3, 5, 16}, {{2, 3, 5, 16}, {2, 3, 5, 16}}},                   // same shape
      {{2, 3, 5, 16}, {{2, 3, 5, 16}, {1, 1, 1, 1}}},                    // scalar
      {{2, 3, 70, 16}, {{2, 3, 70, 16}, {2, 3, 1, 16}}},                 // per lane (nChw16c per-channel)
      {{4, 7, 300}, {{4, 7, 300}, {4, 7, 1}}},                           // per row
      {{3, 5000}, {{3, 5000}, {1, 5000}, {3, 1}}},                       // long rows, chunked columns
      {{2, 1, 9}, {{2, 1, 9}, {1, 4, 1}}},                               // both operands broadcast
      {{6, 8, 40, 15}, {{6, 8, 40, 15}, {1, 8, 1, 15}, {6, 1, 40, 1}}},  // mixed
  };
  const std::vector<std::vector<cpu::EwStep>> chains = {
      {{EwOp::kAdd, 1}},
      {{EwOp::kMul, 1}, {EwOp::kHardSwish}, {EwOp::kLinear, -1, 0.5f, -0.25f}},
      {{EwOp::kRSub, 1}, {EwOp::kSigmoid}, {EwOp::kMul, 0}},
      {{EwOp::kDiv, 1}, {EwOp::kClip, -1, -0.5f, 0.7f}, {EwOp::kRDiv, 0}, {EwOp::kSwish, -1, 1.3f}},
      {{EwOp::kHardSigmoid, -1, 0.2f, 0.5f}, {EwOp::kSquare}, {EwOp::kRelu}, {EwOp::kSub, 1}},
  };
  uint32_t seed = 1;
  for (const EwCase& c : cases) {
    for (const auto& chain0 : chains) {
      std::vector<cpu::EwStep> chain = chain0;
      const size_t n_ops = c.operand_dims.size();
      for (auto& st : chain) {
        if (st.operand > 0) st.operand = 1 + (st.operand - 1 + static_cast<int>(seed)) % static_cast<int>(n_ops - 1);
      }
      std::vector<Tensor> ops;
      std::vector<std::vector<int64_t>> strides;
      for (const auto& od : c.operand_dims) {
        ops.push_back(random_tensor(Shape(od.begin(), od.end()), seed++, 0.2f, 1.5f));
        std::vector<int64_t> s = dense_strides(od);
        for (size_t i = 0; i < od.size(); ++i) {
          if (od[i] == 1 && c.dims[i] != 1) s[i] = 0;
        }
        strides.push_back(s);
      }
      cpu::EwProgram prog = cpu::EwProgram::compile(c.dims, strides, chain);
      const int64_t n = prog.numel();
      std::vector<float> expected(n);
      const std::vector<int64_t> out_st = dense_strides(c.dims);
      for (int64_t i = 0; i < n; ++i) {
        auto at = [&](size_t k) {
          int64_t off = 0;
          for (size_t d = 0; d < c.dims.size(); ++d) off += (i / out_st[d]) % c.dims[d] * strides[k][d];
          return ops[k].data<float>()[off];
        };
        float acc = at(0);
        for (const auto& st : chain)
          acc = apply_ref(st.op, acc, st.operand >= 0 ? at(st.operand) : 0.f, st.alpha, st.beta);
        expected[i] = acc;
      }
      std::vector<const float*> ptrs;
      for (const Tensor& t : ops) ptrs.push_back(t.data<float>());
      std::vector<float> out(n);
      prog.run(ptrs, out.data());
      double worst = 0;
      for (int64_t i = 0; i < n; ++i) {
        // Relative to the magnitude (chains like x^2 - y cancel: compare against 1 + |expected|).
        worst = std::max(worst, std::abs(double(out[i]) - expected[i]) / (1.0 + std::abs(expected[i])));
      }
      EXPECT_LT(worst, 1e-5) << prog.describe() << " dims " << shape_str(Shape(c.dims.begin(), c.dims.end()));
    }
  }
}

TEST(CpuEltwiseEngine, InPlaceOverOperandZero) {
  using cpu::EwOp;
  Tensor x = random_tensor({4, 33, 129}, 3);
  Tensor y = random_tensor({1, 33, 1}, 4);
  Tensor expect = x.clone();
  for (int64_t i = 0; i < x.numel(); ++i) {
    float v = x.data<float>()[i] * y.data<float>()[(i / 129) % 33];
    expect.data<float>()[i] = v * std::clamp(v / 6.f + 0.5f, 0.f, 1.f);
  }
  cpu::EwProgram prog =
      cpu::EwProgram::compile({4, 33, 129}, {{33 * 129, 129, 1}, {0, 1, 0}}, {{EwOp::kMul, 1}, {EwOp::kHardSwish}});
  prog.run({x.data<float>(), y.data<float>()}, x.data<float>());
  EXPECT_LT(compare(x, expect).nmse, 1e-12);
}

// ---- plans: fusion, layouts, memory ----

// A case graph as the runtime's passes hand it to a backend: pointwise chains fused into epilogues.
graph::Graph with_epilogues(const graph::Graph& g) {
  graph::Graph fused = g.clone();
  EXPECT_TRUE(graph::fuse_epilogues(fused, {}).is_ok());
  return fused;
}

// Runs a case graph on the cpu backend (with_epilogues) and the reference; returns the cpu plan's step labels.
std::vector<std::string> expect_matches_reference(const CaseGraph& c, double max_nmse = 1e-9) {
  auto cpu = cpu_or_null();
  auto ref = make_reference_backend();
  auto pc = cpu->prepare(with_epilogues(c.graph));
  auto pr = ref->prepare(c.graph);
  EXPECT_TRUE(pc.is_ok()) << pc.status().to_string();
  EXPECT_TRUE(pr.is_ok()) << pr.status().to_string();
  if (!pc.is_ok() || !pr.is_ok()) return {};
  std::vector<Tensor> oc, orf;
  Status s = (*pc)->run(c.inputs, &oc);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE((*pr)->run(c.inputs, &orf).is_ok());
  if (!s.is_ok()) return {};
  for (size_t i = 0; i < orf.size(); ++i) {
    Comparison cmp = compare(oc[i], orf[i]);
    EXPECT_LT(cmp.nmse, max_nmse) << "output " << i << ": " << cmp.describe();
    EXPECT_EQ(cmp.non_finite, 0);
  }
  auto* plan = dynamic_cast<cpu::CpuPlan*>(pc->get());
  return plan ? plan->step_labels() : std::vector<std::string>{};
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += "  " + l + "\n";
  return s;
}

size_t count_containing(const std::vector<std::string>& v, const std::string& what) {
  return std::count_if(v.begin(), v.end(), [&](const std::string& l) { return l.find(what) != std::string::npos; });
}

// PPLCNetV3's block as exported (scalar affine, decomposed-free HardSwish, affine, per-channel add, residual):
// everything after the convolution becomes oneDNN post-ops of one primitive.
TEST(CpuFusion, ConvEpilogueBecomesPostOps) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseBuilder b(31);
  const Shape s{1, 24, 9, 11};
  Value* x = b.input(s);
  graph::ConvAttrs a;
  a.kernel = {3, 3};
  a.pads = {1, 1, 1, 1};
  a.group = 24;
  Value* c = b.node(OpKind::kConv, a, {x, b.weight({24, 1, 3, 3}), b.weight({24})}, s);
  Value* m = b.node(OpKind::kMul, {}, {b.constant(Tensor::from_floats({1}, {0.8f})), c}, s);
  Value* ad = b.node(OpKind::kAdd, {}, {m, b.constant(Tensor::from_floats({1}, {0.3f}))}, s);
  Value* h = b.node(OpKind::kHardSwish, graph::ActAttrs{Activation::hard_swish()}, {ad}, s);
  Value* pc = b.node(OpKind::kAdd, {}, {h, b.weight({24, 1, 1})}, s);
  Value* r = b.node(OpKind::kAdd, {}, {pc, x}, s);
  Value* out = b.node(OpKind::kRelu, graph::ActAttrs{Activation::relu()}, {r}, s);
  auto labels = expect_matches_reference(b.finish({out}));
  EXPECT_EQ(count_containing(labels, "conv"), 1u) << joined(labels);
  EXPECT_EQ(count_containing(labels, "eltwise"), 0u) << joined(labels);
  EXPECT_EQ(count_containing(labels, "+linear(0.8,0.3)+hardswish+add[24]+sum+relu"), 1u) << joined(labels);
}

// x*sigmoid(x) after a conv (SVTR's swish, with the exporter's Mul by 1) becomes one eltwise_swish post-op.
TEST(CpuFusion, SwishAfterConvAndMatMul) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseBuilder b(32);
  const Shape s{2, 16, 1, 10};
  Value* x = b.input({2, 8, 1, 10});
  graph::ConvAttrs a;
  a.kernel = {1, 1};
  Value* c = b.node(OpKind::kConv, a, {x, b.weight({16, 8, 1, 1})}, s);
  Value* one = b.node(OpKind::kMul, {}, {c, b.constant(Tensor::from_floats({}, {1.f}))}, s);
  Value* sg = b.node(OpKind::kSigmoid, graph::ActAttrs{Activation::sigmoid()}, {one}, s);
  Value* sw = b.node(OpKind::kMul, {}, {c, sg}, s);
  Value* sq = b.node(OpKind::kSqueeze, graph::AxesAttrs{{2}}, {sw}, {2, 16, 10});
  Value* t = b.node(OpKind::kTranspose, graph::TransposeAttrs{{0, 2, 1}}, {sq}, {2, 10, 16});
  Value* mm = b.node(OpKind::kMatMul, {}, {t, b.weight({16, 12})}, {2, 10, 12});
  Value* bias = b.node(OpKind::kAdd, {}, {mm, b.weight({12})}, {2, 10, 12});
  Value* s2 = b.node(OpKind::kSigmoid, graph::ActAttrs{Activation::sigmoid()}, {bias}, {2, 10, 12});
  Value* out = b.node(OpKind::kMul, {}, {bias, s2}, {2, 10, 12});
  auto labels = expect_matches_reference(b.finish({out}));
  EXPECT_EQ(count_containing(labels, "+swish"), 2u) << joined(labels);
  EXPECT_EQ(count_containing(labels, "packed +add[12]+swish"), 1u) << joined(labels);
  EXPECT_EQ(count_containing(labels, "eltwise"), 0u) << joined(labels);
}

// The squeeze-excite multiply and the FPN's x + x*s between convolutions run in the convolutions' blocked
// layout; with 24 channels the last 16-channel block is padded, and a chain that maps 0 to non-zero
// (sigmoid) must leave the padding at zero for the next convolution.
TEST(CpuLayouts, BlockedChainsWithPaddedChannels) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseBuilder b(33);
  const Shape s{1, 24, 13, 17};
  Value* x = b.input({1, 8, 13, 17});
  graph::ConvAttrs a;
  a.kernel = {1, 1};
  Value* c = b.node(OpKind::kConv, a, {x, b.weight({24, 8, 1, 1}), b.weight({24})}, s);
  Value* p = b.node(OpKind::kGlobalAveragePool, {}, {c}, {1, 24, 1, 1});
  graph::ConvAttrs se = a;
  se.act = Activation::hard_sigmoid(0.2f, 0.5f);
  Value* g = b.node(OpKind::kConv, se, {p, b.weight({24, 24, 1, 1}), b.weight({24})}, {1, 24, 1, 1});
  Value* m = b.node(OpKind::kMul, {}, {c, g}, s);
  Value* fpn = b.node(OpKind::kAdd, {}, {c, m}, s);  // x + x*s re-reads operand 0: never in place
  Value* sg = b.node(OpKind::kSigmoid, graph::ActAttrs{Activation::sigmoid()}, {fpn}, s);
  graph::ConvAttrs k3;
  k3.kernel = {3, 3};
  k3.pads = {1, 1, 1, 1};
  Value* out = b.node(OpKind::kConv, k3, {sg, b.weight({4, 24, 3, 3}), b.weight({4})}, {1, 4, 13, 17});
  auto labels = expect_matches_reference(b.finish({out}));
  const std::string blocked =
      fmt::format("nChw{}c", cpu::conv_blocked_tag() == dnnl::memory::format_tag::aBcd16b ? 16 : 8);
  EXPECT_EQ(count_containing(labels, "eltwise[Mul,Add,Sigmoid] load+mul+add+sigmoid " + blocked), 1u) << joined(labels);
  EXPECT_EQ(count_containing(labels, "reorder"), 2u) << "only the graph input and output change layout\n"
                                                     << joined(labels);
}

// A long chain of convolutions: liveness lets buffers share memory, so the plan needs about two activations,
// not one per node.
TEST(CpuMemory, LivenessReusesArena) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseBuilder b(34);
  const Shape s{1, 32, 40, 40};
  Value* v = b.input(s);
  graph::ConvAttrs a;
  a.kernel = {3, 3};
  a.pads = {1, 1, 1, 1};
  a.act = Activation::relu();
  for (int i = 0; i < 10; ++i) v = b.node(OpKind::kConv, a, {v, b.weight({32, 32, 3, 3}, -0.1f, 0.1f)}, s);
  CaseGraph c = b.finish({v});
  auto labels = expect_matches_reference(c, 1e-9);
  auto p = cpu->prepare(c.graph);
  ASSERT_TRUE(p.is_ok());
  const size_t one = 32 * 40 * 40 * sizeof(float);
  EXPECT_LE((*p)->workspace_bytes(), 4 * one) << "10 convolutions should not need 10 buffers";
  EXPECT_GE((*p)->workspace_bytes(), 2 * one);
}

TEST(CpuMemory, WeightCacheSharesByContent) {
  cpu::WeightCache cache(size_t{64} << 20);
  Tensor w1 = random_tensor({64, 32, 3, 3}, 5);
  Tensor w2 = w1.clone();  // same contents, other storage (a second graph clone)
  Tensor w3 = random_tensor({64, 32, 3, 3}, 6);
  const cpu::Md src({64, 32, 3, 3}, cpu::Dt::f32, cpu::Tag::oihw);
  const cpu::Md dst({64, 32, 3, 3}, cpu::Dt::f32, cpu::Tag::OIhw16i16o);
  auto a = cache.get(w1, src, dst);
  auto b2 = cache.get(w2, src, dst);
  auto c = cache.get(w3, src, dst);
  ASSERT_TRUE(a.is_ok() && b2.is_ok() && c.is_ok());
  EXPECT_EQ(a->get_data_handle(), b2->get_data_handle());
  EXPECT_NE(a->get_data_handle(), c->get_data_handle());
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 2u);
}

TEST(CpuMemory, ArenaPoolReusesSmallestFit) {
  cpu::ArenaPool pool(2);
  auto a = pool.acquire(3 << 20);
  auto b = pool.acquire(10 << 20);
  ASSERT_TRUE(a.ptr && b.ptr);
  pool.release(a);
  pool.release(b);
  auto c = pool.acquire(1 << 20);
  EXPECT_EQ(c.ptr, a.ptr) << "the smallest block that fits";
  auto d = pool.acquire(5 << 20);
  EXPECT_EQ(d.ptr, b.ptr);
  pool.release(c);
  pool.release(d);
  auto e = pool.acquire(64 << 20);  // nothing fits: the largest free block is dropped, a new one made
  EXPECT_GE(e.bytes, size_t{64} << 20);
  pool.release(e);
  EXPECT_LE(pool.free_bytes(), e.bytes + (size_t{4} << 20));
}

// The same plan gives the same answer with one thread and with all of them (no races in our kernels).
TEST(CpuThreads, ResultIndependentOfThreadCount) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  const auto& cases = all_op_cases();
  const int threads = num_threads();
  for (const OpCase& oc : cases) {
    if (oc.name.rfind("Pattern_", 0) != 0 && oc.name.rfind("Softmax", 0) != 0 && oc.name.rfind("LayerNorm", 0) != 0) {
      continue;
    }
    CaseGraph c = oc.build();
    auto p = cpu->prepare(with_epilogues(c.graph));
    ASSERT_TRUE(p.is_ok()) << oc.name << ": " << p.status().to_string();
    std::vector<Tensor> one, many;
    set_num_threads(1);
    ASSERT_TRUE((*p)->run(c.inputs, &one).is_ok());
    set_num_threads(std::max(threads, 2));
    ASSERT_TRUE((*p)->run(c.inputs, &many).is_ok());
    set_num_threads(threads);
    for (size_t i = 0; i < one.size(); ++i) EXPECT_LT(compare(many[i], one[i]).nmse, 1e-12) << oc.name;
  }
}

// Plans of different shapes running at the same time from several threads (the pool hands each its own block;
// the threads are split between them) give the same results as running alone (to rounding: oneDNN may split a
// reduction differently with fewer threads).
TEST(CpuThreads, ConcurrentRunsOfDifferentPlans) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  std::vector<CaseGraph> cases;
  for (const OpCase& oc : all_op_cases()) {
    if (oc.name == "Pattern_squeeze_excite" || oc.name == "Pattern_conv_bn_hardswish_residual" ||
        oc.name == "Conv_k3_big_k_c96_m72") {
      cases.push_back(oc.build());
    }
  }
  ASSERT_EQ(cases.size(), 3u);
  std::vector<std::unique_ptr<PreparedGraph>> plans;
  std::vector<std::vector<Tensor>> alone(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    auto p = cpu->prepare(with_epilogues(cases[i].graph));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    ASSERT_TRUE((*p)->run(cases[i].inputs, &alone[i]).is_ok());
    plans.push_back(std::move(p).value());
  }
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (size_t i = 0; i < cases.size(); ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 20; ++k) {
        std::vector<Tensor> out;
        if (!plans[i]->run(cases[i].inputs, &out).is_ok()) {
          ++mismatches;
          continue;
        }
        for (size_t j = 0; j < out.size(); ++j) {
          if (!(compare(out[j], alone[i][j]).nmse <= 1e-12)) ++mismatches;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(CpuRefusals, NamesTheNodeAndTheReason) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseBuilder b(35);
  Value* x = b.input({1, 4, 5, 5});
  Value* w = b.input({4, 4, 3, 3});  // weights computed at run time: not supported
  graph::ConvAttrs a;
  a.kernel = {3, 3};
  Value* y = b.node(OpKind::kConv, a, {x, w}, {1, 4, 3, 3});
  CaseGraph c = b.finish({y});
  auto p = cpu->prepare(c.graph);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(p.status().message().find("Conv 'Conv_0'"), std::string::npos) << p.status().to_string();
  EXPECT_NE(p.status().message().find("constant"), std::string::npos) << p.status().to_string();
}

TEST(CpuRefusals, WrongInputShapeAtRun) {
  auto cpu = cpu_or_null();
  SO_REQUIRE_CPU_BACKEND(cpu);
  CaseGraph c = all_op_cases().front().build();
  auto p = cpu->prepare(c.graph);
  ASSERT_TRUE(p.is_ok());
  std::vector<Tensor> out;
  Status s = (*p)->run({random_tensor({1, 1, 2, 2}, 1)}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("prepared for"), std::string::npos) << s.to_string();
}

}  // namespace
}  // namespace steadyocr::testing

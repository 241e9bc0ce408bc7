// Runs every op case (op_cases.cpp) on every backend present and compares with the reference backend by
// normalised MSE, counting NaN/Inf apart. Each case x backend is its own test, e.g.
// BackendOps/MatchesReference/Conv_k3_s2_g32_dw_pad1111_hardswish__cpu. The reference backend itself
// runs as a self-check: its result must not depend on the thread count.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>

#include "../graph/graph_test_util.h"
#include "backends/reference/reference_backend.h"
#include "core/parallel.h"
#include "graph/passes/passes.h"
#include "op_cases.h"
#include "runtime/backend_registry.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

struct BackendCase {
  size_t case_index = 0;
  std::string backend;
};

std::vector<std::string> backends_under_test() {
  std::vector<std::string> names = runtime::available_backends();
  // The reference always runs (self-check), last, whatever the registry says.
  names.erase(std::remove(names.begin(), names.end(), "reference"), names.end());
  names.push_back("reference");
  return names;
}

std::vector<BackendCase> all_params() {
  std::vector<BackendCase> v;
  for (const std::string& b : backends_under_test()) {
    for (size_t i = 0; i < all_op_cases().size(); ++i) v.push_back({i, b});
  }
  return v;
}

std::string param_name(const ::testing::TestParamInfo<BackendCase>& info) {
  std::string b = info.param.backend;
  for (char& c : b) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return all_op_cases()[info.param.case_index].name + "__" + b;
}

bool reduced_precision(const std::string& backend) {
  return backend.find("fp16") != std::string::npos || backend.find("bf16") != std::string::npos;
}

int64_t count_non_finite(const Tensor& t) {
  if (t.dtype() != DType::kF32) return 0;
  int64_t n = 0;
  for (int64_t i = 0; i < t.numel(); ++i) n += !std::isfinite(t.data<float>()[i]);
  return n;
}

Status run_on(Backend& backend, const graph::Graph& g, const CaseGraph& c, std::vector<Tensor>* outputs) {
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> prepared, backend.prepare(g));
  return prepared->run(c.inputs, outputs);
}

Status run_on(Backend& backend, const CaseGraph& c, std::vector<Tensor>* outputs) {
  return run_on(backend, c.graph, c, outputs);
}

// The case as the runtime hands it to a backend: pointwise chains fused into epilogues (the passes' last step).
graph::Graph with_epilogues(const CaseGraph& c) {
  graph::Graph g = c.graph.clone();
  auto fused = graph::fuse_epilogues(g, {});
  EXPECT_TRUE(fused.is_ok()) << fused.status().to_string();
  return g;
}

class BackendOps : public ::testing::TestWithParam<BackendCase> {};

TEST_P(BackendOps, MatchesReference) {
  const OpCase& oc = all_op_cases()[GetParam().case_index];
  const std::string& name = GetParam().backend;
  CaseGraph c = oc.build();
  auto reference = make_reference_backend();
  std::vector<Tensor> expected;
  Status s = run_on(*reference, c, &expected);
  ASSERT_TRUE(s.is_ok()) << "reference: " << s.to_string();
  ASSERT_EQ(expected.size(), c.graph.outputs().size());

  std::vector<Tensor> actual;
  if (name == "reference") {
    // Self-check: one thread must give bit-identical results (no order-dependent accumulation).
    const int threads = num_threads();
    set_num_threads(1);
    s = run_on(*reference, c, &actual);
    set_num_threads(threads);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(actual[i].describe(), expected[i].describe());
      EXPECT_EQ(0, std::memcmp(actual[i].raw(), expected[i].raw(), expected[i].nbytes())) << "output " << i;
      EXPECT_EQ(count_non_finite(expected[i]), 0) << "output " << i << " of the reference has NaN/Inf";
    }
    return;
  }
  auto backend = runtime::create_backend(name);
  if (!backend.is_ok()) GTEST_SKIP() << name << " unavailable: " << backend.status().to_string();
  const graph::Graph fused = with_epilogues(c);
  for (const auto& n : fused.nodes()) {
    if (!(*backend)->supports(*n)) GTEST_SKIP() << name << " declines " << n->describe();
  }
  s = run_on(**backend, fused, c, &actual);
  ASSERT_TRUE(s.is_ok()) << name << ": " << s.to_string();
  ASSERT_EQ(actual.size(), expected.size());
  const double tol = reduced_precision(name) ? oc.max_nmse_reduced : oc.max_nmse;
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i].dtype(), expected[i].dtype()) << "output " << i;
    ASSERT_EQ(actual[i].shape(), expected[i].shape()) << "output " << i;
    EXPECT_EQ(count_non_finite(actual[i]), count_non_finite(expected[i])) << "NaN/Inf in output " << i;
    if (expected[i].dtype() != DType::kF32) {
      EXPECT_EQ(actual[i].to_int64s(), expected[i].to_int64s()) << "integer output " << i << " differs";
      continue;
    }
    Comparison cmp = compare(actual[i], expected[i]);
    EXPECT_LE(cmp.nmse, tol) << "output " << i << ": " << cmp.describe() << " (tolerance " << tol << ")";
  }
}

INSTANTIATE_TEST_SUITE_P(All, BackendOps, ::testing::ValuesIn(all_params()), param_name);

// One plan for every input shape (Backend::prepare_symbolic), on each backend that makes one (cpu; vulkan and
// vulkan-fp16 wherever a Vulkan device is, lavapipe in CI; the cuda backends where a GPU is): each case with its first
// input's N, H and W made symbolic (when it is rank 4 and they are not 1), planned once, run on the case's inputs, on
// a first input 3 rows and 5 columns larger, on the case's inputs again and on one 1 row and 2 columns larger than
// them, against the reference on the graph instantiated for each. On a backend whose plan for one shape runs the same
// kernels (vulkan, cuda), the result must also be the bits of that plan's. A case whose graph cannot be specialised on
// symbols, or that the backend plans per shape, is skipped and says why.
std::vector<BackendCase> symbolic_params() {
  std::vector<BackendCase> v;
  for (const std::string& b : backends_under_test()) {
    if (b != "cpu" && b.rfind("vulkan", 0) != 0 && b.rfind("cuda", 0) != 0) continue;
    for (size_t i = 0; i < all_op_cases().size(); ++i) v.push_back({i, b});
  }
  return v;
}

class SymbolicOps : public ::testing::TestWithParam<BackendCase> {};

TEST_P(SymbolicOps, OnePlanMatchesTheReferenceOnEveryShape) {
  const OpCase& oc = all_op_cases()[GetParam().case_index];
  const std::string& name = GetParam().backend;
  auto backend = runtime::create_backend(name);
  if (!backend.is_ok()) GTEST_SKIP() << name << " unavailable: " << backend.status().to_string();
  CaseGraph c = oc.build();
  graph::Graph g = c.graph.clone();
  graph::Value* first = g.inputs().empty() ? nullptr : g.inputs()[0];
  const bool free_dims = first && first->shape.size() == 4 && first->dtype == DType::kF32;
  if (free_dims) {
    for (size_t d : {0, 2, 3}) {
      if (first->shape[d] > 1) first->shape[d] = -1;  // a size-1 axis broadcasts: it stays one
    }
  }
  Status s = graph::specialize_symbolic(g, ref_passes());
  if (!s.is_ok()) GTEST_SKIP() << "not symbolic: " << s.to_string();
  auto fused = graph::fuse_epilogues(g, {});
  ASSERT_TRUE(fused.is_ok()) << fused.status().to_string();
  auto plan = (*backend)->prepare_symbolic(g);
  if (!plan.is_ok() && plan.status().code() == StatusCode::kUnsupported) {
    GTEST_SKIP() << "planned per shape: " << plan.status().to_string();
  }
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  std::vector<std::vector<Tensor>> input_sets = {c.inputs};
  if (free_dims) {
    std::vector<Tensor> larger = c.inputs;
    Shape sh = larger[0].shape();
    sh[2] += 3;
    sh[3] += 5;
    larger[0] = random_tensor(sh, 17);
    input_sets.push_back(std::move(larger));
    input_sets.push_back(c.inputs);          // back to the first shape (a plan that grew for the larger one)
    std::vector<Tensor> between = c.inputs;  // new, and no larger than one seen (cuda: no cuDNN workspace query)
    sh = between[0].shape();
    sh[2] += 1;
    sh[3] += 2;
    between[0] = random_tensor(sh, 18);
    input_sets.push_back(std::move(between));
  }
  const bool same_kernels = name.rfind("vulkan", 0) == 0 || name.rfind("cuda", 0) == 0;
  const double tol = reduced_precision(name) ? oc.max_nmse_reduced : oc.max_nmse;
  auto reference = make_reference_backend();
  for (size_t set = 0; set < input_sets.size(); ++set) {
    std::vector<Shape> shapes;
    for (const Tensor& t : input_sets[set]) shapes.push_back(t.shape());
    auto static_graph = graph::instantiate(g, shapes);
    if (!static_graph.is_ok()) {
      ASSERT_NE(set, 0u) << static_graph.status().to_string();  // the case's own shapes always fit
      ASSERT_NE(set, 2u) << static_graph.status().to_string();
      std::printf("%s: inputs %zu do not fit (%s)\n", oc.name.c_str(), set, static_graph.status().message().c_str());
      continue;  // the first shape again, or one between it and the larger
    }
    CaseGraph sc{std::move(static_graph).value(), input_sets[set]};
    std::vector<Tensor> expected, actual, own;
    ASSERT_TRUE(run_on(*reference, sc, &expected).is_ok());
    s = (*plan)->run(input_sets[set], &actual);
    ASSERT_TRUE(s.is_ok()) << s.to_string();
    ASSERT_EQ(actual.size(), expected.size());
    if (same_kernels) {
      ASSERT_TRUE(run_on(**backend, sc, &own).is_ok());
    }
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_EQ(actual[i].shape(), expected[i].shape()) << "output " << i << ", inputs " << set;
      Comparison cmp = compare(actual[i], expected[i]);
      EXPECT_LE(cmp.nmse, tol) << "output " << i << ", inputs " << set << ": " << cmp.describe();
      if (same_kernels) {
        ASSERT_EQ(own[i].describe(), actual[i].describe());
        EXPECT_EQ(0, std::memcmp(own[i].raw(), actual[i].raw(), own[i].nbytes()))
            << "output " << i << ", inputs " << set << ": not the bits of the plan for this shape alone";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, SymbolicOps, ::testing::ValuesIn(symbolic_params()), param_name);

TEST(BackendOpsMeta, EveryOpKindHasACase) {
  std::set<graph::OpKind> covered;
  for (const OpCase& oc : all_op_cases()) {
    CaseGraph c = oc.build();
    for (const auto& n : c.graph.nodes()) covered.insert(n->op);
  }
  for (size_t i = 0; i < static_cast<size_t>(graph::OpKind::kCount); ++i) {
    auto op = static_cast<graph::OpKind>(i);
    EXPECT_TRUE(covered.count(op)) << "no op case exercises " << graph::op_name(op);
  }
}

TEST(BackendOpsMeta, CaseNamesAreUniqueAndValid) {
  std::set<std::string> names;
  for (const OpCase& oc : all_op_cases()) {
    EXPECT_TRUE(names.insert(oc.name).second) << "duplicate case " << oc.name;
    for (char ch : oc.name) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') << oc.name;
  }
}

// Prints which ops each backend supports (over the nodes of every case) and flags those it declines.
// Declining is allowed (the runtime places the node elsewhere, visibly); the reference must support all.
TEST(BackendOpsMeta, SupportMatrix) {
  std::vector<std::string> names = backends_under_test();
  std::map<graph::OpKind, std::vector<const graph::Node*>> nodes_by_op;
  std::vector<CaseGraph> graphs;
  graphs.reserve(all_op_cases().size());
  for (const OpCase& oc : all_op_cases()) graphs.push_back(oc.build());
  for (const CaseGraph& c : graphs) {
    for (const auto& n : c.graph.nodes()) nodes_by_op[n->op].push_back(n.get());
  }
  std::printf("%-20s", "op");
  for (const auto& b : names) std::printf(" %-12s", b.c_str());
  std::printf("\n");
  for (auto& [op, nodes] : nodes_by_op) {
    std::printf("%-20s", graph::op_name(op));
    for (const auto& b : names) {
      auto backend = runtime::create_backend(b);
      if (!backend.is_ok()) {
        std::printf(" %-12s", "n/a");
        continue;
      }
      size_t yes = 0;
      for (const graph::Node* n : nodes) yes += (*backend)->supports(*n);
      const std::string cell =
          yes == nodes.size() ? "yes" : fmt::format("DECLINES {}/{}", nodes.size() - yes, nodes.size());
      std::printf(" %-12s", cell.c_str());
      if (b == "reference") {
        EXPECT_EQ(yes, nodes.size()) << "reference declines " << graph::op_name(op);
      }
    }
    std::printf("\n");
  }
}

}  // namespace
}  // namespace steadyocr::testing

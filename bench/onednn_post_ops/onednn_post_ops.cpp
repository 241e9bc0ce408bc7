// Which oneDNN post-op chains of eltwise ops come out right: one small matmul per chain, against the same chain
// evaluated here. oneDNN 2.6 (Debian 12) computes chains with two eltwise_linear ops wrongly (linear, clip, linear:
// maximum error 1.3), which is why backends/cpu/fusion.cpp push_linear keeps one per chain (docs/BENCHMARKS.md,
// 2026-12-06). A measuring tool, never linked into steadyocr: build/so_onednn_post_ops prints one line per chain.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

namespace {

struct Op {
  dnnl::algorithm alg;
  float alpha, beta;
};

float apply(const Op& op, float x) {
  switch (op.alg) {
    case dnnl::algorithm::eltwise_linear:
      return op.alpha * x + op.beta;
    case dnnl::algorithm::eltwise_clip:
      return std::min(std::max(x, op.alpha), op.beta);
    case dnnl::algorithm::eltwise_relu:
      return x > 0.f ? x : 0.f;
    case dnnl::algorithm::eltwise_hardswish:
      return x * std::min(std::max(x / 6.f + 0.5f, 0.f), 1.f);
    default:
      return NAN;
  }
}

}  // namespace

int main() {
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  constexpr int kM = 16, kK = 8, kN = 8;
  std::vector<float> a(kM * kK), b(kK * kN), c(kM * kN);
  for (int i = 0; i < kM * kK; ++i) a[i] = static_cast<float>((i * 37) % 17 - 8) * 0.25f;
  for (int i = 0; i < kK * kN; ++i) b[i] = static_cast<float>((i * 13) % 11 - 5) * 0.2f;
  const memory::desc ad({kM, kK}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc bd({kK, kN}, memory::data_type::f32, memory::format_tag::ab);
  const memory::desc cd({kM, kN}, memory::data_type::f32, memory::format_tag::ab);
  const Op lin{dnnl::algorithm::eltwise_linear, 0.2f, 0.5f}, lin2{dnnl::algorithm::eltwise_linear, 2.f, 0.f};
  const Op clip{dnnl::algorithm::eltwise_clip, 0.f, 1.f}, relu{dnnl::algorithm::eltwise_relu, 0.f, 0.f};
  const Op hswish{dnnl::algorithm::eltwise_hardswish, 0.f, 0.f};
  const std::vector<std::pair<const char*, std::vector<Op>>> chains = {
      {"linear, clip, linear", {lin, clip, lin2}},
      {"linear, relu, linear", {lin, relu, lin2}},
      {"linear, hardswish, linear", {lin, hswish, lin2}},
      {"clip, linear", {clip, lin2}},
      {"linear, clip", {lin, clip}},
      {"clip, linear, clip", {clip, lin, clip}}};
  for (const auto& [name, ops] : chains) {
    dnnl::post_ops po;
    for (const Op& op : ops) po.append_eltwise(1.f, op.alg, op.alpha, op.beta);
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr, eng);
    memory am(ad, eng, a.data()), bm(bd, eng, b.data()), cm(cd, eng, c.data());
    dnnl::matmul(pd).execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    s.wait();
    double err = 0;
    for (int i = 0; i < kM; ++i) {
      for (int j = 0; j < kN; ++j) {
        float v = 0.f;
        for (int k = 0; k < kK; ++k) v += a[i * kK + k] * b[k * kN + j];
        for (const Op& op : ops) v = apply(op, v);
        err = std::max(err, static_cast<double>(std::fabs(v - c[i * kN + j])));
      }
    }
    std::printf("%-28s max error %g (%s)\n", name, err, pd.impl_info_str());
  }
  return 0;
}

#include "backends/cuda/precision.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "backends/cuda/check.h"
#include "backends/cuda/kernels/kernels.h"
#include "backends/cuda/plan_builder.h"
#include "backends/cuda/prepared_graph.h"
#include "core/compare.h"
#include "core/log.h"

namespace steadyocr::cuda {
namespace {

constexpr double kPeakLimit = 16384.0;  // 4x headroom below fp16's largest finite value
constexpr double kOutputNmse = 3e-4;
// Or, for outputs read against thresholds (probabilities): the largest difference within this share of
// max(1, peak). NMSE alone fails a saturated probability map whose values are all near 0.
constexpr double kOutputMaxDiff = 2e-3;
constexpr double kLayerNmse = 1e-4;
constexpr double kAmplification = 50.0;
constexpr int kRounds = 4;

struct ValueStats {
  double nmse = 0, peak = 0, non_finite = 0, max_diff = 0;
};

Status run_keep_all(const Plan& plan, ExecContext ctx, const std::vector<Tensor>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    const DevTensor& t = plan.inputs[i];
    SO_GPU_CHECK(
        cudaMemcpyAsync(plan.bindings.ptr(t.ref), inputs[i].raw(), t.nbytes(), cudaMemcpyHostToDevice, ctx.stream));
  }
  ctx.workspace = plan.bindings.ptr(plan.workspace);
  ctx.workspace_bytes = plan.workspace_bytes;
  return enqueue_plan(plan, ctx);
}

// Statistics of every float value of `low` against the same value in `ref`.
Result<std::map<std::string, ValueStats>> compare_values(CudaDevice& dev, const Plan& low, const Plan& ref,
                                                         cudaStream_t stream) {
  std::vector<std::string> names;
  for (const auto& [name, t] : low.values) {
    auto it = ref.values.find(name);
    if (it == ref.values.end() || t.numel() != it->second.numel()) continue;
    if ((t.dtype != DType::kF32 && t.dtype != DType::kF16) || it->second.dtype != DType::kF32) continue;
    names.push_back(name);
  }
  ASSIGN_OR_RETURN(DeviceMemoryPtr acc, dev.pool()->allocate(names.size() * 5 * sizeof(double), "calibration"));
  SO_GPU_CHECK(cudaMemsetAsync(acc->ptr, 0, names.size() * 5 * sizeof(double), stream));
  for (size_t i = 0; i < names.size(); ++i) {
    const DevTensor& a = low.values.at(names[i]);
    const DevTensor& r = ref.values.at(names[i]);
    SO_GPU_CHECK(k::launch_value_stats(low.bindings.ptr(a.ref), to_kdt(a.dtype), ref.bindings.ptr(r.ref),
                                       to_kdt(r.dtype), a.numel(), static_cast<double*>(acc->ptr) + 5 * i, stream));
  }
  std::vector<double> host(names.size() * 5);
  SO_GPU_CHECK(cudaMemcpyAsync(host.data(), acc->ptr, host.size() * sizeof(double), cudaMemcpyDeviceToHost, stream));
  SO_GPU_CHECK(cudaStreamSynchronize(stream));
  std::map<std::string, ValueStats> out;
  for (size_t i = 0; i < names.size(); ++i) {
    ValueStats s;
    const double* h = &host[5 * i];
    s.nmse = nmse_from_sums(h[1], h[0]);
    s.peak = h[2];
    s.non_finite = h[3];
    s.max_diff = h[4];
    out[names[i]] = s;
  }
  return out;
}

}  // namespace

Result<CalibrationResult> calibrate_precision(CudaDevice& dev, cudnnHandle_t cudnn, const ExecContext& ctx,
                                              const graph::Graph& g, const std::vector<Tensor>& inputs,
                                              const std::set<std::string>& start, const PlanOptions& base) {
  PlanOptions o32 = base;
  o32.precision = Precision::kF32;
  o32.force_f32.clear();
  o32.keep_all = true;
  ASSIGN_OR_RETURN(std::unique_ptr<Plan> ref, PlanBuilder(dev, cudnn, g, o32).build());
  RETURN_IF_ERROR(run_keep_all(*ref, ctx, inputs));

  CalibrationResult res;
  res.f32_nodes = start;
  std::vector<std::string> reasons;
  for (int round = 0; round < kRounds; ++round) {
    PlanOptions o16 = base;
    o16.precision = Precision::kF16;
    o16.keep_all = true;
    o16.force_f32 = res.f32_nodes;
    ASSIGN_OR_RETURN(std::unique_ptr<Plan> low, PlanBuilder(dev, cudnn, g, o16).build());
    RETURN_IF_ERROR(run_keep_all(*low, ctx, inputs));
    ASSIGN_OR_RETURN(auto stats, compare_values(dev, *low, *ref, ctx.stream));
    double out_nmse = 0, out_diff = 0;
    bool out_bad = false;
    for (const graph::Value* v : g.outputs()) {
      auto it = stats.find(v->name);
      if (it == stats.end()) continue;
      const ValueStats& s = it->second;
      const bool close = s.nmse <= kOutputNmse || s.max_diff <= kOutputMaxDiff * std::max(1.0, s.peak);
      out_nmse = std::max(out_nmse, s.nmse);
      out_diff = std::max(out_diff, s.max_diff);
      out_bad = out_bad || s.non_finite > 0 || !close;
    }
    res.output_nmse = out_nmse;
    // Per node: the error it adds (its output's error against the worst of its inputs'). Range problems always
    // move a node to fp32; error growth only matters while the output misses the bar.
    const bool out_ok = !out_bad;
    std::vector<std::pair<double, std::string>> amplifiers;
    std::set<std::string> hard, soft;
    std::vector<std::string> hard_why, soft_why;
    for (const auto& n : g.nodes()) {
      auto f16 = low->node_is_f16.find(n->name);
      if (f16 == low->node_is_f16.end() || !f16->second) continue;
      double in_err = 1e-7;
      for (const graph::Value* v : n->inputs) {
        if (!v || v->is_constant()) continue;
        auto it = stats.find(v->name);
        if (it != stats.end()) in_err = std::max(in_err, it->second.nmse);
      }
      for (const graph::Value* v : n->outputs) {
        auto it = stats.find(v ? v->name : "");
        if (it == stats.end()) continue;
        const ValueStats& s = it->second;
        const double gain = s.nmse / in_err;
        if (s.non_finite > 0 || s.peak > kPeakLimit) {
          hard.insert(n->name);
          hard_why.push_back(fmt::format("{} (peak {:.3g}{})", n->name, s.peak, s.non_finite ? ", non-finite" : ""));
        } else if (s.nmse > kLayerNmse && gain > kAmplification) {
          soft.insert(n->name);
          soft_why.push_back(fmt::format("{} (error x{:.0f} to {:.2g})", n->name, gain, s.nmse));
        } else {
          amplifiers.push_back({gain, n->name});
        }
      }
    }
    if (hard.empty() && out_ok) {
      res.f16_nodes = 0;
      for (const auto& [name, f16] : low->node_is_f16) res.f16_nodes += f16 ? 1 : 0;
      res.summary = fmt::format("{} nodes in fp16, {} kept in fp32{}{}; output vs fp32: NMSE {:.2g}, max diff {:.2g}",
                                res.f16_nodes, res.f32_nodes.size(),
                                reasons.empty() ? "" : " (moved: ", fmt::join(reasons, ", "), out_nmse, out_diff);
      if (!reasons.empty()) res.summary += ")";
      return res;
    }
    std::set<std::string> demote = hard;
    reasons.insert(reasons.end(), hard_why.begin(), hard_why.end());
    if (!out_ok) {
      demote.insert(soft.begin(), soft.end());
      reasons.insert(reasons.end(), soft_why.begin(), soft_why.end());
      if (demote.empty()) {
        // Output still off with no clear culprit: take the three nodes that add the most error.
        std::sort(amplifiers.rbegin(), amplifiers.rend());
        for (size_t i = 0; i < amplifiers.size() && i < 3; ++i) {
          demote.insert(amplifiers[i].second);
          reasons.push_back(fmt::format("{} (error x{:.0f})", amplifiers[i].second, amplifiers[i].first));
        }
      }
    }
    if (demote.empty()) break;
    res.f32_nodes.insert(demote.begin(), demote.end());
  }
  // No reduced-precision plan met the bar: keep every node in fp32 and say so.
  res.all_f32 = true;
  res.f16_nodes = 0;
  for (const auto& n : g.nodes()) res.f32_nodes.insert(n->name);
  res.summary = fmt::format(
      "reduced precision missed the bar (output NMSE {:.2g} > {:.0e}, and values off by more "
      "than 2e-3 of their range); the model runs in fp32",
      res.output_nmse, kOutputNmse);
  log::warn("cuda", "{}", res.summary);
  return res;
}

}  // namespace steadyocr::cuda

#include "backends/cpu/cpu_backend.h"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>

#include "backends/cpu/ops.h"
#include "backends/cpu/plan.h"
#include "backends/cpu/symbolic_plan.h"
#include "backends/cpu/weight_cache.h"
#include "core/log.h"
#include "core/parallel.h"

namespace steadyocr {
namespace cpu {

namespace {

const char* isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "SSE4.1";
    case dnnl::cpu_isa::avx:
      return "AVX";
    case dnnl::cpu_isa::avx2:
      return "AVX2";
    case dnnl::cpu_isa::avx2_vnni:
      return "AVX2-VNNI";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX-512 VNNI";
    case dnnl::cpu_isa::avx512_core_bf16:
      return "AVX-512 BF16";
    case dnnl::cpu_isa::avx512_core_amx:
      return "AVX-512 AMX";
    default:
      return "x86-64";
  }
}

std::string cpu_model_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "CPU";
}

class CpuBackend : public Backend {
 public:
  CpuBackend() : weights_(size_t{512} << 20), pool_(std::make_shared<ArenaPool>()) {
    // No VTune/ITT bookkeeping per JIT kernel and per primitive run unless the user asks for it (it costs
    // ~10% of planning a new shape).
    setenv("DNNL_ITT_TASK_LEVEL", "0", 0);
    if (!std::getenv("DNNL_JIT_PROFILE") && !std::getenv("ONEDNN_JIT_PROFILE")) {
      (void)dnnl_try("turning off JIT profiling", [] { dnnl::set_jit_profiling_flags(0); });
    }
    // A bounded primitive cache (plans hold their own primitives; this only speeds up re-planning).
    if (!std::getenv("ONEDNN_PRIMITIVE_CACHE_CAPACITY") && !std::getenv("DNNL_PRIMITIVE_CACHE_CAPACITY")) {
      (void)dnnl_try("setting the primitive cache capacity", [] { dnnl::set_primitive_cache_capacity(256); });
    }
  }

  std::string name() const override { return "cpu"; }

  DeviceInfo device_info() const override {
    DeviceInfo d;
    d.backend = "cpu";
    dnnl::cpu_isa isa = dnnl::cpu_isa::all;
    (void)dnnl_try("querying the ISA", [&] { isa = dnnl::get_effective_cpu_isa(); });
    d.name = fmt::format("{} ({}, {} threads)", cpu_model_name(), isa_name(isa), num_threads());
    const dnnl_version_t* v = dnnl::version();
    d.libraries["onednn"] = fmt::format("{}.{}.{} (OpenMP runtime)", v->major, v->minor, v->patch);
    return d;
  }

  bool supports(const graph::Node& node) const override { return cpu_supports(node, nullptr); }

  Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) override {
    for (const auto& n : graph.nodes()) {
      std::string why;
      if (!cpu_supports(*n, &why)) return unsupported(fmt::format("{}: {}", n->describe(), why));
    }
    auto plan = CpuPlan::build(graph, weights_, pool_);
    if (!plan.is_ok()) return plan.status();
    return std::unique_ptr<PreparedGraph>(std::move(plan).value());
  }

  Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) override {
    auto plan = SymbolicPlan::build(graph, pool_);
    if (!plan.is_ok()) return plan.status();
    return std::unique_ptr<PreparedGraph>(std::move(plan).value());
  }

 private:
  WeightCache weights_;
  std::shared_ptr<ArenaPool> pool_;
};

}  // namespace
}  // namespace cpu

std::unique_ptr<Backend> make_cpu_backend() {
  return std::make_unique<cpu::CpuBackend>();
}

}  // namespace steadyocr

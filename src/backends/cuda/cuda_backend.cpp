#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/cudnn_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <functional>

#include "backends/cuda/check.h"
#include "backends/cuda/prepared_graph.h"
#include "backends/cuda/symbolic_plan.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::cuda {
namespace {

std::string library_of(const void* symbol) {
  Dl_info info;
  if (symbol && dladdr(symbol, &info) && info.dli_fname) return info.dli_fname;
  return "";
}

}  // namespace

std::string model_role(const graph::Graph& g) {
  if (g.outputs().size() != 1 || !g.outputs()[0]) return "model";
  const Shape& s = g.outputs()[0]->shape;
  if (s.size() == 4 && s[1] == 1) return "det";
  if (s.size() == 3) return "rec";
  if (s.size() == 2) return "cls";
  return "model";
}

std::string model_signature(const graph::Graph& g) {
  std::string text = model_role(g);
  for (const auto& n : g.nodes()) {
    text += '|';
    text += n->name;
    text += ':';
    text += graph::op_name(n->op);
  }
  return fmt::format("{}:{}:{:016x}", model_role(g), g.nodes().size(), std::hash<std::string>{}(text));
}

Result<std::unique_ptr<CudaBackend>> CudaBackend::create(const BackendConfig& config) {
  auto st = std::make_shared<BackendState>();
  const std::string& precision = config.precision;
  if (precision == "fp32") {
    st->precision = Precision::kF32;
  } else if (precision == "fp16") {
    st->precision = Precision::kF16;
  } else {
    return invalid_argument(fmt::format("CUDA precision '{}' is not one of fp32, fp16", precision));
  }
  st->name = "cuda-" + precision + (config.cudnn ? "" : "-nocudnn");
  st->use_graphs = config.cuda_graphs;
  st->graph_arenas = std::max(1, config.graph_arenas);
  st->calibrate = config.calibrate;
  st->debug_sync = config.debug_sync;
  st->own_conv = config.own_conv;
  st->own_arenas = config.own_arenas;
  st->profile_ops = std::max(0, config.profile_ops);
  st->cudnn = config.cudnn;
  if (st->cudnn && !cudnn_load().usable) {
    // Never a silent switch to the slower path: the host's ladder steps to a -nocudnn rung, visibly.
    const CudnnLoad& l = cudnn_load();
    return Status(
        StatusCode::kUnavailable,
        fmt::format("{} needs cuDNN: {}; the -nocudnn backends run every convolution without it", st->name, l.error),
        {l.finding, l.error,
         fmt::format("install cuDNN {} for CUDA {}, or run --backend cuda-{}-nocudnn", CUDNN_MAJOR,
                     CUDART_VERSION / 1000, precision)});
  }
  const int device = config.device;
  const size_t mem_budget_bytes = config.memory_budget_bytes;
  int count = 0;
  SO_GPU_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count) {
    return invalid_argument(fmt::format("CUDA device {} does not exist ({} visible)", device, count));
  }
  SO_GPU_CHECK(cudaSetDevice(device));
  SO_GPU_CHECK(cudaFree(nullptr));  // creates the context now, so failures surface here
  st->device = std::make_shared<CudaDevice>(device, mem_budget_bytes, static_cast<size_t>(config.cudnn_handles));
  st->device->set_sync_wait(config.sync_wait);
  // A server that will run N requests at once asks for its lanes and some mapped memory at startup (the worker
  // passes config.lanes): creating them on the first requests serialises those requests on the driver's and
  // cuDNN's locks.
  if (config.lanes > 0) {
    const int n = std::min(config.lanes, 256);
    // Fewer lanes only cost speed: the first runs make the missing ones.
    if (Status s = st->device->reserve_lanes(n); !s.is_ok()) {
      log::warn("cuda", "could not prepare {} execution lanes at start ({}); runs create them as needed", n,
                s.to_string());
    }
    if (st->cudnn) {
      if (Status s = st->device->reserve_cudnn(); !s.is_ok()) {
        log::warn("cuda", "could not make the cuDNN handles at start ({}); runs make them as needed", s.to_string());
      }
    }
    size_t warm = size_t{2} << 30;
    if (mem_budget_bytes > 0) warm = std::min(warm, mem_budget_bytes / 2);
    st->device->pool()->prewarm(warm);
  }
  std::unique_ptr<CudaBackend> b(new CudaBackend(st));

  cudaDeviceProp prop{};
  SO_GPU_CHECK(cudaGetDeviceProperties(&prop, device));
  DeviceInfo& di = b->info_;
  di.backend = "cuda";
  di.name = prop.name;
  di.memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
  di.compute_capability = fmt::format("{}.{}", prop.major, prop.minor);
  int drv = 0, rt = 0;
  SO_GPU_CHECK(cudaDriverGetVersion(&drv));
  SO_GPU_CHECK(cudaRuntimeGetVersion(&rt));
  di.driver_version = fmt::format("CUDA {}.{}", drv / 1000, (drv % 1000) / 10);
  di.libraries["cudart"] = fmt::format("{}.{} (static)", rt / 1000, (rt % 1000) / 10);
  di.libraries["cudnn"] = cudnn_description();
  int maj = 0, min = 0, pat = 0;
  SO_GPU_CHECK(cublasGetProperty(MAJOR_VERSION, &maj));
  SO_GPU_CHECK(cublasGetProperty(MINOR_VERSION, &min));
  SO_GPU_CHECK(cublasGetProperty(PATCH_LEVEL, &pat));
  di.libraries["cublas"] =
      fmt::format("{}.{}.{} ({})", maj, min, pat, library_of(reinterpret_cast<const void*>(&cublasGetProperty)));
  if (!st->cudnn) di.libraries["convolutions"] = "without cuDNN (im2col/col2im + cuBLAS)";
  if (mem_budget_bytes) di.libraries["memory_budget"] = fmt::format("{} MiB", mem_budget_bytes >> 20);
  log::info("cuda", "{} on {} (cc {}, {} MiB), cuDNN {}{}, cuBLAS {}.{}.{}{}", st->name, di.name, di.compute_capability,
            di.memory_bytes >> 20, di.libraries["cudnn"],
            st->cudnn ? "" : " (not used for convolutions: a -nocudnn backend or STEADYOCR_CUDA_CUDNN=0)", maj, min,
            pat, mem_budget_bytes ? fmt::format(", budget {} MiB", mem_budget_bytes >> 20) : "");
  return b;
}

DeviceInfo CudaBackend::device_info() const {
  return info_;
}

bool CudaBackend::supports(const graph::Node& node) const {
  return op_supported(node, nullptr);
}

Result<std::unique_ptr<PreparedGraph>> CudaBackend::prepare(const graph::Graph& graph) {
  if (device_lost()) {
    GpuErrorRecord r = first_sticky_error();
    return Status(
        StatusCode::kDeviceFault,
        fmt::format("the CUDA context was lost earlier ({} in '{}'); restart the process", r.name, r.expression));
  }
  Stopwatch sw;
  const std::string role = model_role(graph);
  auto pg = CudaPreparedGraph::create(state_, graph);
  if (!pg.is_ok()) return pg.status();
  // The first request of a new shape bucket: planned once (algorithms, arena, later a CUDA graph), then reused.
  metrics::inc("steadyocr_cuda_buckets_planned_total", {{"model", role}, {"backend", state_->name}});
  metrics::inc("steadyocr_cuda_plan_ms_total", {{"model", role}, {"backend", state_->name}}, sw.elapsed_ms());
  log::debug("cuda", "{}: planned {} for {} in {:.1f} ms ({} KiB arena)", state_->name, role,
             graph.inputs().empty() ? "?" : shape_str(graph.inputs()[0]->shape), sw.elapsed_ms(),
             (*pg)->workspace_bytes() >> 10);
  return pg;
}

Result<std::unique_ptr<PreparedGraph>> CudaBackend::prepare_symbolic(const graph::Graph& graph) {
  Stopwatch sw;
  ASSIGN_OR_RETURN(std::unique_ptr<CudaSymbolicPlan> plan, CudaSymbolicPlan::create(state_, graph));
  log::debug("cuda", "{}: one plan for every input shape of {} ({} nodes) in {:.1f} ms", state_->name,
             model_role(graph), graph.nodes().size(), sw.elapsed_ms());
  return std::unique_ptr<PreparedGraph>(std::move(plan));
}

}  // namespace steadyocr::cuda

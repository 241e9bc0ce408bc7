// What a CUDA backend is created with. The host fills it (runtime/cuda_plugin.cpp: from its caller, plus the
// documented environment overrides read once there) and it crosses the plugin boundary as SoBackendConfig; the
// plugin reads no environment variable. Plain C++ without CUDA, so the host includes it.
#pragma once

#include <cstddef>
#include <cstring>
#include <string>

#include "backends/cuda/plugin_api.h"

namespace steadyocr::cuda {

// How a run's thread waits for its stream to finish (STEADYOCR_CUDA_SYNC=auto|spin|block). Spinning
// (cudaStreamSynchronize under the runtime's default schedule with one context) sees the end a few microseconds
// sooner but holds a core for the whole wait; blocking sleeps on an event until the device signals it. With many
// images in flight the spinning waits took the cores their host stages (decode, crops, resizes) needed. auto: a run
// spins while no other run of the device waits, and blocks while one does.
enum class SyncWait { kAuto = 0, kSpin = 1, kBlock = 2 };

inline const char* sync_wait_name(SyncWait w) {
  return w == SyncWait::kSpin ? "spin" : w == SyncWait::kBlock ? "block" : "auto";
}
// "auto|spin|block"; false on anything else.
inline bool parse_sync_wait(const char* s, SyncWait* out) {
  for (SyncWait w : {SyncWait::kAuto, SyncWait::kSpin, SyncWait::kBlock}) {
    if (s && std::strcmp(s, sync_wait_name(w)) == 0) {
      *out = w;
      return true;
    }
  }
  return false;
}

struct BackendConfig {
  std::string precision = "fp32";  // "fp32" or "fp16" (reduced precision chosen per layer)
  size_t memory_budget_bytes = 0;  // 0 = no budget
  int device = 0;                  // CUDA device index
  // Execution lanes (stream + cuDNN/cuBLAS handles + events) made at creation, with some device memory mapped
  // ahead: a server running N requests at once asks for N so its first requests do not create them one by one
  // under the driver's and cuDNN's locks. 0 = the first runs make them.
  int lanes = 0;
  bool debug_sync = false;  // synchronise and check after every step, so an asynchronous fault names its step
  bool own_conv = true;     // depthwise and pointwise convolutions on own kernels / cuBLAS (false: all on cuDNN)
  bool cuda_graphs = true;  // replay shape buckets seen twice as CUDA graphs
  bool calibrate = true;    // fp16: verify the per-layer precision on the first real input of each model
  // false: no convolution goes to cuDNN: regular ones as im2col + cuBLAS GEMM, transposed ones as cuBLAS GEMM +
  // col2im, depthwise and pointwise ones as with own_conv (STEADYOCR_CUDA_CUDNN=0).
  bool cudnn = true;
  std::string fault_spec;  // faults to arm in the plugin at creation (docs/FAULTS.md); "" = none
  // true: each plan keeps an activation arena of its own, held while the plan is cached (the layout before
  // 2026-12-02, STEADYOCR_CUDA_ARENAS=per-plan, for comparison); false: runs lease arenas from the device.
  bool own_arenas = false;
  // > 0: every run is enqueued step by step (no CUDA graph) with a device event after each step, and each plan logs
  // where its device time goes, per op kind and slowest steps, every that many runs (STEADYOCR_CUDA_PROFILE_OPS=N).
  // For finding the next lever; it costs the graph replay and an event per step.
  int profile_ops = 0;
  // cuDNN handles the device makes at most (about 9 MiB of device memory each on the H200): runs lease one while they
  // enqueue eagerly, capture or plan, not while a CUDA graph replays (STEADYOCR_CUDA_CUDNN_HANDLES=N). On the H200
  // with 16 images in flight 4, 8 and 32 ran within 1 % of each other (docs/BENCHMARKS.md).
  int cudnn_handles = 8;
  SyncWait sync_wait = SyncWait::kAuto;  // how runs wait for their stream (above)
  // CUDA graphs a plan instance keeps, one per activation arena it ran on (a graph replays only on the arena it was
  // captured on; graph_policy.h). With many runs in flight the arena a run leases keeps changing, and with one graph
  // per instance about 70 % of the runs went eagerly (2026-12-06, docs/BENCHMARKS.md). More per instance is
  // STEADYOCR_CUDA_GRAPH_ARENAS=N; the default stays 1 (the layout measured so far) until N > 1 is measured on a GPU.
  int graph_arenas = kDefaultGraphArenas;
  static constexpr int kDefaultGraphArenas = 1;
};

// The C form of `c`; its strings point into `c`, which must outlive the result.
inline SoBackendConfig to_abi(const BackendConfig& c) {
  SoBackendConfig a{};
  a.struct_size = sizeof(SoBackendConfig);
  a.precision = c.precision.c_str();
  a.memory_budget_bytes = c.memory_budget_bytes;
  a.device = c.device;
  a.lanes = c.lanes;
  a.debug_sync = c.debug_sync ? 1 : 0;
  a.own_conv = c.own_conv ? 1 : 0;
  a.cuda_graphs = c.cuda_graphs ? 1 : 0;
  a.calibrate = c.calibrate ? 1 : 0;
  a.fault_spec = c.fault_spec.c_str();
  a.cudnn = c.cudnn ? 1 : 0;
  a.own_arenas = c.own_arenas ? 1 : 0;
  a.profile_ops = c.profile_ops;
  a.cudnn_handles = c.cudnn_handles;
  a.sync_wait = static_cast<int>(c.sync_wait);
  a.graph_arenas = c.graph_arenas;
  return a;
}

inline BackendConfig from_abi(const SoBackendConfig& a) {
  BackendConfig c;
  c.precision = a.precision ? a.precision : "fp32";
  c.memory_budget_bytes = a.memory_budget_bytes;
  c.device = a.device;
  c.lanes = a.lanes;
  c.debug_sync = a.debug_sync != 0;
  c.own_conv = a.own_conv != 0;
  c.cuda_graphs = a.cuda_graphs != 0;
  c.calibrate = a.calibrate != 0;
  c.fault_spec = a.fault_spec ? a.fault_spec : "";
  c.cudnn = a.cudnn != 0;
  c.own_arenas = a.own_arenas != 0;
  c.profile_ops = a.profile_ops;
  c.cudnn_handles = a.cudnn_handles > 0 ? a.cudnn_handles : 8;
  c.sync_wait = a.sync_wait == 1 ? SyncWait::kSpin : a.sync_wait == 2 ? SyncWait::kBlock : SyncWait::kAuto;
  c.graph_arenas = a.graph_arenas > 0 ? a.graph_arenas : BackendConfig::kDefaultGraphArenas;
  return c;
}

}  // namespace steadyocr::cuda

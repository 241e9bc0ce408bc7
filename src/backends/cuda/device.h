// Per-device state shared by every plan of one backend: the memory pool (with the configured budget), the weight
// cache, the pool of execution lanes and the convolution algorithm cache. All of it is thread-safe.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backends/cuda/backend_config.h"
#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::cuda {

class DevicePool;

// A device allocation owned by whoever holds the shared_ptr; freed back to the pool's cache.
struct DeviceMemory {
  void* ptr = nullptr;
  size_t bytes = 0;
  std::shared_ptr<DevicePool> pool;
  ~DeviceMemory();
};
using DeviceMemoryPtr = std::shared_ptr<DeviceMemory>;

// Device memory with a budget. Blocks freed by plans stay cached for the next plan of a similar size, so
// switching between buckets does not call cudaMalloc/cudaFree (which synchronise the device) in steady state.
class DevicePool : public std::enable_shared_from_this<DevicePool> {
 public:
  DevicePool(int device, size_t budget_bytes);
  ~DevicePool();
  // Allocates at least `bytes` (rounded up); `what` names the use in errors. Fails with kResourceExhausted when
  // the budget would be exceeded and kOutOfMemory when the device has no memory left.
  Result<DeviceMemoryPtr> allocate(size_t bytes, const std::string& what);
  // Frees every cached block (e.g. before retrying after an out-of-memory error).
  void trim();
  size_t budget() const { return budget_; }
  size_t in_use() const;
  size_t reserved() const;  // in use + cached
  // Grows the driver's memory pool behind this one by `bytes` now (allocated and freed at once, kept reserved), so
  // that the first plans of a run do not each wait for the driver to map memory.
  void prewarm(size_t bytes);
  // Called (outside the pool's lock) when an allocation would exceed the budget: frees memory its owner keeps for
  // later and says whether it freed any; the allocation is then tried once more.
  void set_reclaimer(std::function<bool()> reclaim);

 private:
  friend struct DeviceMemory;
  void give_back(void* ptr, size_t bytes);
  void publish_locked();
  Result<DeviceMemoryPtr> allocate_once(size_t bytes, const std::string& what);
  cudaError_t device_malloc(void** p, size_t bytes);
  void device_free(void* p);

  int device_;
  // Stream-ordered allocation from the device's default memory pool (kept reserved, never trimmed by the driver):
  // microseconds instead of cudaMalloc's milliseconds under contention. Null where pools are unsupported.
  cudaStream_t alloc_stream_ = nullptr;
  size_t budget_;     // 0 = none
  size_t cache_cap_;  // cached bytes above this go back to the driver (cudaFree stalls every stream)
  mutable std::mutex mu_;
  std::multimap<size_t, void*> cached_;
  size_t in_use_ = 0, cached_bytes_ = 0;
  size_t mapping_ = 0;               // bytes of the allocations under way outside the lock (counted in in_use_ too)
  size_t device_used_at_start_ = 0;  // total - free on the device when the pool was made (context included)
  std::function<bool()> reclaim_;
};

// Page-locked host memory for uploads/downloads, recycled between plans (cudaHostAlloc costs milliseconds).
struct PinnedBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};
using PinnedPtr = std::shared_ptr<PinnedBuffer>;

class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  ~PinnedPool();
  // A buffer of at least `bytes`; it returns to the pool when the last holder lets go.
  Result<PinnedPtr> get(size_t bytes);

 private:
  void give_back(PinnedBuffer* b);
  std::mutex mu_;
  std::multimap<size_t, void*> free_;
  size_t free_bytes_ = 0;
};

// An execution lane: a stream with its cuBLAS handle bound to it, a cuBLAS workspace and timing events. Leased for
// one run (or one plan build) at a time and pooled by the device: creating them costs tens of ms under contention, so
// they are never made per shape. As many exist as runs were ever in flight at once. cuDNN handles are not the lane's:
// each holds about 9 MiB of device memory (H200, cuDNN 9.14), and a run needs one only while it enqueues eagerly,
// captures or plans (CudnnLease), not while a CUDA graph replays.
struct Lane {
  cublasHandle_t cublas = nullptr;
  DeviceMemoryPtr cublas_workspace;
  cudaStream_t stream = nullptr;
  cudaEvent_t events[4] = {nullptr, nullptr, nullptr, nullptr};  // before h2d, compute, d2h, and after d2h
  cudaEvent_t done = nullptr;  // blocking-sync event a run waits on when it does not spin (SyncWait)
};

class CudaDevice;

// A cuDNN handle leased from the device's few (CudaDevice::lease_cudnn), bound to the leaser's stream; it goes back
// when the lease ends. Empty (null) where cuDNN is not loaded.
class CudnnLease {
 public:
  CudnnLease() = default;
  CudnnLease(CudaDevice* device, cudnnHandle_t handle) : device_(device), handle_(handle) {}
  CudnnLease(CudnnLease&& o) noexcept : device_(o.device_), handle_(o.handle_) { o.handle_ = nullptr; }
  CudnnLease& operator=(CudnnLease&& o) noexcept;
  CudnnLease(const CudnnLease&) = delete;
  CudnnLease& operator=(const CudnnLease&) = delete;
  ~CudnnLease();
  cudnnHandle_t get() const { return handle_; }

 private:
  CudaDevice* device_ = nullptr;
  cudnnHandle_t handle_ = nullptr;
};

// Algorithm choice per convolution shape, made once (heuristics, no timing) and reused by every later plan.
struct ConvAlgoKey {
  std::string text;  // canonical description of the problem (shapes, strides, dtype, direction)
  bool operator<(const ConvAlgoKey& o) const { return text < o.text; }
};
struct ConvAlgoChoice {
  int algo = 0;
  int math_type = 0;
  size_t workspace = 0;
};

// An activation arena leased for one run: plans keep only their layout and bind to the arena their run leases, so
// device memory follows the runs in flight, not the shapes planned. `id` is unique per arena (a plan bound to it,
// and its CUDA graphs, stay valid while it lives).
struct Arena {
  DeviceMemoryPtr mem;
  uint64_t id = 0;
};

class CudaDevice {
 public:
  CudaDevice(int device, size_t budget_bytes, size_t cudnn_handles = 8);
  ~CudaDevice();
  int index() const { return device_; }
  const std::shared_ptr<DevicePool>& pool() const { return pool_; }
  const std::shared_ptr<PinnedPool>& pinned() const { return pinned_; }

  // The device copy of `t` converted to `dt` (f32 or f16 for floating tensors), shared between plans with the
  // same content (the passes produce equal folded weights for every shape bucket). A tensor whose storage was seen
  // before (every plan of a model shares its graph's constants) is found without hashing its bytes.
  Result<DeviceMemoryPtr> weight(const Tensor& t, DType dt);
  Result<DeviceMemoryPtr> weight_floats(const std::vector<float>& v);

  // Leases a lane (a free one, else a new one); give it back with release_lane, or discard_lane when its state is
  // no longer the pool's (a cuBLAS workspace that could not be restored). Under the memory budget, a new lane that
  // does not fit waits up to `wait_ms` for a run to give one back (the free arenas give their memory back first).
  Result<Lane> acquire_lane(int wait_ms = 30000);
  void release_lane(Lane lane);
  void discard_lane(Lane lane);
  // Frees the activation arenas no run holds; true when there were any (the pool's reclaimer under a budget).
  bool free_idle_arenas();
  // Creates lanes up to `n` now (startup), so that concurrent first runs do not create them on the request's time.
  Status reserve_lanes(int n);
  // A cuDNN handle bound to `stream`, for one eager enqueue, capture or plan build: a free one, a new one while fewer
  // than cudnn_handle_cap() exist, else the next given back. Empty where cuDNN is not loaded.
  Result<CudnnLease> lease_cudnn(cudaStream_t stream, int wait_ms = 30000);
  void return_cudnn(cudnnHandle_t handle);
  // Makes the cuDNN handles up to the cap now (startup, with the lanes), so that the device memory they hold is there
  // from the start instead of growing as concurrent runs first need them.
  Status reserve_cudnn();
  // How many cuDNN handles the device makes at most (BackendConfig::cudnn_handles).
  size_t cudnn_handle_cap() const { return cudnn_cap_; }

  // An arena of at least `bytes`: the first of `prefer` (the arenas of the caller's CUDA graphs, most wanted first)
  // that is free and large enough, else the smallest free one that is, else a new one of the size class of `bytes`
  // (about a quarter-octave steps; a free arena too small for it is freed first, so arenas never outnumber the runs
  // once in flight together). When the memory budget would be exceeded, the free arenas are freed, then it waits up to
  // `wait_ms` for a run to give an arena back rather than failing at once.
  Result<Arena> acquire_arena(size_t bytes, const std::vector<uint64_t>& prefer, int wait_ms = 30000);
  void release_arena(Arena arena);

  // Waits until everything enqueued on `lane` so far has run, spinning or sleeping as the device's SyncWait says
  // (auto: sleeps while another run of this device is waiting too). Counted per mode
  // (steadyocr_cuda_stream_waits_total, steadyocr_cuda_stream_wait_ms_total).
  Status wait_lane(const Lane& lane);
  void set_sync_wait(SyncWait w) { sync_wait_ = w; }
  SyncWait sync_wait() const { return sync_wait_; }

  // Exact problem first; else the choice made for the same layer at another spatial size (`family`), which the
  // caller verifies with a workspace query before use.
  bool find_algo(const ConvAlgoKey& key, ConvAlgoChoice* out) const;
  bool find_algo_family(const std::string& family, ConvAlgoChoice* out) const;
  void store_algo(const ConvAlgoKey& key, const std::string& family, const ConvAlgoChoice& c);
  // A cuDNN workspace that suffices for a problem of `family` with `algo` at `dims` (N, H, W, OH, OW) without asking
  // cuDNN (whose workspace query costs a new input shape tens of microseconds per convolution): the smallest one an
  // exact query gave for the same layer and algorithm on a problem at least as large in every dim. False when none.
  using ConvDims = std::array<int64_t, 5>;
  bool workspace_bound(const std::string& family, int algo, const ConvDims& dims, size_t* bytes) const;
  // Remembers an exact query's answer (the largest problems of each layer and algorithm are kept).
  void note_workspace(const std::string& family, int algo, const ConvDims& dims, size_t bytes);
  size_t weight_bytes() const;

 private:
  int device_;
  std::shared_ptr<DevicePool> pool_;
  std::shared_ptr<PinnedPool> pinned_ = std::make_shared<PinnedPool>();
  mutable std::mutex mu_;
  std::map<std::string, DeviceMemoryPtr> weights_;
  // The same copies by host storage: (owner, address, bytes, source and target types). Each entry holds the owner,
  // so its address cannot be reused by another tensor while the entry lives; entries only this map still holds are
  // dropped when it has doubled since the last sweep.
  using StorageKey = std::tuple<const void*, const void*, size_t, DType, DType>;
  std::map<StorageKey, std::pair<std::shared_ptr<void>, DeviceMemoryPtr>> weights_by_storage_;
  size_t storage_sweep_at_ = 64;
  size_t weight_bytes_ = 0;
  std::vector<Lane> free_lanes_;
  std::vector<cudnnHandle_t> free_cudnn_;
  size_t cudnn_made_ = 0;
  size_t cudnn_cap_ = 8;
  std::condition_variable cudnn_freed_;
  size_t lanes_out_ = 0;          // lanes held by runs (and by plans building)
  uint64_t lanes_discarded_ = 0;  // wakes runs waiting for a lane: a discarded one frees its budget
  std::condition_variable lane_freed_;
  std::vector<Arena> free_arenas_;
  size_t arenas_ = 0, arena_bytes_ = 0;
  size_t arenas_making_ = 0;  // arenas being allocated now (outside the lock)
  uint64_t next_arena_id_ = 1;
  std::condition_variable arena_freed_;
  SyncWait sync_wait_ = SyncWait::kAuto;
  std::atomic<int> waiting_{0};  // runs in wait_lane now
  std::map<ConvAlgoKey, ConvAlgoChoice> algos_;
  std::map<std::string, ConvAlgoChoice> algo_families_;
  // Exact workspace answers per (layer family, algorithm), none dominated by another (workspace_bound).
  static constexpr size_t kWorkspacePointsKept = 16;
  std::map<std::pair<std::string, int>, std::vector<std::pair<ConvDims, size_t>>> workspace_points_;
};

}  // namespace steadyocr::cuda

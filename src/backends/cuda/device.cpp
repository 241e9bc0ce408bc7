#include "backends/cuda/device.h"
#include "backends/cuda/cudnn_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "backends/cuda/check.h"
#include "core/content_hash.h"
#include "core/half.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::cuda {
namespace {

// Large blocks (arenas) are whole MiB so they fit the next plan of a similar size; small ones (weights) 4 KiB.
constexpr size_t kGranule = 1 << 20;
constexpr size_t kSmallGranule = 4 << 10;
// The driver's stream-ordered pool maps memory in 32 MiB chunks, and a block of 16 MiB or more takes whole chunks of
// its own (H200, CUDA 13.0, driver 580, 2026-12-03: 33 MiB mapped 64, 166 MiB mapped 192). Such blocks are rounded up
// to that here, so that what the pool counts against the budget is what the driver maps, and the block's owner can
// use all of it. Smaller blocks (weights, the lanes' cuBLAS workspaces) share chunks.
constexpr size_t kDriverChunk = size_t{32} << 20;
constexpr size_t kOwnChunkFrom = size_t{16} << 20;
constexpr size_t kMaxCachedBytes = size_t{1} << 30;  // cached blocks above this go back to the driver
constexpr size_t kCublasWorkspace = 4 << 20;

size_t round_up(size_t n, size_t g) {
  return (n + g - 1) / g * g;
}

constexpr size_t kMaxCachedPinned = size_t{512} << 20;

// Releases what a lane holds (any part may be missing when its creation failed half-way).
void destroy_lane(Lane* lane) {
  if (lane->cublas) SO_GPU_TRY(cublasDestroy(lane->cublas));
  for (auto& e : lane->events) {
    if (e) SO_GPU_TRY(cudaEventDestroy(e));
  }
  if (lane->done) SO_GPU_TRY(cudaEventDestroy(lane->done));
  if (lane->stream) SO_GPU_TRY(cudaStreamDestroy(lane->stream));
  *lane = Lane{};
}

}  // namespace

// ---- DevicePool ------------------------------------------------------------------------------------------------

DeviceMemory::~DeviceMemory() {
  if (pool && ptr) pool->give_back(ptr, bytes);
}

DevicePool::DevicePool(int device, size_t budget_bytes) : device_(device), budget_(budget_bytes) {
  // Without a budget, cache up to an eighth of the device (at least 1 GiB): a stream of new shapes (rec widths) keeps
  // retiring and creating plans, and every cudaFree would synchronise the whole device.
  size_t free_bytes = 0, total = 0;
  if (cudaSetDevice(device) != cudaSuccess || cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) {
    (void)cudaGetLastError();
    total = 0;
  }
  device_used_at_start_ = total - free_bytes;
  cache_cap_ = budget_ > 0 ? std::min(kMaxCachedBytes, budget_ / 4) : std::max(kMaxCachedBytes, total / 8);
  int pools = 0;
  if (total > 0 && cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device) == cudaSuccess && pools &&
      cudaStreamCreateWithFlags(&alloc_stream_, cudaStreamNonBlocking) == cudaSuccess) {
    cudaMemPool_t mp = nullptr;
    // Without a budget the driver's pool keeps what it mapped (our cache decides what is used); under one it gives
    // back what is above the budget at the next synchronisation, so the budget bounds what stays mapped too.
    uint64_t keep = budget_ > 0 ? static_cast<uint64_t>(budget_) : UINT64_MAX;
    if (cudaDeviceGetDefaultMemPool(&mp, device) != cudaSuccess ||
        cudaMemPoolSetAttribute(mp, cudaMemPoolAttrReleaseThreshold, &keep) != cudaSuccess) {
      SO_GPU_TRY(cudaStreamDestroy(alloc_stream_));
      alloc_stream_ = nullptr;
    }
  }
  (void)cudaGetLastError();
}

DevicePool::~DevicePool() {
  trim();
  if (alloc_stream_) SO_GPU_TRY(cudaStreamDestroy(alloc_stream_));
}

cudaError_t DevicePool::device_malloc(void** p, size_t bytes) {
  if (!alloc_stream_) return cudaMalloc(p, bytes);
  cudaError_t e = cudaMallocAsync(p, bytes, alloc_stream_);
  if (e == cudaSuccess) e = cudaStreamSynchronize(alloc_stream_);  // usable by every stream from here on
  return e;
}

void DevicePool::device_free(void* p) {
  // Blocks reach here only when no run uses them (runs are synchronous): no wait for other streams is needed.
  if (!alloc_stream_) {
    SO_GPU_TRY(cudaFree(p));
    return;
  }
  if (!SO_GPU_TRY(cudaFreeAsync(p, alloc_stream_)) || !SO_GPU_TRY(cudaStreamSynchronize(alloc_stream_))) return;
  // Under a budget, what the driver's pool keeps mapped beyond it (free chunks of other sizes than the next requests:
  // 704-800 MiB mapped for 640 given out on the H200, 2026-12-03) is unmapped now, not at some later synchronisation.
  if (budget_ > 0) {
    cudaMemPool_t mp = nullptr;
    if (cudaDeviceGetDefaultMemPool(&mp, device_) == cudaSuccess) SO_GPU_TRY(cudaMemPoolTrimTo(mp, budget_));
    (void)cudaGetLastError();
  }
}

void DevicePool::prewarm(size_t bytes) {
  if (!alloc_stream_ || bytes == 0) return;
  void* p = nullptr;
  if (device_malloc(&p, bytes) == cudaSuccess) {
    device_free(p);
  } else {
    (void)cudaGetLastError();
  }
}

void DevicePool::set_reclaimer(std::function<bool()> reclaim) {
  std::lock_guard<std::mutex> lock(mu_);
  reclaim_ = std::move(reclaim);
}

Result<DeviceMemoryPtr> DevicePool::allocate(size_t bytes, const std::string& what) {
  auto m = allocate_once(bytes, what);
  if (m.is_ok() || m.status().code() != StatusCode::kResourceExhausted) return m;
  // Over the budget: memory kept for later (the device's free activation arenas) is given back, then once more.
  std::function<bool()> reclaim;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reclaim = reclaim_;
  }
  if (!reclaim || !reclaim()) return m;
  return allocate_once(bytes, what);
}

Result<DeviceMemoryPtr> DevicePool::allocate_once(size_t bytes, const std::string& what) {
  size_t want = bytes == 0 ? 1 : bytes;
  want = round_up(want, want < kGranule ? kSmallGranule : kGranule);
  if (alloc_stream_ && want >= kOwnChunkFrom) want = round_up(want, kDriverChunk);
  std::unique_lock<std::mutex> lock(mu_);
  // Reuse a cached block of the same size, or one at most 25% larger.
  auto it = cached_.lower_bound(want);
  if (it != cached_.end() && it->first <= want + want / 4) {
    auto m = std::make_shared<DeviceMemory>();
    m->ptr = it->second;
    m->bytes = it->first;
    m->pool = shared_from_this();
    cached_bytes_ -= it->first;
    in_use_ += it->first;
    cached_.erase(it);
    publish_locked();
    return m;
  }
  if (budget_ > 0 && in_use_ + cached_bytes_ + want > budget_) {
    for (auto& [sz, p] : cached_) device_free(p);
    cached_.clear();
    cached_bytes_ = 0;
    if (in_use_ + want > budget_) {
      publish_locked();
      return Status(StatusCode::kResourceExhausted,
                    fmt::format("GPU memory budget exceeded: {} needs {:.1f} MiB, {:.1f} of {:.1f} MiB are in use; "
                                "raise --gpu-mem or lower the image size / batch",
                                what, want / 1048576.0, in_use_ / 1048576.0, budget_ / 1048576.0));
    }
  }
  // cudaMalloc runs outside the lock (it can take milliseconds, and other threads only need the cache); the bytes
  // count as in use meanwhile, so the budget holds.
  in_use_ += want;
  mapping_ += want;
  // What the driver's pool may keep of its free memory before this mapping: the budget less every mapping under way.
  // Its free chunks are whatever earlier gives-back left (other sizes than this one), which it would not reuse for
  // this block: kept, they put what is mapped above the budget (768-832 MiB for 640 on the H200, 2026-12-03).
  const size_t keep = budget_ > mapping_ ? budget_ - mapping_ : 0;
  lock.unlock();
  void* p = nullptr;
  Stopwatch sw;
  const char* call = "cudaSetDevice(device_)";
  cudaError_t e = cudaSetDevice(device_);
  if (e == cudaSuccess && budget_ > 0 && alloc_stream_) {
    cudaMemPool_t mp = nullptr;
    if (cudaDeviceGetDefaultMemPool(&mp, device_) == cudaSuccess) SO_GPU_TRY(cudaMemPoolTrimTo(mp, keep));
    (void)cudaGetLastError();
  }
  if (e == cudaSuccess) {
    call = "cudaMalloc(&p, want)";
    e = device_malloc(&p, want);
  }
  metrics::inc("steadyocr_cuda_malloc_ms_total", {}, sw.elapsed_ms());
  metrics::inc("steadyocr_cuda_mallocs_total", {});
  lock.lock();
  mapping_ -= want;
  if (e == cudaErrorMemoryAllocation && !cached_.empty()) {
    (void)cudaGetLastError();
    for (auto& [sz, q] : cached_) device_free(q);
    cached_.clear();
    cached_bytes_ = 0;
    e = device_malloc(&p, want);
  }
  if (e != cudaSuccess) {
    in_use_ -= want;
    publish_locked();
    lock.unlock();
    Status s = gpu_status(e, call, __FILE__, __LINE__);
    return Status(s.code(), fmt::format("allocating {:.1f} MiB for {}: {}", want / 1048576.0, what, s.message()));
  }
  publish_locked();
  auto m = std::make_shared<DeviceMemory>();
  m->ptr = p;
  m->bytes = want;
  m->pool = shared_from_this();
  return m;
}

void DevicePool::give_back(void* ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  in_use_ -= bytes;
  cached_.emplace(bytes, ptr);
  cached_bytes_ += bytes;
  while (cached_bytes_ > cache_cap_ && !cached_.empty()) {
    auto last = std::prev(cached_.end());  // largest first
    device_free(last->second);
    cached_bytes_ -= last->first;
    cached_.erase(last);
  }
  publish_locked();
}

void DevicePool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [sz, p] : cached_) device_free(p);
  cached_.clear();
  cached_bytes_ = 0;
  publish_locked();
}

size_t DevicePool::in_use() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_;
}

size_t DevicePool::reserved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return in_use_ + cached_bytes_;
}

void DevicePool::publish_locked() {
  // Figures of the whole picture of device memory (docs/SERVING.md, steadyocr_gpu_memory_bytes): what runs hold, what
  // our cache keeps, what the driver's pool keeps mapped for the process, its high-water mark, and the device's own
  // used memory now and when the pool was made (the context and libraries; other processes included).
  size_t mapped = in_use_ + cached_bytes_, mapped_peak = mapped;
  if (alloc_stream_) {
    cudaMemPool_t mp = nullptr;
    uint64_t cur = 0, high = 0;
    if (cudaDeviceGetDefaultMemPool(&mp, device_) == cudaSuccess &&
        cudaMemPoolGetAttribute(mp, cudaMemPoolAttrReservedMemCurrent, &cur) == cudaSuccess &&
        cudaMemPoolGetAttribute(mp, cudaMemPoolAttrReservedMemHigh, &high) == cudaSuccess) {
      mapped = static_cast<size_t>(cur);
      mapped_peak = static_cast<size_t>(high);
    }
    (void)cudaGetLastError();
  }
  size_t free_bytes = 0, total = 0;
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_) (void)cudaSetDevice(device_);
  if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess) total = free_bytes = 0;
  (void)cudaGetLastError();
  if (current >= 0 && current != device_) (void)cudaSetDevice(current);
  const std::string dev = std::to_string(device_);
  auto gauge = [&](const char* state, size_t bytes) {
    metrics::set_gauge("steadyocr_gpu_memory_bytes", {{"device", dev}, {"state", state}}, static_cast<double>(bytes));
  };
  gauge("in_use", in_use_);
  gauge("cached", cached_bytes_);
  gauge("mapped", mapped);
  gauge("mapped_peak", mapped_peak);
  gauge("device_used", total - free_bytes);
  gauge("device_used_at_start", device_used_at_start_);
}

// ---- CudaDevice ------------------------------------------------------------------------------------------------

CudaDevice::CudaDevice(int device, size_t budget_bytes, size_t cudnn_handles)
    : device_(device), pool_(std::make_shared<DevicePool>(device, budget_bytes)) {
  cudnn_cap_ = std::max<size_t>(1, cudnn_handles);
  // Free arenas are kept for the next runs; under the budget, any allocation that does not fit takes their memory
  // first (weights of a new plan, a new lane's workspace), instead of failing beside idle memory.
  pool_->set_reclaimer([this] { return free_idle_arenas(); });
}

bool CudaDevice::free_idle_arenas() {
  std::vector<Arena> idle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle.swap(free_arenas_);
    for (const Arena& a : idle) arena_bytes_ -= a.mem->bytes;
    arenas_ -= idle.size();
  }
  if (!idle.empty()) metrics::inc("steadyocr_cuda_arenas_reclaimed_total", {}, static_cast<double>(idle.size()));
  return !idle.empty();  // their memory goes back to the pool as `idle` goes
}

CudaDevice::~CudaDevice() {
  pool_->set_reclaimer(nullptr);
  SO_GPU_TRY(cudaSetDevice(device_));
  for (auto& lane : free_lanes_) destroy_lane(&lane);
  free_lanes_.clear();
  for (cudnnHandle_t h : free_cudnn_) SO_GPU_TRY(dnn().cudnnDestroy(h));
  free_cudnn_.clear();
  free_arenas_.clear();
  weights_by_storage_.clear();
  weights_.clear();
}

Result<DeviceMemoryPtr> CudaDevice::weight(const Tensor& t, DType dt) {
  if (!t.defined()) return internal_error("weight(): undefined tensor");
  Stopwatch hash_sw;
  const StorageKey skey{t.storage().get(), t.raw(), t.nbytes(), t.dtype(), dt};
  // Remembers `m` under t's storage (when t owns its storage: caller-managed addresses may be reused).
  auto remember = [&](const DeviceMemoryPtr& m) {  // mu_ held
    if (!t.storage()) return;
    weights_by_storage_.emplace(skey, std::make_pair(t.storage(), m));
    if (weights_by_storage_.size() < storage_sweep_at_) return;
    std::erase_if(weights_by_storage_, [](const auto& e) { return e.second.first.use_count() == 1; });
    storage_sweep_at_ = std::max<size_t>(64, 2 * weights_by_storage_.size());
  };
  if (t.storage()) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = weights_by_storage_.find(skey);
    if (it != weights_by_storage_.end()) {
      metrics::inc("steadyocr_cuda_weight_ms_total", {{"phase", "storage"}}, hash_sw.elapsed_ms());
      return it->second.second;
    }
  }
  // Else keyed on the source content, so a hit costs one hash and no conversion.
  std::string key = fmt::format("{}>{}:{}:{:016x}", dtype_name(t.dtype()), dtype_name(dt), t.nbytes(),
                                hash_bytes(t.raw(), t.nbytes()));
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = weights_.find(key);
    if (it != weights_.end()) {
      remember(it->second);
      metrics::inc("steadyocr_cuda_weight_ms_total", {{"phase", "hash"}}, hash_sw.elapsed_ms());
      return it->second;
    }
  }
  std::vector<uint8_t> converted;
  const void* src = t.raw();
  size_t bytes = t.nbytes();
  if (t.dtype() != dt) {
    if (t.dtype() == DType::kF32 && dt == DType::kF16) {
      converted.resize(static_cast<size_t>(t.numel()) * 2);
      auto* h = reinterpret_cast<uint16_t*>(converted.data());
      const float* f = t.data<float>();
      for (int64_t i = 0; i < t.numel(); ++i) h[i] = float_to_half(f[i]);
    } else if (dt == DType::kF32) {
      std::vector<float> f = t.to_floats();
      converted.resize(f.size() * 4);
      std::memcpy(converted.data(), f.data(), converted.size());
    } else {
      return unsupported(fmt::format("weight conversion {} -> {}", dtype_name(t.dtype()), dtype_name(dt)));
    }
    src = converted.data();
    bytes = converted.size();
  }
  ASSIGN_OR_RETURN(DeviceMemoryPtr m, pool_->allocate(bytes, "weights"));
  SO_GPU_CHECK(cudaMemcpy(m->ptr, src, bytes, cudaMemcpyHostToDevice));
  metrics::inc("steadyocr_cuda_weight_ms_total", {{"phase", "miss"}}, hash_sw.elapsed_ms());
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = weights_.emplace(key, m);
  if (inserted) weight_bytes_ += m->bytes;
  remember(it->second);
  return it->second;
}

Result<DeviceMemoryPtr> CudaDevice::weight_floats(const std::vector<float>& v) {
  return weight(Tensor::from_floats({static_cast<int64_t>(v.size())}, v), DType::kF32);
}

Result<Lane> CudaDevice::acquire_lane(int wait_ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  Result<DeviceMemoryPtr> ws = Status::ok();
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (!free_lanes_.empty()) {
        Lane lane = std::move(free_lanes_.back());
        free_lanes_.pop_back();
        ++lanes_out_;
        return lane;
      }
    }
    // A new lane's cuBLAS workspace comes from the budget like any other memory. Over the budget (after the free
    // arenas gave theirs back, DevicePool::allocate), while other runs hold lanes, this run waits for one of them.
    ws = pool_->allocate(kCublasWorkspace, "cuBLAS workspace");
    if (ws.is_ok() || ws.status().code() != StatusCode::kResourceExhausted) break;
    std::unique_lock<std::mutex> lock(mu_);
    if (lanes_out_ == 0) break;
    metrics::inc("steadyocr_cuda_lane_waits_total", {{"device", std::to_string(device_)}});
    const uint64_t seen = lanes_discarded_;
    if (!lane_freed_.wait_until(lock, deadline, [&] { return !free_lanes_.empty() || lanes_discarded_ != seen; })) {
      return Status(ws.status().code(), fmt::format("{} (waited {} ms for a run in flight to give a lane back)",
                                                    ws.status().message(), wait_ms));
    }
  }
  if (!ws.is_ok()) return ws.status();
  Stopwatch created;
  Lane lane;
  lane.cublas_workspace = std::move(ws).value();
  auto fail = [&](Status s) {
    destroy_lane(&lane);
    return s;
  };
  SO_GPU_CHECK(cudaSetDevice(device_));
  cudaError_t ce = cudaStreamCreateWithFlags(&lane.stream, cudaStreamNonBlocking);
  if (ce != cudaSuccess) return fail(gpu_status(ce, "cudaStreamCreateWithFlags", __FILE__, __LINE__));
  for (auto& e : lane.events) {
    ce = cudaEventCreate(&e);
    if (ce != cudaSuccess) return fail(gpu_status(ce, "cudaEventCreate", __FILE__, __LINE__));
  }
  ce = cudaEventCreateWithFlags(&lane.done, cudaEventBlockingSync | cudaEventDisableTiming);
  if (ce != cudaSuccess)
    return fail(gpu_status(ce, "cudaEventCreateWithFlags(cudaEventBlockingSync)", __FILE__, __LINE__));
  cublasStatus_t cs = cublasCreate(&lane.cublas);
  if (cs != CUBLAS_STATUS_SUCCESS) return fail(gpu_status(cs, "cublasCreate(&lane.cublas)", __FILE__, __LINE__));
  // cublasSetStream resets the workspace to cuBLAS's own pool, so the workspace is set after it.
  cs = cublasSetStream(lane.cublas, lane.stream);
  if (cs == CUBLAS_STATUS_SUCCESS)
    cs = cublasSetWorkspace(lane.cublas, lane.cublas_workspace->ptr, lane.cublas_workspace->bytes);
  if (cs != CUBLAS_STATUS_SUCCESS)
    return fail(gpu_status(cs, "cublasSetStream/cublasSetWorkspace", __FILE__, __LINE__));
  metrics::inc("steadyocr_cuda_lanes_created_total", {});
  metrics::inc("steadyocr_cuda_lane_create_ms_total", {}, created.elapsed_ms());
  std::lock_guard<std::mutex> lock(mu_);
  ++lanes_out_;
  return lane;
}

Status CudaDevice::wait_lane(const Lane& lane) {
  const int others = waiting_.fetch_add(1, std::memory_order_acq_rel);
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { n.fetch_sub(1, std::memory_order_acq_rel); }
  } leave{waiting_};
  const bool block = lane.done && (sync_wait_ == SyncWait::kBlock || (sync_wait_ == SyncWait::kAuto && others > 0));
  Stopwatch sw;
  if (block) {
    SO_GPU_CHECK(cudaEventRecord(lane.done, lane.stream));
    SO_GPU_CHECK(cudaEventSynchronize(lane.done));
  } else {
    SO_GPU_CHECK(cudaStreamSynchronize(lane.stream));
  }
  const char* mode = block ? "block" : "spin";
  metrics::inc("steadyocr_cuda_stream_waits_total", {{"mode", mode}});
  metrics::inc("steadyocr_cuda_stream_wait_ms_total", {{"mode", mode}}, sw.elapsed_ms());
  return Status::ok();
}

CudnnLease& CudnnLease::operator=(CudnnLease&& o) noexcept {
  if (this != &o) {
    if (handle_ && device_) device_->return_cudnn(handle_);
    device_ = o.device_;
    handle_ = o.handle_;
    o.handle_ = nullptr;
  }
  return *this;
}

CudnnLease::~CudnnLease() {
  if (handle_ && device_) device_->return_cudnn(handle_);
}

Result<CudnnLease> CudaDevice::lease_cudnn(cudaStream_t stream, int wait_ms) {
  if (!cudnn_load().usable) return CudnnLease();  // the -nocudnn paths never touch cuDNN
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  cudnnHandle_t h = nullptr;
  {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      if (!free_cudnn_.empty()) {
        h = free_cudnn_.back();
        free_cudnn_.pop_back();
        break;
      }
      if (cudnn_made_ < cudnn_handle_cap()) {
        ++cudnn_made_;
        break;
      }
      metrics::inc("steadyocr_cuda_cudnn_handle_waits_total", {{"device", std::to_string(device_)}});
      if (cudnn_freed_.wait_until(lock, deadline) == std::cv_status::timeout && free_cudnn_.empty()) {
        return Status(StatusCode::kDeadlineExceeded,
                      fmt::format("no cuDNN handle came back within {} ms ({} in use)", wait_ms, cudnn_made_));
      }
    }
  }
  if (!h) {
    SO_GPU_CHECK(cudaSetDevice(device_));
    cudnnStatus_t ds = dnn().cudnnCreate(&h);
    if (ds != CUDNN_STATUS_SUCCESS) {
      std::lock_guard<std::mutex> lock(mu_);
      --cudnn_made_;
      cudnn_freed_.notify_one();
      return gpu_status(ds, "cudnnCreate(&h)", __FILE__, __LINE__);
    }
    metrics::inc("steadyocr_cuda_cudnn_handles_created_total", {});
  }
  CudnnLease lease(this, h);
  cudnnStatus_t ds = dnn().cudnnSetStream(h, stream);
  if (ds != CUDNN_STATUS_SUCCESS) return gpu_status(ds, "cudnnSetStream", __FILE__, __LINE__);
  return lease;
}

Status CudaDevice::reserve_cudnn() {
  std::vector<CudnnLease> held;
  for (size_t i = 0; i < cudnn_cap_; ++i) {
    ASSIGN_OR_RETURN(CudnnLease l, lease_cudnn(nullptr, 1000));
    if (!l.get()) break;  // no cuDNN here
    held.push_back(std::move(l));
  }
  return Status::ok();  // the leases end here: every handle is free for the runs
}

void CudaDevice::return_cudnn(cudnnHandle_t handle) {
  std::lock_guard<std::mutex> lock(mu_);
  free_cudnn_.push_back(handle);
  cudnn_freed_.notify_one();
}

Status CudaDevice::reserve_lanes(int n) {
  std::vector<Lane> made;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (static_cast<int>(free_lanes_.size() + made.size()) >= n) break;
    }
    auto lane = acquire_lane();
    if (!lane.is_ok()) {
      for (auto& m : made) release_lane(std::move(m));
      return lane.status();
    }
    made.push_back(std::move(lane).value());
  }
  for (auto& m : made) release_lane(std::move(m));
  return Status::ok();
}

void CudaDevice::release_lane(Lane lane) {
  if (!lane.stream) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_lanes_.push_back(std::move(lane));
    if (lanes_out_ > 0) --lanes_out_;
  }
  lane_freed_.notify_one();
}

void CudaDevice::discard_lane(Lane lane) {
  SO_GPU_TRY(cudaSetDevice(device_));
  destroy_lane(&lane);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (lanes_out_ > 0) --lanes_out_;
    ++lanes_discarded_;
  }
  // A waiting run may now have room for a lane of its own.
  lane_freed_.notify_all();
}

namespace {

// Arena sizes come in classes about a quarter-octave apart, in 4 MiB steps: plans of similar size share arenas, and
// an arena is at most ~19 % larger than the plan it is leased to. (Until 2026-12-03 every arena grew to the largest
// plan seen, so 16 runs in flight each held the 172 MiB of a 48-row recognition batch: 2.75 GB on the H200.)
size_t arena_class(size_t bytes) {
  constexpr size_t kGrain = size_t{4} << 20;
  size_t c = kGrain;
  while (c < bytes) c = round_up(c + c * 19 / 100, kGrain);
  return c;
}

}  // namespace

Result<Arena> CudaDevice::acquire_arena(size_t bytes, const std::vector<uint64_t>& prefer, int wait_ms) {
  const size_t want = arena_class(std::max<size_t>(bytes, 1));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(wait_ms);
  const std::string dev = std::to_string(device_);
  std::unique_lock<std::mutex> lock(mu_);
  bool waited = false;
  for (;;) {
    auto fits = [&](const Arena& a) { return a.mem->bytes >= bytes; };
    // The first preferred arena that is free (the caller's CUDA graphs replay only there), else the smallest free
    // one that fits (the newest of those), so that large arenas stay for the plans that need them.
    auto it = free_arenas_.end();
    for (size_t p = 0; p < prefer.size() && it == free_arenas_.end(); ++p) {
      it = std::find_if(free_arenas_.begin(), free_arenas_.end(),
                        [&](const Arena& a) { return a.id == prefer[p] && fits(a); });
    }
    if (it == free_arenas_.end()) {
      for (auto f = free_arenas_.begin(); f != free_arenas_.end(); ++f) {
        if (fits(*f) && (it == free_arenas_.end() || f->mem->bytes <= it->mem->bytes)) it = f;
      }
    }
    if (it != free_arenas_.end()) {
      Arena a = std::move(*it);
      free_arenas_.erase(it);
      return a;
    }
    // None fits: a free one (too small) gives way to a new one of this plan's class, so that there are never more
    // arenas than runs were ever in flight at once.
    DeviceMemoryPtr dropped;
    if (!free_arenas_.empty()) {
      dropped = std::move(free_arenas_.front().mem);
      free_arenas_.erase(free_arenas_.begin());
      --arenas_;
      arena_bytes_ -= dropped->bytes;
    }
    ++arenas_making_;
    lock.unlock();
    dropped.reset();
    auto mem = pool_->allocate(want, "activation arena");
    lock.lock();
    --arenas_making_;
    // Read after the allocation: runs that leased an arena meanwhile, or that are making one now (their bytes are
    // in use in the pool already), will give memory back.
    const bool others_leased = arenas_ > free_arenas_.size() || arenas_making_ > 0;
    if (mem.is_ok()) {
      Arena a{std::move(mem).value(), next_arena_id_++};
      ++arenas_;
      arena_bytes_ += a.mem->bytes;
      metrics::set_gauge("steadyocr_cuda_arenas", {{"device", dev}}, static_cast<double>(arenas_));
      metrics::set_gauge("steadyocr_cuda_arena_bytes", {{"device", dev}}, static_cast<double>(arena_bytes_));
      log::debug("cuda", "activation arena {} of {:.0f} MiB made: {} held, {:.0f} MiB", a.id, a.mem->bytes / 1048576.0,
                 arenas_, arena_bytes_ / 1048576.0);
      return a;
    }
    if (mem.status().code() != StatusCode::kResourceExhausted) return mem.status();
    // Over the memory budget: the free arenas (all too small) give their memory back first; then, while other runs
    // hold arenas, this run waits for one to come back (a ceiling met by waiting, not by failing).
    if (!free_arenas_.empty()) continue;
    if (!others_leased) return mem.status();
    if (!waited) metrics::inc("steadyocr_cuda_arena_waits_total", {{"device", dev}});
    waited = true;
    // Woken by a release; in slices, because a run whose allocation failed as well gives nothing back to wake us,
    // and the memory then comes from the next run to finish.
    const auto slice = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(10));
    if (arena_freed_.wait_until(lock, slice) == std::cv_status::timeout && free_arenas_.empty() &&
        std::chrono::steady_clock::now() >= deadline) {
      return Status(mem.status().code(), fmt::format("{} (waited {} ms for a run in flight to give an arena back)",
                                                     mem.status().message(), wait_ms));
    }
  }
}

void CudaDevice::release_arena(Arena arena) {
  if (!arena.mem) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    free_arenas_.push_back(std::move(arena));
  }
  // Every waiter: the one woken first may find this arena too small for it and leave it to another.
  arena_freed_.notify_all();
}

bool CudaDevice::find_algo(const ConvAlgoKey& key, ConvAlgoChoice* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = algos_.find(key);
  if (it == algos_.end()) return false;
  *out = it->second;
  return true;
}

bool CudaDevice::find_algo_family(const std::string& family, ConvAlgoChoice* out) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = algo_families_.find(family);
  if (it == algo_families_.end()) return false;
  *out = it->second;
  return true;
}

void CudaDevice::store_algo(const ConvAlgoKey& key, const std::string& family, const ConvAlgoChoice& c) {
  std::lock_guard<std::mutex> lock(mu_);
  algos_[key] = c;
  algo_families_.emplace(family, c);
}

namespace {
bool dominates(const CudaDevice::ConvDims& a, const CudaDevice::ConvDims& b) {  // a >= b in every dim
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] < b[i]) return false;
  }
  return true;
}
}  // namespace

bool CudaDevice::workspace_bound(const std::string& family, int algo, const ConvDims& dims, size_t* bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = workspace_points_.find({family, algo});
  if (it == workspace_points_.end()) return false;
  bool found = false;
  for (const auto& [at, ws] : it->second) {
    if (!dominates(at, dims)) continue;
    if (!found || ws < *bytes) *bytes = ws;
    found = true;
  }
  return found;
}

void CudaDevice::note_workspace(const std::string& family, int algo, const ConvDims& dims, size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& points = workspace_points_[{family, algo}];
  for (const auto& [at, ws] : points) {
    if (dominates(at, dims) && ws <= bytes) return;  // adds nothing the kept ones do not cover
  }
  std::erase_if(points, [&](const auto& p) { return dominates(dims, p.first) && bytes <= p.second; });
  if (points.size() >= kWorkspacePointsKept) points.erase(points.begin());  // the oldest
  points.emplace_back(dims, bytes);
}

// ---- PinnedPool ------------------------------------------------------------------------------------------------

PinnedPool::~PinnedPool() {
  for (auto& [sz, p] : free_) SO_GPU_TRY(cudaFreeHost(p));
}

Result<PinnedPtr> PinnedPool::get(size_t bytes) {
  // Power-of-two size classes (from 64 KiB): page-locking costs milliseconds, so buffers must be reusable across
  // the many input and output sizes of exact-shape runs.
  size_t want = size_t{64} << 10;
  while (want < bytes) want <<= 1;
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.lower_bound(want);
    if (it != free_.end() && it->first <= 2 * want) {
      want = it->first;
      p = it->second;
      free_bytes_ -= it->first;
      free_.erase(it);
    }
  }
  if (!p) {
    Stopwatch sw;
    SO_GPU_CHECK(cudaHostAlloc(&p, want, cudaHostAllocDefault));
    metrics::inc("steadyocr_cuda_host_alloc_ms_total", {}, sw.elapsed_ms());
    metrics::inc("steadyocr_cuda_host_allocs_total", {});
  }
  auto self = shared_from_this();
  return PinnedPtr(new PinnedBuffer{p, want}, [self](PinnedBuffer* b) { self->give_back(b); });
}

void PinnedPool::give_back(PinnedBuffer* b) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (free_bytes_ + b->bytes <= kMaxCachedPinned) {
      free_.emplace(b->bytes, b->ptr);
      free_bytes_ += b->bytes;
      b->ptr = nullptr;
    }
  }
  if (b->ptr) SO_GPU_TRY(cudaFreeHost(b->ptr));
  delete b;
}

size_t CudaDevice::weight_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return weight_bytes_;
}

}  // namespace steadyocr::cuda

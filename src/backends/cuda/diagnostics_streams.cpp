// Doctor checks of layer 4 on raw CUDA: concurrent workers on their own streams under a watchdog, and device
// memory flat over repeated identical work.
#include <fmt/format.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "backends/cuda/check.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/diagnostics_kernels.h"
#include "backends/cuda/diagnostics_util.h"
#include "backends/cuda/kernels/kernels.h"

namespace steadyocr::cuda::diag {

namespace {
using Clock = std::chrono::steady_clock;

struct Workers {
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<int> done;
  std::vector<std::string> errors;
  std::vector<std::string> error_codes;
  std::vector<double> ms;
  std::vector<std::string> phase;  // what each worker is doing, so a hang report says where it stopped
  void enter(int id, const char* what) {
    std::lock_guard<std::mutex> lock(mu);
    phase[id] = what;
  }
};

// One worker: its own stream and cuDNN handle; `iterations` rounds of axpy + convolution on that stream; then
// the axpy result must be exact and the convolution must match the CPU reference.
void worker(std::shared_ptr<Workers> st, int id, int device, int iterations, int hang_ms) {
  auto t0 = Clock::now();
  std::string error, code;
  auto fail = [&](const std::string& what, const std::string& c) {
    if (error.empty()) error = what, code = c;
  };
  cudaStream_t stream = nullptr;
  st->enter(id, "creating its stream");
  cudaError_t e = cudaSetDevice(device);
  if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
  if (e != cudaSuccess) fail("stream: " + error_text(e), classify(e).sticky ? "L3_STICKY_FAULT" : "L4_STREAM_ERROR");
  constexpr int kN = 1 << 20;
  DeviceBuffer x, y, flag;
  if (error.empty() &&
      ((e = x.allocate(kN * sizeof(float))) != cudaSuccess || (e = y.allocate(kN * sizeof(float))) != cudaSuccess ||
       (e = flag.allocate(sizeof(int))) != cudaSuccess))
    fail("cudaMalloc: " + error_text(e), "L4_STREAM_ERROR");
  if (error.empty()) {
    std::vector<float> ones(kN, 1.f);
    e = cudaMemcpyAsync(x.as<float>(), ones.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream);
    if (e == cudaSuccess) e = cudaMemsetAsync(y.as<float>(), 0, kN * sizeof(float), stream);
    if (e == cudaSuccess) e = cudaMemsetAsync(flag.as<int>(), 0, sizeof(int), stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    // Fault: a kernel that spins (bounded) so this stream never drains before the watchdog fires.
    st->enter(id, "kernels on its own stream, then cudaStreamSynchronize");
    if (e == cudaSuccess && id == 0 && hang_ms > 0) {
      e = k::launch_spin(flag.as<int>(), static_cast<uint64_t>(hang_ms), stream);
    }
    for (int i = 0; i < iterations && e == cudaSuccess; ++i)
      e = launch_axpy(1.f, x.as<float>(), y.as<float>(), kN, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess)
      fail("axpy on the worker's stream: " + error_text(e), classify(e).sticky ? "L3_STICKY_FAULT" : "L4_STREAM_ERROR");
  }
  if (error.empty()) {
    std::vector<float> got(kN);
    e = cudaMemcpy(got.data(), y.as<float>(), kN * sizeof(float), cudaMemcpyDeviceToHost);
    int wrong = 0;
    for (int i = 0; e == cudaSuccess && i < kN; i += 997) wrong += got[i] != static_cast<float>(iterations);
    if (e != cudaSuccess)
      fail("reading the axpy result: " + error_text(e), classify(e).sticky ? "L3_STICKY_FAULT" : "L4_STREAM_ERROR");
    else if (wrong)
      fail(fmt::format("axpy result wrong in {} sampled elements (expected {})", wrong, iterations),
           "L4_CONCURRENCY_MISMATCH");
  }
  if (error.empty() && cudnn_load().usable) {  // without cuDNN (cudnn_api.h) the serving path has no cuDNN call
    // A cuDNN convolution from this thread, concurrently with the others.
    st->enter(id, "cuDNN convolution (its allocations and synchronisation wait for every stream on the device)");
    ConvShape p;
    p.c = 8, p.k = 16, p.h = p.w = 48;
    auto cx = random_floats(static_cast<size_t>(p.c) * p.h * p.w, 10 + id);
    auto cw = random_floats(static_cast<size_t>(p.k) * p.c * p.r * p.s, 20 + id, -0.5f, 0.5f);
    std::vector<float> cy;
    Outcome o = run_cudnn_conv(p, CUDNN_DATA_FLOAT, cx, cw, &cy, json::object());
    if (o.status != "pass") {
      fail("cuDNN conv: " + o.summary, o.code);
    } else {
      Comparison c = compare_floats(cy, conv_reference(p, cx, cw));
      if (c.non_finite || c.nmse > 1e-5) fail(fmt::format("cuDNN conv nmse {:.3g}", c.nmse), "L4_CONCURRENCY_MISMATCH");
    }
  }
  st->enter(id, "releasing its stream and buffers");
  if (stream) SO_GPU_TRY(cudaStreamDestroy(stream));
  std::lock_guard<std::mutex> lock(st->mu);
  st->errors[id] = error;
  st->error_codes[id] = code;
  st->ms[id] = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  st->done[id] = 1;
  ++st->finished;
  st->cv.notify_all();
}
}  // namespace

Outcome check_streams(const json& args) {
  json ev;
  int device = args.value("device", 0);
  cudaError_t e = use_device(device, &ev);
  if (e != cudaSuccess) return cuda_failure(e, "cudaSetDevice", ev);
  int workers = std::max(1, args.value("workers", 4));
  int iterations = std::max(1, args.value("iterations", 50));
  int deadline_ms = std::max(100, args.value("deadline_ms", 15000));
  bool hang = fault("stream_hang");
  // The injected spin outlasts the watchdog but ends by itself, so the GPU is never left busy for long.
  int hang_ms = hang ? deadline_ms + 20000 : 0;
  ev["workers"] = workers;
  ev["iterations"] = iterations;
  ev["deadline_ms"] = deadline_ms;
  ev["injected"] = hang;
  auto st = std::make_shared<Workers>();
  st->done.assign(workers, 0);
  st->errors.assign(workers, "");
  st->error_codes.assign(workers, "");
  st->ms.assign(workers, 0.0);
  st->phase.assign(workers, "not started");
  auto t0 = Clock::now();
  for (int w = 0; w < workers; ++w) std::thread(worker, st, w, device, iterations, hang_ms).detach();
  std::unique_lock<std::mutex> lock(st->mu);
  bool all =
      st->cv.wait_until(lock, t0 + std::chrono::milliseconds(deadline_ms), [&] { return st->finished == workers; });
  ev["worker_ms"] = st->ms;
  Outcome o;
  if (!all) {
    std::vector<int> stuck;
    json stuck_in = json::object();
    for (int w = 0; w < workers; ++w) {
      if (st->done[w]) continue;
      stuck.push_back(w);
      stuck_in[std::to_string(w)] = st->phase[w];
    }
    ev["stuck"] = stuck.size();
    ev["stuck_workers"] = stuck;
    ev["stuck_in"] = stuck_in;
    if (hang) ev["injected_into"] = "worker 0 (a spinning kernel on its stream)";
    o.status = "fail";
    o.code = "L4_STREAM_HANG";
    o.summary = fmt::format("{} of {} workers (own stream each) still running after {} ms{}", stuck.size(), workers,
                            deadline_ms, hang ? " (injected spin kernel)" : "");
    o.evidence = ev;
    return o;  // the stuck threads are abandoned; the check's process exits right after reporting
  }
  for (int w = 0; w < workers; ++w) {
    if (st->errors[w].empty()) continue;
    ev["error"] = fmt::format("worker {}: {}", w, st->errors[w]);
    ev["what"] = ev["error"];
    o.status = "fail";
    o.code = st->error_codes[w] == "L4_CONCURRENCY_MISMATCH" || st->error_codes[w] == "L3_STICKY_FAULT"
                 ? st->error_codes[w]
                 : "L4_STREAM_ERROR";
    o.summary = ev["error"].get<std::string>();
    o.evidence = ev;
    return o;
  }
  double slowest = 0;
  for (double m : st->ms) slowest = std::max(slowest, m);
  o.summary = fmt::format("{} workers, own stream + cuDNN handle each, {} rounds: all correct in {:.0f} ms", workers,
                          iterations, slowest);
  o.evidence = ev;
  return o;
}

Outcome check_memory(const json& args) {
  json ev;
  cudaError_t e = use_device(args.value("device", 0), &ev);
  if (e != cudaSuccess) return cuda_failure(e, "cudaSetDevice", ev);
  int iterations = std::max(2, args.value("iterations", 20));
  constexpr size_t kChunk = size_t{64} << 20;
  constexpr int64_t kLimitMib = 16;
  bool leak = fault("memory_growth");
  std::vector<DeviceBuffer> leaked;
  ConvShape p;
  auto x = random_floats(static_cast<size_t>(p.c) * p.h * p.w, 7);
  auto w = random_floats(static_cast<size_t>(p.k) * p.c * p.r * p.s, 8, -0.5f, 0.5f);
  // One round of work as a run does it: a scratch allocation, a kernel, a cuDNN convolution, freed again.
  auto round = [&](bool measured) -> Outcome {
    DeviceBuffer scratch;
    cudaError_t err = scratch.allocate(kChunk);
    if (err == cudaSuccess) err = cudaMemset(scratch.as<void>(), 0, kChunk);
    if (err == cudaSuccess) err = launch_axpy(1.f, scratch.as<float>(), scratch.as<float>(), 1 << 20, nullptr);
    if (err != cudaSuccess) return cuda_failure(err, "memory round", ev);
    std::vector<float> y;
    if (cudnn_load().usable) {
      Outcome o = run_cudnn_conv(p, CUDNN_DATA_FLOAT, x, w, &y, ev);
      if (o.status != "pass") return o;
    }
    if (leak && measured) leaked.push_back(std::move(scratch));
    return Outcome{};
  };
  for (int i = 0; i < 2; ++i) {
    Outcome o = round(false);
    if (o.status != "pass") return o;
  }
  size_t free0 = 0, free1 = 0, total = 0;
  if ((e = cudaDeviceSynchronize()) != cudaSuccess || (e = cudaMemGetInfo(&free0, &total)) != cudaSuccess)
    return cuda_failure(e, "free memory before the rounds", ev);
  for (int i = 0; i < iterations; ++i) {
    Outcome o = round(true);
    if (o.status != "pass") return o;
  }
  if ((e = cudaDeviceSynchronize()) != cudaSuccess || (e = cudaMemGetInfo(&free1, &total)) != cudaSuccess)
    return cuda_failure(e, "free memory after the rounds", ev);
  int64_t growth_mib = (static_cast<int64_t>(free0) - static_cast<int64_t>(free1)) >> 20;
  ev["iterations"] = iterations;
  ev["free_before_mib"] = free0 >> 20;
  ev["free_after_mib"] = free1 >> 20;
  ev["growth_mib"] = growth_mib;
  ev["limit_mib"] = kLimitMib;
  ev["injected"] = leak;
  Outcome o;
  if (growth_mib > kLimitMib) {
    o.status = "fail";
    o.code = "L4_MEMORY_GROWTH";
    o.summary = fmt::format("free device memory fell {} MiB over {} identical rounds{}", growth_mib, iterations,
                            leak ? " (injected leak of 64 MiB a round)" : "");
  } else {
    o.summary = fmt::format("free device memory flat over {} rounds of alloc/kernel/cuDNN/free ({:+} MiB)", iterations,
                            -growth_mib);
  }
  o.evidence = ev;
  return o;
}

}  // namespace steadyocr::cuda::diag

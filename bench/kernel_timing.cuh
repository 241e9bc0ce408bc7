// Device time per launch of a kernel for the kernel benches (bench/pointwise_bench, bench/depthwise_bench): eager, or
// replayed from a CUDA graph on one stream or several at once. Measuring tools (issue 13), never linked into steadyocr.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#define CHECK_CUDA(x)                                                                          \
  do {                                                                                         \
    const cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

// Device time per launch: `body(s)` enqueues one launch on stream s; `launches` per stream on `streams` streams at
// once. Eager (launched from the host as the loop goes) or replayed from a CUDA graph of those launches (the
// device's own time, without the host's cost of each launch, as the plugin's replayed plans run).
inline float time_us(const std::function<void(int)>& body, int launches, int streams,
                     const std::vector<cudaStream_t>& ss, bool graph) {
  cudaEvent_t a, b, fork;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  CHECK_CUDA(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  std::vector<cudaEvent_t> joins(streams);
  for (auto& e : joins) CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  auto enqueue = [&] {
    CHECK_CUDA(cudaEventRecord(fork, ss[0]));
    for (int s = 1; s < streams; ++s) CHECK_CUDA(cudaStreamWaitEvent(ss[s], fork));
    for (int i = 0; i < launches * streams; ++i) body(i % streams);
    for (int s = 1; s < streams; ++s) {
      CHECK_CUDA(cudaEventRecord(joins[s], ss[s]));
      CHECK_CUDA(cudaStreamWaitEvent(ss[0], joins[s]));
    }
  };
  for (int i = 0; i < streams; ++i) body(i);  // warm (and any lazy set-up outside a capture)
  CHECK_CUDA(cudaDeviceSynchronize());
  cudaGraphExec_t exec = nullptr;
  int reps = 1;
  if (graph) {
    cudaGraph_t g;
    CHECK_CUDA(cudaStreamBeginCapture(ss[0], cudaStreamCaptureModeThreadLocal));
    enqueue();
    CHECK_CUDA(cudaStreamEndCapture(ss[0], &g));
    CHECK_CUDA(cudaGraphInstantiate(&exec, g, 0));
    CHECK_CUDA(cudaGraphDestroy(g));
    CHECK_CUDA(cudaGraphLaunch(exec, ss[0]));
    CHECK_CUDA(cudaStreamSynchronize(ss[0]));
    reps = 5;
  }
  CHECK_CUDA(cudaEventRecord(a, ss[0]));
  for (int r = 0; r < reps; ++r) {
    if (graph) {
      CHECK_CUDA(cudaGraphLaunch(exec, ss[0]));
    } else {
      enqueue();
    }
  }
  CHECK_CUDA(cudaEventRecord(b, ss[0]));
  CHECK_CUDA(cudaEventSynchronize(b));
  float ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&ms, a, b));
  if (exec) CHECK_CUDA(cudaGraphExecDestroy(exec));
  for (auto& e : joins) CHECK_CUDA(cudaEventDestroy(e));
  CHECK_CUDA(cudaEventDestroy(fork));
  CHECK_CUDA(cudaEventDestroy(a));
  CHECK_CUDA(cudaEventDestroy(b));
  return ms * 1e3f / static_cast<float>(reps * launches * streams);
}

// What every kernel bench starts with: `--iters N` (launches per stream and measure; 50 by default), a header line
// naming the device and what the bench prints (`what`), and kStreams non-blocking streams. Exits 2 on a bad argument.
constexpr int kStreams = 4;

struct BenchSetup {
  int iters = 50;
  std::vector<cudaStream_t> streams;
};

inline BenchSetup bench_setup(int argc, char** argv, const char* what) {
  BenchSetup b;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0 && i + 1 < argc) {
      b.iters = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: %s [--iters N]\n", argv[0]);
      std::exit(2);
    }
  }
  if (b.iters < 1) b.iters = 1;
  cudaDeviceProp prop{};
  CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  std::printf("# %s, %d SMs; %s\n", prop.name, prop.multiProcessorCount, what);
  b.streams.resize(kStreams);
  for (auto& s : b.streams) CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return b;
}

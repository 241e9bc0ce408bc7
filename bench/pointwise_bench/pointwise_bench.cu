// The fused fp16 pointwise kernel (src/backends/cuda/kernels/pointwise.cu) on the recogniser's and detector's 1x1
// convolutions, in every step/stage configuration below, against cuBLAS's strided batched GEMM of the same product
// (without the epilogue, which costs cuBLAS a second launch): device microseconds per launch, one stream and four
// at once (images in flight share the device), and each configuration's largest difference from the first
// (the same sums in the same order: 0 expected). A measuring tool (issue 13), never linked into steadyocr.
//
//   so_pointwise_bench [--iters N]      (launches per stream and measure; prints a table; exit 1 when a
//                                        configuration's output differs from the shipped kernel's)
#include <cublas_v2.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

// The kernel's own translation unit, so that every configuration can be instantiated here.
#include "../kernel_timing.cuh"
#include "backends/cuda/kernels/pointwise.cu"

namespace {

using steadyocr::cuda::k::Dt;
using steadyocr::cuda::k::EwOp;
using steadyocr::cuda::k::PointwiseParams;

struct Case {
  const char* what;
  int n, c, k, hw;
};

// The recogniser at 48 x 320 (rows of 6 and of 1; model_macs.py's shapes) and a few of the detector's at 960 x 736.
const Case kCases[] = {
    {"rec 480->480 6x80", 6, 480, 480, 480},  {"rec 480->480 3x80", 6, 480, 480, 240},
    {"rec 240->480 6x80", 6, 240, 480, 480},  {"rec 240->240 12x80", 6, 240, 240, 960},
    {"rec 128->240 12x80", 6, 128, 240, 960}, {"rec 128->128 12x160", 6, 128, 128, 1920},
    {"rec 64->128 12x160", 6, 64, 128, 1920}, {"rec 64->64 24x160", 6, 64, 64, 3840},
    {"rec 32->64 24x160", 6, 32, 64, 3840},   {"rec 16->32 24x160", 6, 16, 32, 3840},
    {"rec1 480->480 3x80", 1, 480, 480, 240}, {"rec1 240->240 12x80", 1, 240, 240, 960},
    {"det 96->24 240x184", 1, 96, 24, 44160}, {"det 192->384 30x23", 1, 192, 384, 690},
    {"det 48->96 120x92", 1, 48, 96, 11040},
};

using Launch = std::function<cudaError_t(const PointwiseParams&, cudaStream_t)>;

struct Config {
  const char* name;
  Launch launch;
};

template <int BM, int BN, int kBK, int kStages>
Launch tiles() {
  return [](const PointwiseParams& p, cudaStream_t s) {
    return steadyocr::cuda::k::launch_tiles<BM, BN, kBK, kStages>(p, true, s);
  };
}

// The floor of a launch like the kernel's (same grid, threads and shared memory, no work): what a launch costs the
// device before any product.
__global__ void empty_kernel(const __grid_constant__ PointwiseParams p) {
  if (p.n < 0 && threadIdx.x == 0) static_cast<int*>(const_cast<void*>(p.x))[0] = 1;  // never true; keeps p
}

// The program with two more instructions: bias, hard-swish, then x * 1 and x + 0 (what a longer program costs; the
// same outputs).
PointwiseParams four(const PointwiseParams& p) {
  PointwiseParams q = p;
  q.epi.n_instrs = 4;
  q.epi.ins[2].op = EwOp::kMul;
  q.epi.ins[2].src = -1;
  q.epi.ins[2].imm = 1.f;
  q.epi.ins[3].op = EwOp::kAdd;
  q.epi.ins[3].src = -1;
  q.epi.ins[3].imm = 0.f;
  return q;
}

// The shipped tiles and stages with kChunk values per thread through the epilogue at once; `longer`: four().
template <int kChunk, bool kLonger>
Launch chunked() {
  return [](const PointwiseParams& p, cudaStream_t s) {
    const PointwiseParams q = kLonger ? four(p) : p;
    const bool words = steadyocr::cuda::k::pointwise_in_words(q.c, q.hw);
    if (q.k <= 32) return steadyocr::cuda::k::launch_tiles<32, 128, 64, 2, kChunk>(q, words, s);
    return steadyocr::cuda::k::launch_tiles<64, 64, 64, 2, kChunk>(q, words, s);
  };
}

// The first is the shipped kernel; "no epilogue" is it with an empty program (the sums rounded and stored only).
std::vector<Config> configs() {
  return {
      {"shipped (launch_pointwise)",
       [](const PointwiseParams& p, cudaStream_t s) { return steadyocr::cuda::k::launch_pointwise(p, s); }},
      {"shipped, no epilogue",
       [](const PointwiseParams& p, cudaStream_t s) {
         PointwiseParams q = p;
         q.epi.n_instrs = 0;
         return steadyocr::cuda::k::launch_pointwise(q, s);
       }},
      {"shipped, bias only",  // the epilogue's first instruction alone
       [](const PointwiseParams& p, cudaStream_t s) {
         PointwiseParams q = p;
         q.epi.n_instrs = 1;
         return steadyocr::cuda::k::launch_pointwise(q, s);
       }},
      {"shipped, 4 instructions",
       [](const PointwiseParams& p, cudaStream_t s) { return steadyocr::cuda::k::launch_pointwise(four(p), s); }},
      {"empty kernel, 64x64 grid",
       [](const PointwiseParams& p, cudaStream_t s) {
         const dim3 grid((p.hw + 63) / 64, (p.k + 63) / 64, p.n);
         empty_kernel<<<grid, 128, steadyocr::cuda::k::async_smem_bytes<64, 64, 64, 2>(), s>>>(p);
         return cudaGetLastError();
       }},
      {"shipped, chunks of 16", chunked<16, false>()},
      {"4 instructions, chunks of 16", chunked<16, true>()},
      {"64x64 step 32, 3 stages", tiles<64, 64, 32, 3>()},
      {"128x64 step 32, 3 stages", tiles<128, 64, 32, 3>()},
      {"64x128 step 32, 3 stages", tiles<64, 128, 32, 3>()},
      {"32x128 step 64, 2 stages", tiles<32, 128, 64, 2>()},
      {"32x128 step 32, 4 stages", tiles<32, 128, 32, 4>()},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const BenchSetup setup =
      bench_setup(argc, argv,
                  "device us per launch: eager on one stream / from a CUDA graph on one stream / from a "
                  "graph on four streams at once; TFLOPS of the graph on one stream");
  const int iters = setup.iters;
  const std::vector<cudaStream_t>& ss = setup.streams;
  cublasHandle_t blas;
  void* workspace = nullptr;  // cuBLAS's own, set before any capture
  CHECK_CUDA(cudaMalloc(&workspace, size_t{32} << 20));
  if (cublasCreate(&blas) != CUBLAS_STATUS_SUCCESS ||
      cublasSetWorkspace(blas, workspace, size_t{32} << 20) != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "cublasCreate failed\n");
    return 2;
  }
  const std::vector<Config> cfgs = configs();
  bool differs = false;
  for (const Case& cs : kCases) {
    const size_t nx = static_cast<size_t>(cs.n) * cs.c * cs.hw, nw = static_cast<size_t>(cs.k) * cs.c,
                 ny = static_cast<size_t>(cs.n) * cs.k * cs.hw;
    std::vector<__half> hx(nx), hw(nw), hb(cs.k);
    uint32_t seed = 12345;
    auto draw = [&] {
      seed = seed * 1664525u + 1013904223u;
      return static_cast<float>((seed >> 8) & 0xffff) / 65536.f - 0.5f;
    };
    for (auto& v : hx) v = __float2half(draw());
    for (auto& v : hw) v = __float2half(draw() * 0.2f);
    for (auto& v : hb) v = __float2half(draw());
    __half *x, *w, *b, *y;
    CHECK_CUDA(cudaMalloc(&x, nx * 2));
    CHECK_CUDA(cudaMalloc(&w, nw * 2));
    CHECK_CUDA(cudaMalloc(&b, cs.k * 2));
    // One output per stream, so that streams at once do not write the same memory.
    CHECK_CUDA(cudaMalloc(&y, ny * 2 * kStreams));
    CHECK_CUDA(cudaMemcpy(x, hx.data(), nx * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(w, hw.data(), nw * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, hb.data(), cs.k * 2, cudaMemcpyHostToDevice));
    PointwiseParams p;
    p.x = x;
    p.w = w;
    p.n = cs.n;
    p.c = cs.c;
    p.k = cs.k;
    p.hw = cs.hw;
    p.epi.n_instrs = 2;  // bias, then hard-swish: the recogniser's usual epilogue
    p.epi.ins[0].op = EwOp::kAdd;
    p.epi.ins[0].src = 1;
    p.epi.ins[1].op = EwOp::kHardSwish;
    p.epi.in[1] = b;
    p.epi.in_dt[1] = Dt::kF16;
    p.epi.per_channel[1] = true;
    p.epi.out_dt = Dt::kF16;
    const double flop = 2.0 * cs.n * cs.c * cs.k * cs.hw;
    std::printf("%-22s n %d c %3d k %3d hw %5d (%.0f MFLOP)\n", cs.what, cs.n, cs.c, cs.k, cs.hw, flop / 1e6);
    std::vector<__half> ref(ny), got(ny);
    for (size_t ci = 0; ci < cfgs.size(); ++ci) {
      const Config& cfg = cfgs[ci];
      // Each tile shape where launch_pointwise would choose among them: 32 x 128 for few output channels.
      const bool narrow = std::strstr(cfg.name, "32x128") != nullptr;
      if (std::strstr(cfg.name, "shipped") == nullptr && std::strstr(cfg.name, "empty") == nullptr &&
          std::strstr(cfg.name, "chunks") == nullptr && narrow != (cs.k <= 32)) {
        continue;
      }
      auto body = [&](int s) {
        PointwiseParams q = p;
        q.epi.out = y + static_cast<size_t>(s) * ny;
        CHECK_CUDA(cfg.launch(q, ss[s]));
      };
      const float eager = time_us(body, iters, 1, ss, false), one = time_us(body, iters, 1, ss, true),
                  four = time_us(body, iters, kStreams, ss, true);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(ci == 0 ? ref.data() : got.data(), y, ny * 2, cudaMemcpyDeviceToHost));
      float diff = 0;
      // Variants whose program differs from the shipped one's (fewer instructions) or that compute nothing.
      const bool compare = ci > 0 && std::strstr(cfg.name, "no epilogue") == nullptr &&
                           std::strstr(cfg.name, "empty") == nullptr && std::strstr(cfg.name, "bias only") == nullptr;
      if (compare) {
        for (size_t i = 0; i < ny; ++i) {
          diff = std::fmax(diff, std::fabs(__half2float(got[i]) - __half2float(ref[i])));
        }
      }
      differs = differs || diff != 0;
      std::printf("  %-28s %7.2f / %7.2f / %7.2f us  %6.1f TFLOPS  max diff %g\n", cfg.name, eager, one, four,
                  flop / (one * 1e-6) / 1e12, diff);
    }
    // cuBLAS: Y[n] (hw x k, column-major) = X[n] (hw x c) * W^T, as conv_own.cpp calls it; no epilogue.
    auto gemm = [&](int s) {
      const float one = 1.f, zero = 0.f;
      cublasSetStream(blas, ss[s]);
      cublasGemmStridedBatchedEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, cs.hw, cs.k, cs.c, &one, x, CUDA_R_16F, cs.hw,
                                 static_cast<long long>(cs.c) * cs.hw, w, CUDA_R_16F, cs.c, 0, &zero,
                                 y + static_cast<size_t>(s) * ny, CUDA_R_16F, cs.hw,
                                 static_cast<long long>(cs.k) * cs.hw, cs.n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    };
    const float eager = time_us(gemm, iters, 1, ss, false), one = time_us(gemm, iters, 1, ss, true),
                four = time_us(gemm, iters, kStreams, ss, true);
    std::printf("  %-28s %7.2f / %7.2f / %7.2f us  %6.1f TFLOPS  (GEMM only, no epilogue)\n", "cuBLAS", eager, one,
                four, flop / (one * 1e-6) / 1e12);
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(y));
  }
  cublasDestroy(blas);
  CHECK_CUDA(cudaFree(workspace));
  if (differs) std::printf("# a configuration's output differs from the shipped kernel's\n");
  return differs ? 1 : 0;
}

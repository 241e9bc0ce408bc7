// The tiled depthwise kernel (src/backends/cuda/kernels/depthwise.cu) with its fused epilogue (bias, hard-swish) on
// depthwise layers shaped like the recogniser's at 48 x 320 (6 rows) and the detector's at 960 x 736, in fp16:
// device microseconds per launch (eager on one stream / from a CUDA graph on one stream / on four at once), and a
// hash of the output's bits, so that the binaries built before and after a change can be compared (same hash: same
// outputs). A measuring tool (issue 13), never linked into steadyocr.
//
//   so_depthwise_bench [--iters N]
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The kernel's own translation unit, as the plugin builds it.
#include "../kernel_timing.cuh"
#include "backends/cuda/kernels/depthwise.cu"
#include "core/content_hash.h"

namespace {

using steadyocr::cuda::k::DepthwiseParams;
using steadyocr::cuda::k::Dt;
using steadyocr::cuda::k::EwOp;

struct Case {
  const char* what;
  int n, c, h, w, k, stride;
};

const Case kCases[] = {
    {"rec 3x3 s1 16@24x160", 6, 16, 24, 160, 3, 1}, {"rec 3x3 s2 32@24x160", 6, 32, 24, 160, 3, 2},
    {"rec 3x3 s1 64@12x80", 6, 64, 12, 80, 3, 1},   {"rec 3x3 s1 128@12x80", 6, 128, 12, 80, 3, 1},
    {"rec 5x5 s1 240@12x80", 6, 240, 12, 80, 5, 1}, {"rec 5x5 s1 480@6x80", 6, 480, 6, 80, 5, 1},
    {"rec 5x5 s1 480@3x80", 6, 480, 3, 80, 5, 1},   {"rec1 5x5 s1 240@12x80", 1, 240, 12, 80, 5, 1},
    {"det 3x3 s1 48@120x92", 1, 48, 120, 92, 3, 1}, {"det 3x3 s2 96@240x184", 1, 96, 240, 184, 3, 2},
    {"det 5x5 s1 192@30x23", 1, 192, 30, 23, 5, 1},
};

}  // namespace

int main(int argc, char** argv) {
  const BenchSetup setup =
      bench_setup(argc, argv,
                  "depthwise fp16 with bias + hard-swish, device us per launch: eager / graph on one stream /"
                  " graph on four streams at once; hash of the output bits; the same without the epilogue");
  const int iters = setup.iters;
  const std::vector<cudaStream_t>& ss = setup.streams;
  for (const Case& cs : kCases) {
    const int pad = cs.k / 2, oh = (cs.h + 2 * pad - cs.k) / cs.stride + 1,
              ow = (cs.w + 2 * pad - cs.k) / cs.stride + 1;
    const size_t nx = static_cast<size_t>(cs.n) * cs.c * cs.h * cs.w, nw = static_cast<size_t>(cs.c) * cs.k * cs.k,
                 ny = static_cast<size_t>(cs.n) * cs.c * oh * ow;
    std::vector<__half> hx(nx), hw(nw), hb(cs.c), out(ny);
    uint32_t seed = 12345;
    auto draw = [&] {
      seed = seed * 1664525u + 1013904223u;
      return static_cast<float>((seed >> 8) & 0xffff) / 65536.f - 0.5f;
    };
    for (auto& v : hx) v = __float2half(draw());
    for (auto& v : hw) v = __float2half(draw() * 0.5f);
    for (auto& v : hb) v = __float2half(draw());
    __half *x, *w, *b, *y;
    CHECK_CUDA(cudaMalloc(&x, nx * 2));
    CHECK_CUDA(cudaMalloc(&w, nw * 2));
    CHECK_CUDA(cudaMalloc(&b, cs.c * 2));
    CHECK_CUDA(cudaMalloc(&y, ny * 2 * kStreams));  // one output per stream
    CHECK_CUDA(cudaMemcpy(x, hx.data(), nx * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(w, hw.data(), nw * 2, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(b, hb.data(), cs.c * 2, cudaMemcpyHostToDevice));
    DepthwiseParams p;
    p.x = x;
    p.w = w;
    p.dt = Dt::kF16;
    p.n = cs.n;
    p.c = cs.c;
    p.h = cs.h;
    p.w_in = cs.w;
    p.oh = oh;
    p.ow = ow;
    p.kh = p.kw = cs.k;
    p.sh = p.sw = cs.stride;
    p.pad_t = p.pad_l = pad;
    p.epi.n_instrs = 2;  // bias, then hard-swish
    p.epi.ins[0].op = EwOp::kAdd;
    p.epi.ins[0].src = 1;
    p.epi.ins[1].op = EwOp::kHardSwish;
    p.epi.in[1] = b;
    p.epi.in_dt[1] = Dt::kF16;
    p.epi.per_channel[1] = true;
    p.epi.out_dt = Dt::kF16;
    std::printf("%-24s n %d c %3d %3dx%-3d k %d s %d\n", cs.what, cs.n, cs.c, cs.h, cs.w, cs.k, cs.stride);
    for (int fused = 1; fused >= 0; --fused) {
      auto body = [&](int s) {
        DepthwiseParams q = p;
        if (!fused) q.epi.n_instrs = 0;
        q.y = q.epi.out = y + static_cast<size_t>(s) * ny;
        CHECK_CUDA(steadyocr::cuda::k::launch_depthwise(q, ss[s]));
      };
      const float eager = time_us(body, iters, 1, ss, false), one = time_us(body, iters, 1, ss, true),
                  four = time_us(body, iters, kStreams, ss, true);
      CHECK_CUDA(cudaDeviceSynchronize());
      CHECK_CUDA(cudaMemcpy(out.data(), y, ny * 2, cudaMemcpyDeviceToHost));
      std::printf("  %-20s %7.2f / %7.2f / %7.2f us  hash %016llx\n", fused ? "bias + hard-swish" : "no epilogue",
                  eager, one, four, static_cast<unsigned long long>(steadyocr::hash_bytes(out.data(), ny * 2)));
    }
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaFree(w));
    CHECK_CUDA(cudaFree(b));
    CHECK_CUDA(cudaFree(y));
  }
  return 0;
}

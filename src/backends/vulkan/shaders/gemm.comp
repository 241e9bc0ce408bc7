#version 450
// Tiled GEMM, 64x64 output tiles, 16-deep K steps through shared memory, 4x4 outputs per invocation.
// Compiled twice:
//  - MatMul (default): C[b] = A[b] (M x K, row-major) * B[b] (K x N, row-major); per batch b the host gives the
//    element offsets of A and B (broadcast batches repeat an offset); C is contiguous, batch after batch.
//    p: 0 M, 1 N, 2 K, 3 batches, then (a_off, b_off) per batch from 4.
//  - CONV: a convolution as an implicit GEMM (no im2col buffer): for batch item nb and group g (z = nb*G + g),
//    A = the group's weights (M/G x K, K = C/G*KH*KW), B(k, n) = x[nb, g*C/G + c, oy*sh - pt + ky*dh,
//    ox*sw - pl + kx*dw]) (0 outside), k = (c*KH + ky)*KW + kx, n = oy*OW + ox; epilogue bias, residual, act.
//    p: 0 N, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 dh, 12 dw, 13 pt, 14 pl, 15 group,
//       16 has_bias, 17 has_residual, 18 act, 19 alpha, 20 beta
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer A { ACT a[]; };  // MatMul: A; CONV: x
layout(std430, set = 0, binding = 2) readonly buffer B { ACT b[]; };  // MatMul: B; CONV: weights
layout(std430, set = 0, binding = 3) readonly buffer Bias { ACT bias[]; };
layout(std430, set = 0, binding = 4) readonly buffer Res { ACT res[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { ACT y[]; };

shared float As[16][64];
shared float Bs[16][64];

void main() {
  uint t = gl_LocalInvocationID.x;
  uint tx = t % 16u, ty = t / 16u;
  uint n0 = gl_WorkGroupID.x * 64u, m0 = gl_WorkGroupID.y * 64u, z = gl_WorkGroupID.z;
#ifdef CONV
  uint C = pu(1), H = pu(2), W = pu(3), Mall = pu(4), OH = pu(5), OW = pu(6), KH = pu(7), KW = pu(8);
  int sh = pi(9), sw = pi(10), dh = pi(11), dw = pi(12), pt = pi(13), pl = pi(14);
  uint G = pu(15);
  uint cg = C / G, M = Mall / G, N = OH * OW, K = cg * KH * KW;
  uint nb = z / G, g = z % G;
  uint xbase = (nb * C + g * cg) * H * W;
  uint wbase = g * M * K;
#else
  uint M = pu(0), N = pu(1), K = pu(2);
  uint aoff = pu(4u + 2u * z), boff = pu(5u + 2u * z);
#endif
  float acc[4][4];
  [[unroll]] for (uint i = 0u; i < 4u; ++i)
    [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] = 0.0;

  for (uint k0 = 0u; k0 < K; k0 += 16u) {
    // A tile: 64 rows x 16 k; B tile: 16 k x 64 columns; 4 elements each per invocation.
    [[unroll]] for (uint r = 0u; r < 4u; ++r) {
      uint e = t + r * 256u;
      uint am = e / 16u, ak = e % 16u;
      uint gm = m0 + am, gk = k0 + ak;
      float av = 0.0;
#ifdef CONV
      if (gm < M && gk < K) av = float(b[wbase + gm * K + gk]);
#else
      if (gm < M && gk < K) av = float(a[aoff + gm * K + gk]);
#endif
      As[ak][am] = av;
      uint bk = e / 64u, bn = e % 64u;
      uint hk = k0 + bk, hn = n0 + bn;
      float bv = 0.0;
      if (hk < K && hn < N) {
#ifdef CONV
        uint kx = hk % KW, ky = (hk / KW) % KH, c = hk / (KW * KH);
        uint ox = hn % OW, oy = hn / OW;
        int iy = int(oy) * sh - pt + int(ky) * dh, ix = int(ox) * sw - pl + int(kx) * dw;
        if (iy >= 0 && iy < int(H) && ix >= 0 && ix < int(W)) bv = float(a[xbase + (c * H + uint(iy)) * W + uint(ix)]);
#else
        bv = float(b[boff + hk * N + hn]);
#endif
      }
      Bs[bk][bn] = bv;
    }
    barrier();
    [[unroll]] for (uint kk = 0u; kk < 16u; ++kk) {
      float av[4], bv[4];
      [[unroll]] for (uint i = 0u; i < 4u; ++i) av[i] = As[kk][ty + 16u * i];
      [[unroll]] for (uint j = 0u; j < 4u; ++j) bv[j] = Bs[kk][tx + 16u * j];
      [[unroll]] for (uint i = 0u; i < 4u; ++i)
        [[unroll]] for (uint j = 0u; j < 4u; ++j) acc[i][j] += av[i] * bv[j];
    }
    barrier();
  }

  [[unroll]] for (uint i = 0u; i < 4u; ++i) {
    uint gm = m0 + ty + 16u * i;
    if (gm >= M) continue;
    [[unroll]] for (uint j = 0u; j < 4u; ++j) {
      uint gn = n0 + tx + 16u * j;
      if (gn >= N) continue;
#ifdef CONV
      uint m = g * M + gm;
      uint o = (nb * Mall + m) * N + gn;
      float v = acc[i][j];
      if (pu(16) != 0u) v += float(bias[m]);
      if (pu(17) != 0u) v += float(res[o]);
      y[o] = ACT(activate(v, pu(18), pf(19), pf(20)));
#else
      y[z * M * N + gm * N + gn] = ACT(acc[i][j]);
#endif
    }
  }
}

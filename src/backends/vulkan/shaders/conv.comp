#version 450
// Direct 2-D convolution, NCHW, one invocation per output element (depthwise and small grouped convolutions; dense
// ones go through gemm.comp as an implicit GEMM). y = act(conv(x, w) + bias + residual).
// p: 0 N, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 dh, 12 dw, 13 pt, 14 pl, 15 group,
//    16 has_bias, 17 has_residual, 18 act, 19 alpha, 20 beta, 21 n (outputs)
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt { ACT w[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { ACT bias[]; };
layout(std430, set = 0, binding = 4) readonly buffer Res { ACT res[]; };
layout(std430, set = 0, binding = 5) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(21)) return;
  uint C = pu(1), H = pu(2), W = pu(3), M = pu(4), OH = pu(5), OW = pu(6), KH = pu(7), KW = pu(8);
  int sh = pi(9), sw = pi(10), dh = pi(11), dw = pi(12), pt = pi(13), pl = pi(14);
  uint G = pu(15);
  uint ox = i % OW;
  uint oy = (i / OW) % OH;
  uint m = (i / (OW * OH)) % M;
  uint n = i / (OW * OH * M);
  uint cg = C / G, mg = M / G;
  uint g = m / mg;
  float acc = 0.0;
  int iy0 = int(oy) * sh - pt, ix0 = int(ox) * sw - pl;
  for (uint c = 0u; c < cg; ++c) {
    uint xc = (n * C + g * cg + c) * H * W;
    uint wc = (m * cg + c) * KH * KW;
    for (uint ky = 0u; ky < KH; ++ky) {
      int iy = iy0 + int(ky) * dh;
      if (iy < 0 || iy >= int(H)) continue;
      for (uint kx = 0u; kx < KW; ++kx) {
        int ix = ix0 + int(kx) * dw;
        if (ix < 0 || ix >= int(W)) continue;
        acc += float(x[xc + uint(iy) * W + uint(ix)]) * float(w[wc + ky * KW + kx]);
      }
    }
  }
  if (pu(16) != 0u) acc += float(bias[m]);
  if (pu(17) != 0u) acc += float(res[i]);
  y[i] = ACT(activate(acc, pu(18), pf(19), pf(20)));
}

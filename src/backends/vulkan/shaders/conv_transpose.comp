#version 450
// Transposed 2-D convolution, NCHW, gathered per output element. Weights [C, M/group, KH, KW].
// p: 0 N, 1 C, 2 H, 3 W, 4 M, 5 OH, 6 OW, 7 KH, 8 KW, 9 sh, 10 sw, 11 dh, 12 dw, 13 pt, 14 pl, 15 group,
//    16 has_bias, 17 act, 18 alpha, 19 beta, 20 n
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) readonly buffer Wt { ACT w[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bias { ACT bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(20)) return;
  uint C = pu(1), H = pu(2), W = pu(3), M = pu(4), OH = pu(5), OW = pu(6), KH = pu(7), KW = pu(8);
  int sh = pi(9), sw = pi(10), dh = pi(11), dw = pi(12), pt = pi(13), pl = pi(14);
  uint G = pu(15);
  uint ox = i % OW;
  uint oy = (i / OW) % OH;
  uint m = (i / (OW * OH)) % M;
  uint n = i / (OW * OH * M);
  uint cg = C / G, mg = M / G;
  uint g = m / mg, mm = m % mg;
  float acc = 0.0;
  for (uint ky = 0u; ky < KH; ++ky) {
    int ty = int(oy) + pt - int(ky) * dh;
    if (ty < 0 || ty % sh != 0) continue;
    int iy = ty / sh;
    if (iy >= int(H)) continue;
    for (uint kx = 0u; kx < KW; ++kx) {
      int tx = int(ox) + pl - int(kx) * dw;
      if (tx < 0 || tx % sw != 0) continue;
      int ix = tx / sw;
      if (ix >= int(W)) continue;
      for (uint c = 0u; c < cg; ++c) {
        uint ci = g * cg + c;
        acc += float(x[((n * C + ci) * H + uint(iy)) * W + uint(ix)]) * float(w[((ci * mg + mm) * KH + ky) * KW + kx]);
      }
    }
  }
  if (pu(16) != 0u) acc += float(bias[m]);
  y[i] = ACT(activate(acc, pu(17), pf(18), pf(19)));
}

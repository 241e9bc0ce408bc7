#version 450
// Resize of the two trailing axes of NCHW from tables the host computed exactly as the reference does.
// p: 0 planes, 1 IH, 2 IW, 3 OH, 4 OW, 5 linear (1) or nearest (0), 6 n, then tables:
// nearest: sy[OH], sx[OW]; linear: y0[OH], y1[OH], ty[OH] (float), x0[OW], x1[OW], tx[OW] (float). Table base 7.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(6)) return;
  uint IH = pu(1), IW = pu(2), OH = pu(3), OW = pu(4);
  uint ox = i % OW, oy = (i / OW) % OH, pl = i / (OW * OH);
  uint base = pl * IH * IW;
  if (pu(5) == 0u) {
    y[i] = ACT(x[base + pu(7u + oy) * IW + pu(7u + OH + ox)]);
    return;
  }
  uint t = 7u;
  uint r0 = pu(t + oy), r1 = pu(t + OH + oy);
  float ty = pf(t + 2u * OH + oy);
  uint tx0 = t + 3u * OH;
  uint c0 = pu(tx0 + ox), c1 = pu(tx0 + OW + ox);
  float tx = pf(tx0 + 2u * OW + ox);
  float a = float(x[base + r0 * IW + c0]), b = float(x[base + r0 * IW + c1]);
  float c = float(x[base + r1 * IW + c0]), d = float(x[base + r1 * IW + c1]);
  float top = a + (b - a) * tx;
  float bot = c + (d - c) * tx;
  y[i] = ACT(top + (bot - top) * ty);
}

#version 450
// MaxPool / AveragePool, NCHW, ONNX windows as the reference computes them (pads outside the input; ceil_mode's
// extra window clipped to the padded input). p: 0 NC, 1 H, 2 W, 3 OH, 4 OW, 5 KH, 6 KW, 7 sh, 8 sw, 9 pt, 10 pl,
// 11 pb, 12 pr, 13 max (1) or average (0), 14 count_include_pad, 15 n
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(15)) return;
  int H = pi(1), W = pi(2), OH = pi(3), OW = pi(4), KH = pi(5), KW = pi(6);
  int ox = int(i) % OW, oy = (int(i) / OW) % OH;
  uint nc = i / uint(OW * OH);
  int y0 = oy * pi(7) - pi(9), y1 = min(y0 + KH, H + pi(11));
  int x0 = ox * pi(8) - pi(10), x1 = min(x0 + KW, W + pi(12));
  int vy0 = max(y0, 0), vy1 = min(y1, H), vx0 = max(x0, 0), vx1 = min(x1, W);
  uint base = nc * uint(H * W);
  if (pu(13) != 0u) {
    float m = uintBitsToFloat(0xff800000u);  // -inf
    for (int iy = vy0; iy < vy1; ++iy)
      for (int ix = vx0; ix < vx1; ++ix) m = max(m, float(x[base + uint(iy * W + ix)]));
    y[i] = ACT(m);
  } else {
    float s = 0.0;
    for (int iy = vy0; iy < vy1; ++iy)
      for (int ix = vx0; ix < vx1; ++ix) s += float(x[base + uint(iy * W + ix)]);
    int count = pu(14) != 0u ? (y1 - y0) * (x1 - x0) : max(vy1 - vy0, 0) * max(vx1 - vx0, 0);
    y[i] = ACT(count > 0 ? s / float(count) : 0.0);
  }
}

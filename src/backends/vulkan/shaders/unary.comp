#version 450
// y = f(x) elementwise. p: n, op, alpha, beta, channels, inner, table offset (per-channel scale then shift, for
// op 100: a BatchNorm folded on the host: y = x * scale[c] + shift[c], c = (i / inner) % channels).
// op: 0-5 the activations of common.glsl, 50 sqrt.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  uint n = pu(0);
  if (i >= n) return;
  uint op = pu(1);
  float v = float(x[i]);
  if (op == 100u) {
    uint c = (i / pu(5)) % pu(4);
    uint t = pu(6);
    y[i] = ACT(v * pf(t + c) + pf(t + pu(4) + c));
  } else if (op == 50u) {
    y[i] = ACT(sqrt(v));
  } else {
    y[i] = ACT(activate(v, op, pf(2), pf(3)));
  }
}

#version 450
// y = a op b with NumPy broadcasting. p: n, op, rank, dims[8], a_strides[8], b_strides[8] (0 on broadcast axes;
// element strides over the output's index). op: 0 add, 1 sub, 2 mul, 3 div, 4 pow.
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer A { ACT a[]; };
layout(std430, set = 0, binding = 2) readonly buffer B { ACT b[]; };
layout(std430, set = 0, binding = 3) writeonly buffer Y { ACT y[]; };

float power(float x, float e) {
  if (e == 2.0) return x * x;
  if (e == 1.0) return x;
  if (e == 0.0) return 1.0;
  if (e == 0.5) return sqrt(x);
  float r = pow(abs(x), e);
  if (x < 0.0) {
    if (floor(e) != e) return uintBitsToFloat(0x7fc00000u);  // NaN, as std::pow
    if (mod(e, 2.0) != 0.0) r = -r;
  }
  return r;
}

void main() {
  uint i = flat_id(256u);
  if (i >= pu(0)) return;
  uint rank = pu(2);
  uint rem = i, ao = 0u, bo = 0u;
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = pu(3u + uint(d));
    uint k = rem % dim;
    rem /= dim;
    ao += k * pu(11u + uint(d));
    bo += k * pu(19u + uint(d));
  }
  float u = float(a[ao]), v = float(b[bo]);
  float r;
  switch (pu(1)) {
    case 0u: r = u + v; break;
    case 1u: r = u - v; break;
    case 2u: r = u * v; break;
    case 3u: r = u / v; break;
    default: r = power(u, v); break;
  }
  y[i] = ACT(r);
}

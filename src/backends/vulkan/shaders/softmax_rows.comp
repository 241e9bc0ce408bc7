#version 450
// Softmax of contiguous rows (the last axis, e.g. the recogniser's 6625 classes): one workgroup per row, the max and
// the sum reduced in shared memory. p: 0 rows, 1 cols
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };
shared float part[256];

void main() {
  uint row = flat_group();
  if (row >= pu(0)) return;  // uniform per workgroup: the whole group leaves together
  uint cols = pu(1), t = gl_LocalInvocationID.x, base = row * cols;
  float m = uintBitsToFloat(0xff800000u);
  for (uint j = t; j < cols; j += 256u) m = max(m, float(x[base + j]));
  part[t] = m;
  barrier();
  [[unroll]] for (uint k = 128u; k > 0u; k >>= 1u) {
    if (t < k) part[t] = max(part[t], part[t + k]);
    barrier();
  }
  m = part[0];
  barrier();
  float s = 0.0;
  for (uint j = t; j < cols; j += 256u) s += exp(float(x[base + j]) - m);
  part[t] = s;
  barrier();
  [[unroll]] for (uint k = 128u; k > 0u; k >>= 1u) {
    if (t < k) part[t] += part[t + k];
    barrier();
  }
  float inv = 1.0 / part[0];
  for (uint j = t; j < cols; j += 256u) y[base + j] = ACT(exp(float(x[base + j]) - m) * inv);
}

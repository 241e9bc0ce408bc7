#version 450
// The mean of each contiguous row (GlobalAveragePool, ReduceMean over trailing axes): one workgroup per row.
// p: 0 rows, 1 cols
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };
shared float part[256];

void main() {
  uint row = flat_group();
  if (row >= pu(0)) return;
  uint cols = pu(1);
  uint t = gl_LocalInvocationID.x;
  float s = 0.0;
  for (uint j = t; j < cols; j += 256u) s += float(x[row * cols + j]);
  part[t] = s;
  barrier();
  [[unroll]] for (uint k = 128u; k > 0u; k >>= 1u) {
    if (t < k) part[t] += part[t + k];
    barrier();
  }
  if (t == 0u) y[row] = ACT(cols > 0u ? part[0] / float(cols) : 0.0);
}

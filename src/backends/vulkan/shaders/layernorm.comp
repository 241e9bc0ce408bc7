#version 450
// LayerNorm over contiguous rows: one workgroup per row, mean then variance in shared memory (two passes, as the
// reference). p: 0 rows, 1 cols, 2 epsilon, 3 has_bias
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) readonly buffer S { ACT scale[]; };
layout(std430, set = 0, binding = 3) readonly buffer Bi { ACT bias[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Y { ACT y[]; };
shared float part[256];

float row_sum(float v) {
  uint t = gl_LocalInvocationID.x;
  part[t] = v;
  barrier();
  [[unroll]] for (uint k = 128u; k > 0u; k >>= 1u) {
    if (t < k) part[t] += part[t + k];
    barrier();
  }
  float r = part[0];
  barrier();
  return r;
}

void main() {
  uint row = flat_group();
  if (row >= pu(0)) return;
  uint cols = pu(1), t = gl_LocalInvocationID.x, base = row * cols;
  float s = 0.0;
  for (uint j = t; j < cols; j += 256u) s += float(x[base + j]);
  float mean = row_sum(s) / float(cols);
  float q = 0.0;
  for (uint j = t; j < cols; j += 256u) {
    float d = float(x[base + j]) - mean;
    q += d * d;
  }
  float inv = 1.0 / sqrt(row_sum(q) / float(cols) + pf(2));
  bool has_bias = pu(3) != 0u;
  for (uint j = t; j < cols; j += 256u) {
    float v = (float(x[base + j]) - mean) * inv * float(scale[j]);
    y[base + j] = ACT(has_bias ? v + bias[j] : v);
  }
}

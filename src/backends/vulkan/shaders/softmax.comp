#version 450
// Softmax along one axis: one invocation per (outer, inner) lane. p: 0 outer, 1 axis length, 2 inner
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  uint outer = pu(0), L = pu(1), inner = pu(2);
  if (i >= outer * inner) return;
  uint base = (i / inner) * L * inner + i % inner;
  float m = uintBitsToFloat(0xff800000u);
  for (uint k = 0u; k < L; ++k) m = max(m, float(x[base + k * inner]));
  float s = 0.0;
  for (uint k = 0u; k < L; ++k) s += exp(float(x[base + k * inner]) - m);
  for (uint k = 0u; k < L; ++k) y[base + k * inner] = ACT(exp(x[base + k * inner] - m) / s);
}

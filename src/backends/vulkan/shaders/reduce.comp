#version 450
// ReduceMean over any axes: one invocation per output element. The output index runs over the kept axes
// (kdims/kstrides: their sizes and input strides), the inner loop over the reduced ones (rdims/rstrides).
// p: 0 n, 1 krank, 2 rrank, 3 rcount, 4.. kdims[8], 12.. kstrides[8], 20.. rdims[8], 28.. rstrides[8]
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { ACT x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { ACT y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(0)) return;
  uint rem = i, base = 0u;
  for (int d = int(pu(1)) - 1; d >= 0; --d) {
    uint dim = pu(4u + uint(d));
    base += (rem % dim) * pu(12u + uint(d));
    rem /= dim;
  }
  uint count = pu(3), rrank = pu(2);
  float s = 0.0;
  for (uint r = 0u; r < count; ++r) {
    uint q = r, off = base;
    for (int d = int(rrank) - 1; d >= 0; --d) {
      uint dim = pu(20u + uint(d));
      off += (q % dim) * pu(28u + uint(d));
      q /= dim;
    }
    s += float(x[off]);
  }
  y[i] = ACT(count > 0u ? s / float(count) : 0.0);
}

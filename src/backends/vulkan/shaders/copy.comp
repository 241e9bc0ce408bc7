#version 450
// The layout ops (Transpose, Slice, Concat parts, Cast f32->f32, Reshape where it cannot be a view) as one strided
// copy of 32-bit words (16-bit elements with F16): for every index of the iteration dims, out[out_base + sum(i*os)] = in[in_base + sum(i*is)].
// p: n, rank, in_base, out_base, dims[8], in_strides[8] (signed: negative Slice steps), out_strides[8].
layout(local_size_x = 256) in;
#include "common.glsl"
// With F16 (fp16 tensors of the vulkan-fp16 backend) the elements are 16-bit.
#ifdef F16
#define WORD uint16_t
#else
#define WORD uint
#endif
layout(std430, set = 0, binding = 1) readonly buffer X { WORD x[]; };
layout(std430, set = 0, binding = 2) buffer Y { WORD y[]; };

void main() {
  uint i = flat_id(256u);
  if (i >= pu(0)) return;
  uint rank = pu(1);
  uint rem = i;
  int io = pi(2);
  uint oo = pu(3);
  for (int d = int(rank) - 1; d >= 0; --d) {
    uint dim = pu(4u + uint(d));
    uint k = rem % dim;
    rem /= dim;
    io += int(k) * pi(12u + uint(d));
    oo += k * pu(20u + uint(d));
  }
  y[oo] = x[uint(io)];
}

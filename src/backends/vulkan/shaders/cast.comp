#version 450
// Cast between f32 (0), i32 (1), i64 (2), u8 (3) and bool (4), with the reference's rules: float -> integer
// truncates toward zero and saturates (NaN -> 0), anything -> bool is != 0, i64 -> narrower clamps. Elements are
// read and written as 32-bit words: an i64 is two words (low first), u8/bool four to a word, so a byte-typed output
// is written one word (four elements) per invocation. p: 0 n (elements), 1 from, 2 to
layout(local_size_x = 256) in;
#include "common.glsl"
layout(std430, set = 0, binding = 1) readonly buffer X { uint x[]; };
layout(std430, set = 0, binding = 2) writeonly buffer Y { uint y[]; };

const float kTwo32 = 4294967296.0;

bool is_int(uint t) { return t == 1u || t == 2u || t == 3u || t == 4u; }

// The element as a float (f32 sources and the value of integer ones).
float read_f(uint t, uint i) {
  if (t == 0u) return uintBitsToFloat(x[i]);
  if (t == 1u) return float(int(x[i]));
  if (t == 2u) {
    uint lo = x[2u * i], hi = x[2u * i + 1u];
    if (hi == (int(lo) < 0 ? 0xffffffffu : 0u)) return float(int(lo));  // fits 32 bits: exact rounding
    return float(int(hi)) * kTwo32 + float(lo);
  }
  return float((x[i / 4u] >> (8u * (i % 4u))) & 0xffu);
}

// An integer source as (low, high) words of its i64 value.
uvec2 read_i(uint t, uint i) {
  if (t == 1u) return uvec2(x[i], int(x[i]) < 0 ? 0xffffffffu : 0u);
  if (t == 2u) return uvec2(x[2u * i], x[2u * i + 1u]);
  return uvec2((x[i / 4u] >> (8u * (i % 4u))) & 0xffu, 0u);
}

bool is_zero(uint t, uint i) {
  if (t == 0u) return uintBitsToFloat(x[i]) == 0.0;  // -0 too
  uvec2 v = read_i(t, i);
  return v.x == 0u && v.y == 0u;
}

int clamp_i32(uint t, uint i) {
  if (t == 0u) {
    float f = uintBitsToFloat(x[i]);
    if (isnan(f)) return 0;
    f = trunc(f);
    if (f <= -2147483648.0) return int(0x80000000u);
    if (f >= 2147483647.0) return 0x7fffffff;
    return int(f);
  }
  uvec2 v = read_i(t, i);
  int hi = int(v.y);
  if (hi > 0 || (hi == 0 && v.x > 0x7fffffffu)) return 0x7fffffff;
  if (hi < -1 || (hi == -1 && v.x < 0x80000000u)) return int(0x80000000u);
  return int(v.x);
}

uint clamp_u8(uint t, uint i) {
  if (t == 0u) {
    float f = uintBitsToFloat(x[i]);
    if (isnan(f)) return 0u;
    return uint(clamp(trunc(f), 0.0, 255.0));
  }
  uvec2 v = read_i(t, i);
  if (int(v.y) < 0) return 0u;
  if (v.y > 0u || v.x > 255u) return 255u;
  return v.x;
}

uvec2 to_i64(uint t, uint i) {
  if (t != 0u) return read_i(t, i);
  float f = uintBitsToFloat(x[i]);
  if (isnan(f)) return uvec2(0u);
  f = trunc(f);
  if (f >= 9.2233720368547758e18) return uvec2(0xffffffffu, 0x7fffffffu);
  if (f <= -9.2233720368547758e18) return uvec2(0u, 0x80000000u);
  if (abs(f) < 2147483648.0) {
    int v = int(f);
    return uvec2(uint(v), v < 0 ? 0xffffffffu : 0u);
  }
  float hi = floor(f / kTwo32);
  float lo = f - hi * kTwo32;  // exact: floats this large are multiples of 256
  return uvec2(uint(lo), uint(int(hi)));
}

void main() {
  uint w = flat_id(256u);
  uint n = pu(0), from = pu(1), to = pu(2);
  if (to == 3u || to == 4u) {
    if (w * 4u >= n) return;
    uint word = 0u;
    for (uint k = 0u; k < 4u; ++k) {
      uint i = w * 4u + k;
      if (i >= n) break;
      uint b = to == 4u ? (is_zero(from, i) ? 0u : 1u) : clamp_u8(from, i);
      word |= b << (8u * k);
    }
    y[w] = word;
    return;
  }
  uint i = w;
  if (i >= n) return;
  if (to == 0u) {
    y[i] = floatBitsToUint(read_f(from, i));
  } else if (to == 1u) {
    y[i] = uint(clamp_i32(from, i));
  } else {
    uvec2 v = to_i64(from, i);
    y[2u * i] = v.x;
    y[2u * i + 1u] = v.y;
  }
}

#include "core/content_hash.h"

#include <cstring>

namespace steadyocr {

uint64_t hash_bytes(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  constexpr uint64_t kM1 = 0x9E3779B97F4A7C15ull, kM2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t h[4] = {seed ^ kM1, seed ^ kM2, seed + n, ~seed};
  auto mix = [](uint64_t acc, uint64_t w) {
    acc ^= w * kM2;
    acc = (acc << 31) | (acc >> 33);
    return acc * kM1;
  };
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t w[4];
    std::memcpy(w, p + i, 32);
    for (int k = 0; k < 4; ++k) h[k] = mix(h[k], w[k]);
  }
  uint64_t r = h[0] ^ (h[1] * 3) ^ (h[2] * 5) ^ (h[3] * 7) ^ (n * kM1);
  for (; i < n; ++i) r = (r ^ p[i]) * 0x100000001B3ull;
  r ^= r >> 33;
  r *= 0xFF51AFD7ED558CCDull;
  r ^= r >> 33;
  return r;
}

}  // namespace steadyocr

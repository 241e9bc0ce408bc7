// The content hash of the project: every backend keys its weight caches on it (folded weights are new tensors for
// every input shape, so a cache keyed on storage would miss on every new shape; keyed on content it hits), and the
// caches kept on disk key model files, inputs and builds on it (core/disk_cache.h). Not cryptographic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace steadyocr {

// Four independent multiply/rotate lanes over 32-byte strides (several GB/s; weights are a few MiB per model).
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0);
inline uint64_t hash_bytes(std::string_view bytes, uint64_t seed = 0) {
  return hash_bytes(bytes.data(), bytes.size(), seed);
}

}  // namespace steadyocr

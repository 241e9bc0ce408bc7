// The content hash every backend keys its weight caches on: folded weights are new tensors for every input shape
// (the passes run per shape), so a cache keyed on storage would miss on every new shape; keyed on content it hits.
#pragma once

#include <cstddef>
#include <cstdint>

namespace steadyocr::common {

// Four independent multiply/rotate lanes over 32-byte strides (several GB/s; weights are a few MiB per model).
uint64_t hash_bytes(const void* data, size_t n, uint64_t seed = 0);

}  // namespace steadyocr::common

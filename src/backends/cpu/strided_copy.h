// Internal to the oneDNN CPU backend: a byte-wise strided copy for ops on any dtype (Slice, Transpose and
// Concat of integer tensors; f32 goes through oneDNN where it can).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace steadyocr::cpu {

// Copies a tensor of `dims` whose source elements are `src_strides` apart (elements, may be negative) into
// dense `dst`; `elem` bytes per element.
void strided_copy(const uint8_t* src, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dims,
                  uint8_t* dst, size_t elem);

}  // namespace steadyocr::cpu

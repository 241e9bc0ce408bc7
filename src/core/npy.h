// NumPy .npy files (v1/v2, little-endian, C order): f32, f16, i64, i32, u8, bool.
#pragma once

#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr {

// Reads an .npy file; a file larger than `max_bytes` of data is refused before allocation.
Result<Tensor> load_npy(const std::string& path, size_t max_bytes = size_t{4} << 30);
Status save_npy(const std::string& path, const Tensor& t);

}  // namespace steadyocr

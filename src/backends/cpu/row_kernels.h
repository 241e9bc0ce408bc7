// Internal to the oneDNN CPU backend: our vectorised row kernels, shared by the per-shape plan's ops and the
// symbolic plan's (backends/cpu/symbolic_plan.h).
#pragma once

#include <cstdint>

namespace steadyocr::cpu {

// Softmax over rows of `len` contiguous floats.
void softmax_rows(const float* x, float* y, int64_t rows, int64_t len);
// Softmax over `len` rows of a [len, inner] block, vectorised across `inner`; `tmp` holds 2 * inner floats.
void softmax_strided(const float* x, float* y, int64_t len, int64_t inner, float* tmp);
// LayerNormalization of rows of `cols` floats: population variance, then scale and (when not null) bias per column.
void layernorm_rows(const float* x, float* y, int64_t rows, int64_t cols, const float* scale, const float* bias,
                    float eps);

}  // namespace steadyocr::cpu

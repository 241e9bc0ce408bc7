// Host-side conversion between float and the 16-bit float formats (IEEE half, bfloat16), for weights and for
// reading reduced-precision tensors on the host.
#pragma once

#include <cstdint>

namespace steadyocr {

// Round to nearest even; overflow gives infinity, NaN stays NaN.
uint16_t float_to_half(float f);
float half_to_float(uint16_t h);
// bfloat16 is the upper half of a float: widening is exact.
float bf16_to_float(uint16_t b);

}  // namespace steadyocr

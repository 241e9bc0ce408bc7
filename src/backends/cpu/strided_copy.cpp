#include "backends/cpu/strided_copy.h"

#include <cstring>

#include "backends/cpu/cpu_parallel.h"

namespace steadyocr::cpu {

void strided_copy(const uint8_t* src, const std::vector<int64_t>& src_strides, const std::vector<int64_t>& dims,
                  uint8_t* dst, size_t elem) {
  const int rank = static_cast<int>(dims.size());
  int64_t total = 1;
  for (int64_t d : dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  const int64_t inner = dims[rank - 1], rows = total / inner, inner_stride = src_strides[rank - 1];
  const auto es = static_cast<int64_t>(elem);
  parallel_chunks(
      rows,
      [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t rem = r, off = 0;
          for (int d = rank - 2; d >= 0; --d) {
            off += (rem % dims[d]) * src_strides[d];
            rem /= dims[d];
          }
          const uint8_t* s = src + off * es;
          uint8_t* o = dst + r * inner * es;
          if (inner_stride == 1) {
            std::memcpy(o, s, static_cast<size_t>(inner * es));
          } else {
            for (int64_t i = 0; i < inner; ++i) std::memcpy(o + i * es, s + i * inner_stride * es, elem);
          }
        }
      },
      std::max<int64_t>(1, 4096 / std::max<int64_t>(inner, 1)));
}

}  // namespace steadyocr::cpu

#include "pipeline/lanczos.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <vector>

// The row pass is compiled for AVX-512, AVX2 and baseline x86-64 and picked at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SO_LANCZOS_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define SO_LANCZOS_CLONES
#endif

namespace steadyocr::pipeline {

namespace {

constexpr int kTaps = 8;
constexpr int kCoefBits = 11;  // weights in units of 1/2048
constexpr double kPi = 3.14159265358979323846;

// The Lanczos-4 kernel's 8 weights for a pixel centre `x` (0 <= x < 1) past the 4th tap, normalised to sum 1.
// Written with OpenCV's types and order of operations (float x, double trigonometry, float sum) so the weights round
// to the same 11-bit integers: sin(pi (x+3-i) / 4) for every i is one of +-sin, +-cos of the first tap's angle, or
// their sum or difference over sqrt(2).
void lanczos4_weights(float x, float* w) {
  constexpr double r = 0.70710678118654752440084436210485;
  static constexpr double kSinCos[kTaps][2] = {{1, 0}, {-r, -r}, {0, 1}, {r, -r}, {-1, 0}, {r, r}, {0, -1}, {-r, r}};
  const double a0 = -(x + 3) * kPi * 0.25;
  const double s0 = std::sin(a0), c0 = std::cos(a0);
  float sum = 0.f;
  for (int i = 0; i < kTaps; ++i) {
    const float t = x + 3 - i;
    if (std::fabs(t) >= 1e-6f) {
      const double a = -t * kPi * 0.25;
      w[i] = static_cast<float>((kSinCos[i][0] * s0 + kSinCos[i][1] * c0) / (a * a));
    } else {
      w[i] = 1e30f;  // the centre on a tap (x = 0, or x = 1 after rounding): that tap alone, once normalised
    }
    sum += w[i];
  }
  sum = 1.f / sum;
  for (int i = 0; i < kTaps; ++i) w[i] *= sum;
}

// One axis of the resize: for every output index its 8 source indices (clamped to the picture: the edge repeats)
// and 8 fixed-point weights.
struct Axis {
  std::vector<int> index;       // n * 8
  std::vector<int16_t> weight;  // n * 8
};

Axis make_axis(int src_n, int dst_n) {
  Axis a;
  a.index.resize(static_cast<size_t>(dst_n) * kTaps);
  a.weight.resize(static_cast<size_t>(dst_n) * kTaps);
  const double scale = 1.0 / (static_cast<double>(dst_n) / src_n);
  float w[kTaps];
  for (int d = 0; d < dst_n; ++d) {
    float f = static_cast<float>((d + 0.5) * scale - 0.5);
    const int s = static_cast<int>(std::floor(f));
    f -= static_cast<float>(s);
    lanczos4_weights(f, w);
    for (int j = 0; j < kTaps; ++j) {
      // Round half to even, as the FPU does by default (OpenCV's cvRound), then clamp to int16.
      const long q = std::lrint(w[j] * static_cast<float>(1 << kCoefBits));
      a.weight[static_cast<size_t>(d) * kTaps + j] = static_cast<int16_t>(std::clamp<long>(q, INT16_MIN, INT16_MAX));
      a.index[static_cast<size_t>(d) * kTaps + j] = std::clamp(s - 3 + j, 0, src_n - 1);
    }
  }
  return a;
}

// The column pass over the used source rows at once. `t` holds them transposed, a block of cn * n int32 per source
// column (channel-major, then row; n a multiple of 16), so each output column is 8 weighted sums of whole blocks:
// vectorised over rows and channels, where a row at a time would gather 8 scattered pixels per output.
// acc[c * n + i] = sum_j weight[x][j] * t[index[x][j]][c * n + i], written to out row i at x * cn + c.
SO_LANCZOS_CLONES void column_pass(const int32_t* t, int block, const int* index, const int16_t* weight, int dst_w,
                                   int cn, int n, int rows, int32_t* acc, int32_t* out, size_t out_step) {
  for (int x = 0; x < dst_w; ++x) {
    const int* idx = index + static_cast<size_t>(x) * kTaps;
    const int16_t* w = weight + static_cast<size_t>(x) * kTaps;
    const int32_t *t0 = t + static_cast<size_t>(idx[0]) * block, *t1 = t + static_cast<size_t>(idx[1]) * block;
    const int32_t *t2 = t + static_cast<size_t>(idx[2]) * block, *t3 = t + static_cast<size_t>(idx[3]) * block;
    const int32_t *t4 = t + static_cast<size_t>(idx[4]) * block, *t5 = t + static_cast<size_t>(idx[5]) * block;
    const int32_t *t6 = t + static_cast<size_t>(idx[6]) * block, *t7 = t + static_cast<size_t>(idx[7]) * block;
    const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7];
    for (int k = 0; k < block; ++k) {
      acc[k] = t0[k] * w0 + t1[k] * w1 + t2[k] * w2 + t3[k] * w3 + t4[k] * w4 + t5[k] * w5 + t6[k] * w6 + t7[k] * w7;
    }
    for (int c = 0; c < cn; ++c) {
      const int32_t* a = acc + static_cast<size_t>(c) * n;
      int32_t* o = out + static_cast<size_t>(x) * cn + c;
      for (int i = 0; i < rows; ++i) o[static_cast<size_t>(i) * out_step] = a[i];
    }
  }
}

// The row pass of one output row: the 8 column-passed rows weighted, rounded once, clamped to a byte. The sums fit
// int32: the largest, 255 * (2780^2 + 732^2) + 2^21 = 2.11e9 < 2^31, comes of a picture whose light and dark pixels
// follow the signs of the weights in both directions at half-pixel centres (2780 and 732: the positive and negative
// weights' sums there, in 1/2048; tests/pipeline/test_lanczos.cpp reads that picture).
SO_LANCZOS_CLONES void row_pass(const int32_t* const* rows, const int16_t* w, int n, uint8_t* out) {
  const int32_t *r0 = rows[0], *r1 = rows[1], *r2 = rows[2], *r3 = rows[3];
  const int32_t *r4 = rows[4], *r5 = rows[5], *r6 = rows[6], *r7 = rows[7];
  const int32_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], w4 = w[4], w5 = w[5], w6 = w[6], w7 = w[7];
  constexpr int kShift = 2 * kCoefBits;
  for (int i = 0; i < n; ++i) {
    const int32_t v =
        r0[i] * w0 + r1[i] * w1 + r2[i] * w2 + r3[i] * w3 + r4[i] * w4 + r5[i] * w5 + r6[i] * w6 + r7[i] * w7;
    const int32_t q = (v + (1 << (kShift - 1))) >> kShift;
    out[i] = static_cast<uint8_t>(q < 0 ? 0 : q > 255 ? 255 : q);
  }
}

void resize_any(const cv::Mat& src, cv::Mat& dst) {
  const int sw = src.cols, sh = src.rows, dw = dst.cols, dh = dst.rows, cn = src.channels();
  const Axis ax = make_axis(sw, dw), ay = make_axis(sh, dh);
  // The source rows some output row reads (all of them unless the picture shrinks by more than 8 / 1), in order.
  std::vector<int> slot(static_cast<size_t>(sh), -1);
  for (int idx : ay.index) slot[static_cast<size_t>(idx)] = 0;
  std::vector<int> used;
  for (int y = 0; y < sh; ++y) {
    if (slot[static_cast<size_t>(y)] == 0) {
      slot[static_cast<size_t>(y)] = static_cast<int>(used.size());
      used.push_back(y);
    }
  }
  const int rows = static_cast<int>(used.size());
  const int n = (rows + 15) / 16 * 16;
  const int block = cn * n;
  // The used rows transposed: per source column a block of cn * n (channel-major, then row; the padding is 0).
  // Scratch memory is not cleared: every element read is written first.
  const auto t = std::make_unique_for_overwrite<int32_t[]>(static_cast<size_t>(sw) * block);
  for (int x = 0; x < sw; ++x) {
    for (int c = 0; c < cn; ++c) {
      int32_t* b = t.get() + static_cast<size_t>(x) * block + static_cast<size_t>(c) * n;
      std::fill(b + rows, b + n, 0);
    }
  }
  for (int i = 0; i < rows; ++i) {
    const uint8_t* p = src.ptr<uint8_t>(used[static_cast<size_t>(i)]);
    for (int x = 0; x < sw; ++x) {
      int32_t* b = t.get() + static_cast<size_t>(x) * block + i;
      for (int c = 0; c < cn; ++c) b[static_cast<size_t>(c) * n] = p[x * cn + c];
    }
  }
  const size_t row_n = static_cast<size_t>(dw) * cn;
  const auto passed = std::make_unique_for_overwrite<int32_t[]>(row_n * static_cast<size_t>(rows));
  const auto acc = std::make_unique_for_overwrite<int32_t[]>(static_cast<size_t>(block));
  column_pass(t.get(), block, ax.index.data(), ax.weight.data(), dw, cn, n, rows, acc.get(), passed.get(), row_n);
  const int32_t* r[kTaps];
  for (int y = 0; y < dh; ++y) {
    for (int k = 0; k < kTaps; ++k) {
      r[k] = passed.get() + row_n * slot[static_cast<size_t>(ay.index[static_cast<size_t>(y) * kTaps + k])];
    }
    row_pass(r, &ay.weight[static_cast<size_t>(y) * kTaps], static_cast<int>(row_n), dst.ptr<uint8_t>(y));
  }
}

}  // namespace

void lanczos4_resize(const cv::Mat& src, cv::Mat& dst, cv::Size size) {
  if (src.depth() != CV_8U || src.channels() < 1 || src.channels() > 4 || src.empty()) {
    throw std::invalid_argument("lanczos4_resize: wants a non-empty 8-bit picture of 1 to 4 channels");
  }
  if (size.width <= 0 || size.height <= 0) throw std::invalid_argument("lanczos4_resize: empty output size");
  if (dst.data == src.data) dst = cv::Mat();  // in place is not supported: the source is read after dst is written
  dst.create(size, src.type());
  resize_any(src, dst);
}

}  // namespace steadyocr::pipeline

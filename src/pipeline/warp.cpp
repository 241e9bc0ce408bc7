#include "pipeline/warp.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace steadyocr::pipeline {

namespace {

constexpr int kTabBits = 5;               // source positions in 1/32 pixel
constexpr int kTab = 1 << kTabBits;       // 32
constexpr int kCoefBits = 15;             // weights in 1/32768
constexpr int kCoefOne = 1 << kCoefBits;  // 32768
constexpr int kBlock = 32;                // OpenCV's coordinate blocks: 32 x 32 pixels' worth

// The 1-D cubic convolution weights (a = -0.75) at fraction x, in OpenCV's float expressions.
void cubic_weights(float x, float* w) {
  const float a = -0.75f;
  w[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  w[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  w[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  w[3] = 1.f - w[0] - w[1] - w[2];
}

// The 4 x 4 fixed-point weights of each of the 32 x 32 sub-pixel positions (row fraction major), rounded; where the
// 16 do not sum to 2^15 exactly, the difference goes to the largest (sum too small) or smallest (too large) of the
// four weights to the lower right of the centre, as OpenCV's table does.
using WeightTable = std::array<std::array<int16_t, 16>, kTab * kTab>;

WeightTable make_weights() {
  float one_d[kTab][4];
  const float step = 1.f / kTab;
  for (int i = 0; i < kTab; ++i) cubic_weights(static_cast<float>(i) * step, one_d[i]);
  WeightTable t{};
  for (int i = 0; i < kTab; ++i) {
    for (int j = 0; j < kTab; ++j) {
      int16_t* w = t[static_cast<size_t>(i * kTab + j)].data();
      int sum = 0;
      for (int r = 0; r < 4; ++r) {
        for (int c = 0; c < 4; ++c) {
          const float v = one_d[i][r] * one_d[j][c];
          const long q = std::lrint(v * static_cast<float>(kCoefOne));
          w[r * 4 + c] = static_cast<int16_t>(std::clamp<long>(q, INT16_MIN, INT16_MAX));
          sum += w[r * 4 + c];
        }
      }
      if (sum != kCoefOne) {
        const int diff = sum - kCoefOne;
        int lo = 2 * 4 + 2, hi = 2 * 4 + 2;
        for (int r = 2; r < 4; ++r) {
          for (int c = 2; c < 4; ++c) {
            if (w[r * 4 + c] < w[lo]) {
              lo = r * 4 + c;
            } else if (w[r * 4 + c] > w[hi]) {
              hi = r * 4 + c;
            }
          }
        }
        int16_t& fix = diff < 0 ? w[hi] : w[lo];
        fix = static_cast<int16_t>(fix - diff);
      }
    }
  }
  return t;
}

const WeightTable& weights() {
  static const WeightTable kWeights = make_weights();
  return kWeights;
}

// Round half to even, as cvRound (the FPU's default mode); inline where SSE2 is (lrint is a libm call).
inline int round_to_int(double v) {
#if defined(__SSE2__)
  return _mm_cvtsd_si32(_mm_set_sd(v));
#else
  return static_cast<int>(std::lrint(v));
#endif
}

inline uint8_t round_to_byte(int32_t sum) {
  const int32_t q = (sum + (1 << (kCoefBits - 1))) >> kCoefBits;
  return static_cast<uint8_t>(q < 0 ? 0 : q > 255 ? 255 : q);
}

// Where an output pixel reads: its 4 x 4 neighbours from (sx, sy) and the weights of its 1/32 position.
struct Tap {
  int sx, sy, alpha;
};

// One output row's taps, as OpenCV's warpPerspective blocks compute them: per block of `block_w` columns, the
// position of its first column, plus the column's offset; then rounded to 1/32 pixel.
void row_taps(const double* m, int y, int width, int block_w, Tap* taps) {
  for (int bx = 0; bx < width; bx += block_w) {
    const double x0 = m[0] * bx + m[1] * y + m[2];
    const double y0 = m[3] * bx + m[4] * y + m[5];
    const double w0 = m[6] * bx + m[7] * y + m[8];
    const int bw = std::min(block_w, width - bx);
    for (int x1 = 0; x1 < bw; ++x1) {
      double w = w0 + m[6] * x1;
      w = w != 0 ? kTab / w : 0;
      const double lo = static_cast<double>(INT_MIN), hi = static_cast<double>(INT_MAX);
      const int X = round_to_int(std::max(lo, std::min(hi, (x0 + m[0] * x1) * w)));
      const int Y = round_to_int(std::max(lo, std::min(hi, (y0 + m[3] * x1) * w)));
      // The whole pixel as OpenCV stores it (int16, saturated), and one to the upper left of it: the first tap.
      taps[bx + x1] = {std::clamp(X >> kTabBits, INT16_MIN, INT16_MAX) - 1,
                       std::clamp(Y >> kTabBits, INT16_MIN, INT16_MAX) - 1, (Y & (kTab - 1)) * kTab + (X & (kTab - 1))};
    }
  }
}

// Any channel count, any position: near or past the edge the edge pixel repeats.
template <int CN>
void sample_any(const cv::Mat& src, const Tap& t, uint8_t* d) {
  const int16_t* wt = weights()[static_cast<size_t>(t.alpha)].data();
  int xs[4], ys[4];
  for (int i = 0; i < 4; ++i) {
    xs[i] = std::clamp(t.sx + i, 0, src.cols - 1) * CN;
    ys[i] = std::clamp(t.sy + i, 0, src.rows - 1);
  }
  int32_t acc[CN] = {};
  for (int r = 0; r < 4; ++r) {
    const uint8_t* s = src.ptr<uint8_t>(ys[r]);
    for (int c = 0; c < 4; ++c) {
      const int32_t wv = wt[r * 4 + c];
      for (int k = 0; k < CN; ++k) acc[k] += s[xs[c] + k] * wv;
    }
  }
  for (int k = 0; k < CN; ++k) d[k] = round_to_byte(acc[k]);
}

#if defined(__SSE2__)
// Three channels inside the picture, in SSE2: a row's 4 pixels are 12 bytes; rows are taken in pairs, their 16-bit
// values interleaved, and each pair of (row r, row r + 1) values multiplied by its pair of weights and summed
// (pmaddwd): three vectors of 4 int32 per row pair, 12 lanes (pixel, channel), then the 4 pixels of each channel
// added. The weights sit in that interleaved order: per 1/32 position, 2 row pairs x 3 vectors x 8 int16.
using PairTable = std::vector<int16_t>;

const PairTable& pair_weights() {
  static const PairTable kPairs = [] {
    const WeightTable& t = weights();
    PairTable p(t.size() * 48);
    for (size_t a = 0; a < t.size(); ++a) {
      for (int pair = 0; pair < 2; ++pair) {
        for (int lane = 0; lane < 12; ++lane) {
          const int col = lane / 3;  // pixel column of lane (pixel, channel)
          int16_t* dst = &p[a * 48 + static_cast<size_t>(pair) * 24 + static_cast<size_t>(lane) * 2];
          dst[0] = t[a][static_cast<size_t>(pair * 2 * 4 + col)];
          dst[1] = t[a][static_cast<size_t>((pair * 2 + 1) * 4 + col)];
        }
      }
    }
    return p;
  }();
  return kPairs;
}

inline __m128i load12(const uint8_t* p) {
  int32_t last;
  std::memcpy(&last, p + 8, 4);
  return _mm_unpacklo_epi64(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)), _mm_cvtsi32_si128(last));
}

inline void sample3_inside(const uint8_t* s, size_t step, const int16_t* pw, uint8_t* d) {
  const __m128i zero = _mm_setzero_si128();
  __m128i acc0 = zero, acc1 = zero, acc2 = zero;
  for (int pair = 0; pair < 2; ++pair, s += 2 * step, pw += 24) {
    const __m128i a = load12(s), b = load12(s + step);
    const __m128i alo = _mm_unpacklo_epi8(a, zero), ahi = _mm_unpackhi_epi8(a, zero);
    const __m128i blo = _mm_unpacklo_epi8(b, zero), bhi = _mm_unpackhi_epi8(b, zero);
    const __m128i* w = reinterpret_cast<const __m128i*>(pw);
    acc0 = _mm_add_epi32(acc0, _mm_madd_epi16(_mm_unpacklo_epi16(alo, blo), _mm_loadu_si128(w)));
    acc1 = _mm_add_epi32(acc1, _mm_madd_epi16(_mm_unpackhi_epi16(alo, blo), _mm_loadu_si128(w + 1)));
    acc2 = _mm_add_epi32(acc2, _mm_madd_epi16(_mm_unpacklo_epi16(ahi, bhi), _mm_loadu_si128(w + 2)));
  }
  // Lanes (pixel, channel): acc0 = B0 G0 R0 B1, acc1 = G1 R1 B2 G2, acc2 = R2 B3 G3 R3. Shifted so each pixel's three
  // channels sit in lanes 0-2, and added: B G R in lanes 0-2; then rounded, shifted and clamped to bytes.
  __m128i sum = _mm_add_epi32(acc0, _mm_or_si128(_mm_srli_si128(acc0, 12), _mm_slli_si128(acc1, 4)));
  sum = _mm_add_epi32(sum, _mm_or_si128(_mm_srli_si128(acc1, 8), _mm_slli_si128(acc2, 8)));
  sum = _mm_add_epi32(sum, _mm_srli_si128(acc2, 4));
  sum = _mm_srai_epi32(_mm_add_epi32(sum, _mm_set1_epi32(1 << (kCoefBits - 1))), kCoefBits);
  const __m128i bytes = _mm_packus_epi16(_mm_packs_epi32(sum, zero), zero);
  const int32_t bgr = _mm_cvtsi128_si32(bytes);
  std::memcpy(d, &bgr, 3);
}
#endif

template <int CN>
void warp_all(const cv::Mat& src, const double* m, cv::Mat& dst) {
  // OpenCV's blocks: at most 16 rows, then as many columns as make 1024 pixels (each block's row starts from its
  // first column's position).
  const int block_h = std::min(kBlock / 2, dst.rows);
  const int block_w = std::min(kBlock * kBlock / block_h, dst.cols);
  const unsigned inner_w = static_cast<unsigned>(std::max(src.cols - 3, 0));
  const unsigned inner_h = static_cast<unsigned>(std::max(src.rows - 3, 0));
  std::vector<Tap> taps(static_cast<size_t>(dst.cols));
#if defined(__SSE2__)
  const int16_t* pairs = CN == 3 ? pair_weights().data() : nullptr;
#endif
  for (int y = 0; y < dst.rows; ++y) {
    row_taps(m, y, dst.cols, block_w, taps.data());
    uint8_t* out = dst.ptr<uint8_t>(y);
    for (int x = 0; x < dst.cols; ++x) {
      const Tap& t = taps[static_cast<size_t>(x)];
#if defined(__SSE2__)
      if (CN == 3 && static_cast<unsigned>(t.sx) < inner_w && static_cast<unsigned>(t.sy) < inner_h) {
        sample3_inside(src.ptr<uint8_t>(t.sy) + static_cast<size_t>(t.sx) * 3, src.step, pairs + t.alpha * 48,
                       out + static_cast<size_t>(x) * 3);
        continue;
      }
#endif
      sample_any<CN>(src, t, out + static_cast<size_t>(x) * CN);
    }
  }
}

}  // namespace

cv::Mat warp_perspective_cubic(const cv::Mat& src, const cv::Mat& m, cv::Size size) {
  if (src.empty() || src.depth() != CV_8U || src.channels() < 1 || src.channels() > 4) {
    throw std::invalid_argument("warp_perspective_cubic: wants a non-empty 8-bit picture of 1 to 4 channels");
  }
  if (m.rows != 3 || m.cols != 3 || (m.type() != CV_64F && m.type() != CV_32F)) {
    throw std::invalid_argument("warp_perspective_cubic: wants a 3x3 CV_64F or CV_32F matrix");
  }
  if (size.width <= 0 || size.height <= 0) throw std::invalid_argument("warp_perspective_cubic: empty output size");
  cv::Mat forward, inverse;
  m.convertTo(forward, CV_64F);
  cv::invert(forward, inverse);  // as warpPerspective does (LU; zeros where the matrix is singular)
  double mi[9];
  for (int i = 0; i < 9; ++i) mi[i] = inverse.at<double>(i / 3, i % 3);
  cv::Mat dst(size, src.type());
  switch (src.channels()) {
    case 1:
      warp_all<1>(src, mi, dst);
      break;
    case 2:
      warp_all<2>(src, mi, dst);
      break;
    case 3:
      warp_all<3>(src, mi, dst);
      break;
    default:
      warp_all<4>(src, mi, dst);
      break;
  }
  return dst;
}

}  // namespace steadyocr::pipeline

// The symbolic plan's depthwise convolution (one filter per channel), channels-last: each output row is computed 16
// channels and 4 pixels at a time along contiguous channel vectors, its bias in the accumulator, and the activation
// and epilogue applied to the row while it is in cache. Sizes, strides and padding are run-time arguments.
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/fusion.h"
#include "backends/cpu/sym_gemm.h"
#include "backends/cpu/sym_ops.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

typedef float v16 __attribute__((vector_size(64)));

__attribute__((always_inline)) inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}
__attribute__((always_inline)) inline void store16(float* p, v16 v) {
  std::memcpy(p, &v, sizeof(v));
}

struct DwGeometry {
  int64_t H, W, C, OW;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// One output pixel's 16 channels from `cb` on, every tap checked against the borders.
__attribute__((always_inline)) inline v16 depthwise_pixel(const float* x, const float* w, v16 acc, int64_t oh,
                                                          int64_t ow, int64_t cb, const DwGeometry& g) {
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.sw - g.pw + j * g.dw;
      if (iw < 0 || iw >= g.W) continue;
      acc += load16(x + (ih * g.W + iw) * g.C + cb) * load16(w + (i * g.kw + j) * g.C + cb);
    }
  }
  return acc;
}

// Four output pixels whose every tap column is inside the input (the row's interior); KW taps per row unrolled so
// the four accumulators stay in registers.
template <int KW>
__attribute__((always_inline)) inline void depthwise_four(const float* x, const float* w, v16 b, float* y, int64_t oh,
                                                          int64_t ow, int64_t cb, const DwGeometry& g) {
  v16 a0 = b, a1 = b, a2 = b, a3 = b;
  const int64_t C = g.C, step = g.sw * C;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    const float* row = x + (ih * g.W + ow * g.sw - g.pw) * C + cb;
    const float* wr = w + i * KW * C + cb;
#pragma GCC unroll 8
    for (int j = 0; j < KW; ++j) {
      const v16 wv = load16(wr + j * C);
      const float* p = row + j * g.dw * C;
      a0 += load16(p) * wv;
      a1 += load16(p + step) * wv;
      a2 += load16(p + 2 * step) * wv;
      a3 += load16(p + 3 * step) * wv;
    }
  }
  store16(y + ow * C + cb, a0);
  store16(y + (ow + 1) * C + cb, a1);
  store16(y + (ow + 2) * C + cb, a2);
  store16(y + (ow + 3) * C + cb, a3);
}

// The epilogue of one block of 16 channels of a row, applied while the block is in L1.
struct RowTail {
  const RowEpilogue* epi;
  const float* residual;  // the row's residual, or null
};

// Stride 1: eight output pixels along W share their input columns, so each input vector is loaded once and feeds
// every output its taps reach (8 + KW - 1 loads for 8 * KW multiply-adds per kernel row, instead of 8 * KW).
template <int KW>
__attribute__((always_inline)) inline void depthwise_eight_s1(const float* x, const float* w, v16 b, float* y,
                                                              int64_t oh, int64_t ow, int64_t cb, const DwGeometry& g) {
  constexpr int kPix = 8;
  v16 acc[kPix];
  for (int t = 0; t < kPix; ++t) acc[t] = b;
  const int64_t C = g.C;
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    const float* row = x + (ih * g.W + ow - g.pw) * C + cb;
    v16 wv[KW];
    for (int j = 0; j < KW; ++j) wv[j] = load16(w + (i * KW + j) * C + cb);
#pragma GCC unroll 16
    for (int q = 0; q < kPix + KW - 1; ++q) {
      const v16 xv = load16(row + q * C);
#pragma GCC unroll 8
      for (int j = 0; j < KW; ++j) {
        const int t = q - j;
        if (t >= 0 && t < kPix) acc[t] += xv * wv[j];
      }
    }
  }
  for (int t = 0; t < kPix; ++t) store16(y + (ow + t) * C + cb, acc[t]);
}

template <int KW>
__attribute__((always_inline)) inline void depthwise_row_blocks(const float* x, const float* w, const float* bias,
                                                                float* y, int64_t oh, const DwGeometry& g,
                                                                int64_t full) {
  // Interior: ow whose first tap column is >= 0 and last < W.
  const int64_t lo = std::min(g.OW, (g.pw + g.sw - 1) / g.sw);
  const int64_t last_tap = (KW - 1) * g.dw - g.pw;  // iw = ow * sw + last_tap must stay < W
  const int64_t hi = std::max(lo, std::min(g.OW, g.W - last_tap > 0 ? (g.W - 1 - last_tap) / g.sw + 1 : 0));
  for (int64_t cb = 0; cb < full; cb += 16) {
    const v16 b = load16(bias + cb);
    int64_t ow = 0;
    for (; ow < lo; ++ow) store16(y + ow * g.C + cb, depthwise_pixel(x, w, b, oh, ow, cb, g));
    if (g.sw == 1 && g.dw == 1) {
      for (; ow + 8 <= hi; ow += 8) depthwise_eight_s1<KW>(x, w, b, y, oh, ow, cb, g);
    }
    for (; ow + 4 <= hi; ow += 4) depthwise_four<KW>(x, w, b, y, oh, ow, cb, g);
    for (; ow < g.OW; ++ow) store16(y + ow * g.C + cb, depthwise_pixel(x, w, b, oh, ow, cb, g));
  }
}

// One output row `oh` of one image: x is the image's [H, W, C], w the taps [kh*kw, C], y the row [OW, C].
SO_CPU_CLONES void depthwise_row(const float* x, const float* w, const float* bias, float* y, int64_t oh,
                                 const DwGeometry& g, const RowTail& tail) {
  const int64_t C = g.C, full = C / 16 * 16;
  if (g.kw == 3) {
    depthwise_row_blocks<3>(x, w, bias, y, oh, g, full);
  } else if (g.kw == 5) {
    depthwise_row_blocks<5>(x, w, bias, y, oh, g, full);
  } else if (g.kw == 7) {
    depthwise_row_blocks<7>(x, w, bias, y, oh, g, full);
  } else {
    for (int64_t cb = 0; cb < full; cb += 16) {
      const v16 b = load16(bias + cb);
      for (int64_t ow = 0; ow < g.OW; ++ow) {
        store16(y + ow * C + cb, depthwise_pixel(x, w, b, oh, ow, cb, g));
      }
    }
  }
  for (int64_t c = full; c < C; ++c) {  // channels past the last block of 16
    for (int64_t ow = 0; ow < g.OW; ++ow) {
      float acc = bias[c];
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t ih = oh * g.sh - g.ph + i * g.dh;
        if (ih < 0 || ih >= g.H) continue;
        for (int64_t j = 0; j < g.kw; ++j) {
          const int64_t iw = ow * g.sw - g.pw + j * g.dw;
          if (iw < 0 || iw >= g.W) continue;
          acc += x[(ih * g.W + iw) * C + c] * w[(i * g.kw + j) * C + c];
        }
      }
      y[ow * C + c] = acc;
    }
  }
  tail.epi->apply(y, g.OW, C, C, tail.residual, C);  // the row's epilogue while it is in L2
}

class DepthwiseConv : public SymStep {
 public:
  DepthwiseConv(int x, int y, int res, Tensor taps, std::vector<float> bias, const graph::ConvAttrs& a, RowEpilogue epi)
      : x_(x), y_(y), res_(res), taps_(std::move(taps)), bias_(std::move(bias)), a_(a), epi_(std::move(epi)) {}

  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_), ys = r.physical(y_);
    DwGeometry g{xs[1],         xs[2],         xs[3],      ys[2],      a_.kernel[0],    a_.kernel[1],
                 a_.strides[0], a_.strides[1], a_.pads[0], a_.pads[1], a_.dilations[0], a_.dilations[1]};
    const int64_t N = ys[0], OH = ys[1];
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    const float* res = res_ >= 0 ? r.f32(res_) : nullptr;
    const float* w = taps_.data<float>();
    const int64_t C = g.C;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        float* yr = y + ((n * OH + oh) * g.OW) * C;
        const RowTail tail{&epi_, res ? res + ((n * OH + oh) * g.OW) * C : nullptr};
        depthwise_row(x + n * g.H * g.W * C, w, bias_.data(), yr, oh, g, tail);
      }
    }
    return Status::ok();
  }
  std::string describe() const override {
    return fmt::format("depthwise {}x{}/{}{}", a_.kernel[0], a_.kernel[1], a_.strides[0], epi_.describe());
  }

 private:
  int x_, y_, res_;
  Tensor taps_;
  std::vector<float> bias_;
  graph::ConvAttrs a_;
  RowEpilogue epi_;
};

}  // namespace

Status build_sym_depthwise(SymBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvAttrs>();
  const Tensor& w = n.input(1)->constant;  // [C, 1, kh, kw]
  const int64_t C = w.dim(0), kh = w.dim(2), kw = w.dim(3);
  std::vector<float> bias(static_cast<size_t>(C), 0.f);
  if (const graph::Value* bv = n.input(2)) {
    if (!bv->is_constant()) return unsupported("a bias computed at run time");
    bias = bv->constant.to_floats();
    if (static_cast<int64_t>(bias.size()) != C) return invalid_argument(n.describe() + ": bias length");
  }
  // The activation, a residual input and the fused stages, after the bias (which starts the accumulator).
  Epilogue e;
  e.out = n.output();
  if (const graph::Value* res = n.input(3)) {
    PostOp sum;
    sum.kind = PostOp::kSum;
    sum.label = "sum";
    e.ops.push_back(sum);
    e.residual = res;
  }
  add_activation(e, a.act);
  RETURN_IF_ERROR(add_epilogue(e, n));
  ASSIGN_OR_RETURN(RowEpilogue epi, RowEpilogue::make(nullptr, C, e));
  int res = -1;
  if (e.residual) {
    ASSIGN_OR_RETURN(res, b.in_layout(e.residual, Layout::kNhwc));
  }
  ASSIGN_OR_RETURN(int xb, b.in_layout(n.input(0), Layout::kNhwc));
  // [C, 1, kh, kw] -> taps [kh*kw, C]: one vector of channels per tap.
  Tensor taps = Tensor::empty(DType::kF32, {kh * kw, C});
  const float* src = w.data<float>();
  float* dst = taps.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < kh * kw; ++t) dst[t * C + c] = src[c * kh * kw + t];
  const int y = b.new_buffer(n.output(), Layout::kNhwc);
  std::vector<int> reads{xb};
  if (res >= 0) reads.push_back(res);
  b.add_step(std::make_unique<DepthwiseConv>(xb, y, res, std::move(taps), std::move(bias), a, std::move(epi)), reads,
             {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

}  // namespace steadyocr::cpu

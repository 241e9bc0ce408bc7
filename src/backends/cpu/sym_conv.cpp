// The symbolic plan's convolutions (backends/cpu/symbolic_plan.h), channels-last: a 1x1 convolution is one GEMM over
// the pixels; any other dense one gathers each chunk of pixels' windows (im2col) and multiplies it while in cache; a
// transposed convolution whose kernel is its stride (the detector's upsampling heads) is one GEMM whose rows are
// scattered to their kernel positions. Depthwise convolutions are sym_depthwise.cpp's. Every one applies its bias,
// activation and fused epilogue (residual included) to each chunk of output rows as it is made.
#pragma GCC optimize("O3", "no-math-errno")

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "backends/cpu/fusion.h"
#include "backends/cpu/sym_gemm.h"
#include "backends/cpu/sym_ops.h"
#include "backends/cpu/symbolic_plan.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

// The activation, residual and epilogue stages of a Conv or ConvTranspose: as oneDNN post-ops after the bias (for a
// ChunkGemm), and as RowEpilogue stages with the bias first (for our own kernels).
struct ConvEpilogue {
  Epilogue post_ops;
  std::vector<float> bias;  // empty: none
  RowEpilogue rows;
  const graph::Value* residual = nullptr;
};

Result<ConvEpilogue> conv_epilogue(const graph::Node& n, const graph::Activation& act, const graph::Value* residual,
                                   int64_t channels) {
  Epilogue e;
  e.out = n.output();
  if (residual) {
    PostOp sum;
    sum.kind = PostOp::kSum;
    sum.label = "sum";
    e.ops.push_back(sum);
    e.residual = residual;
  }
  add_activation(e, act);
  RETURN_IF_ERROR(add_epilogue(e, n));
  std::vector<float> bias;
  const graph::Value* b = n.input(2);
  if (b) {
    if (!b->is_constant()) return unsupported("a bias computed at run time");
    bias = b->constant.to_floats();
  }
  ConvEpilogue ce;
  ASSIGN_OR_RETURN(ce.rows, RowEpilogue::make(b ? &bias : nullptr, channels, e));
  ce.residual = e.residual;
  ce.post_ops = std::move(e);
  ce.bias = std::move(bias);
  return ce;
}

// 1x1, stride 1, no padding: y[p, :] = x[p, :] * W over every pixel p (W as [C, K]).
class PointwiseConv : public SymStep {
 public:
  PointwiseConv(int x, int y, int res, ChunkGemm gemm) : x_(x), y_(y), res_(res), gemm_(std::move(gemm)) {}
  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_), ys = r.physical(y_);
    GemmArgs g;
    g.m = xs[0] * xs[1] * xs[2];
    g.a = r.f32(x_);
    g.lda = xs[3];
    g.c = r.f32(y_);
    g.ldc = ys[3];
    if (res_ >= 0) {
      g.residual = r.f32(res_);
      g.ldr = ys[3];
    }
    return gemm_.run(g);
  }
  std::string describe() const override { return "conv 1x1 " + gemm_.describe(); }
  Status make_kernels() const override { return gemm_.init(); }

 private:
  int x_, y_, res_;
  ChunkGemm gemm_;
};

// Any dense (group 1) convolution: each chunk of output pixels gathers its windows from x (channels-last, or the
// plain NCHW graph input read where it is) into rows of kh*kw*C, multiplied by the weights as [kh*kw*C, K].
class GatherConv : public SymStep {
 public:
  GatherConv(int x, int y, int res, ChunkGemm gemm, const graph::ConvAttrs& a, int64_t c)
      : x_(x), y_(y), res_(res), gemm_(std::move(gemm)), a_(a), c_(c) {}
  Status run(const SymRun& r) const override {
    const Shape& xs = r.shape(x_);  // logical [N, C, H, W]
    const Shape& ys = r.shape(y_);
    const int64_t H = xs[2], W = xs[3], OH = ys[2], OW = ys[3], K = ys[1], C = c_;
    const int64_t kh = a_.kernel[0], kw = a_.kernel[1];
    const bool nhwc = r.buffer(x_).layout == Layout::kNhwc;
    const float* x = r.f32(x_);
    const graph::ConvAttrs a = a_;
    GemmArgs g;
    g.m = ys[0] * OH * OW;
    g.produce = [=](int64_t r0, int64_t rows, float* dst) {
      for (int64_t p = r0; p < r0 + rows; ++p) {
        const int64_t ow = p % OW, oh = (p / OW) % OH, n = p / (OW * OH);
        float* row = dst + (p - r0) * kh * kw * C;
        for (int64_t i = 0; i < kh; ++i) {
          const int64_t ih = oh * a.strides[0] - a.pads[0] + i * a.dilations[0];
          for (int64_t j = 0; j < kw; ++j, row += C) {
            const int64_t iw = ow * a.strides[1] - a.pads[1] + j * a.dilations[1];
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) {
              std::memset(row, 0, static_cast<size_t>(C) * sizeof(float));
            } else if (nhwc) {
              std::memcpy(row, x + ((n * H + ih) * W + iw) * C, static_cast<size_t>(C) * sizeof(float));
            } else {
              const float* src = x + (n * C * H + ih) * W + iw;
              for (int64_t c = 0; c < C; ++c) row[c] = src[c * H * W];
            }
          }
        }
      }
    };
    g.c = r.f32(y_);
    g.ldc = K;
    if (res_ >= 0) {
      g.residual = r.f32(res_);
      g.ldr = K;
    }
    return gemm_.run(g);
  }
  std::string describe() const override {
    return fmt::format("conv {}x{}/{} gather {}", a_.kernel[0], a_.kernel[1], a_.strides[0], gemm_.describe());
  }
  Status make_kernels() const override { return gemm_.init(); }

 private:
  int x_, y_, res_;
  ChunkGemm gemm_;
  graph::ConvAttrs a_;
  int64_t c_;
};

typedef float v16 __attribute__((vector_size(64)));

__attribute__((always_inline)) inline v16 load16(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Where a small convolution's inputs for one output pixel are: every tap of the window (the stem), or the pixel's
// own channels (a 1x1 convolution over few channels).
struct SmallGeometry {
  const float* x;  // the image: [C, H, W] (plain) or [H, W, C]
  bool nhwc;
  int64_t C, H, W, K, OW;
  int64_t kh, kw, sh, sw, ph, pw, dh, dw;
};

// One output pixel: KV vectors of 16 output channels in registers, each input value broadcast against its tap's
// weights (w: [taps, K]).
template <int KV>
__attribute__((always_inline)) inline void small_pixel(const SmallGeometry& g, const float* w, const float* bias,
                                                       float* y, int64_t oh, int64_t ow) {
  v16 acc[KV];
  for (int v = 0; v < KV; ++v) acc[v] = load16(bias + 16 * v);
  for (int64_t i = 0; i < g.kh; ++i) {
    const int64_t ih = oh * g.sh - g.ph + i * g.dh;
    if (ih < 0 || ih >= g.H) continue;
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t iw = ow * g.sw - g.pw + j * g.dw;
      if (iw < 0 || iw >= g.W) continue;
      const float* wt = w + (i * g.kw + j) * g.C * g.K;
      if (g.nhwc) {
        const float* xp = g.x + (ih * g.W + iw) * g.C;
        for (int64_t c = 0; c < g.C; ++c) {
          const float xv = xp[c];
          for (int v = 0; v < KV; ++v) acc[v] += xv * load16(wt + c * g.K + 16 * v);
        }
      } else {
        const float* xp = g.x + ih * g.W + iw;
        for (int64_t c = 0; c < g.C; ++c) {
          const float xv = xp[c * g.H * g.W];
          for (int v = 0; v < KV; ++v) acc[v] += xv * load16(wt + c * g.K + 16 * v);
        }
      }
    }
  }
  std::memcpy(y + ow * g.K, acc, sizeof(acc));
}

// One output row of a small convolution (K a multiple of 16, at most 64).
SO_CPU_CLONES void small_conv_row(const SmallGeometry& g, const float* w, const float* bias, float* y, int64_t oh) {
  switch (g.K / 16) {
    case 1:
      for (int64_t ow = 0; ow < g.OW; ++ow) small_pixel<1>(g, w, bias, y, oh, ow);
      break;
    case 2:
      for (int64_t ow = 0; ow < g.OW; ++ow) small_pixel<2>(g, w, bias, y, oh, ow);
      break;
    case 3:
      for (int64_t ow = 0; ow < g.OW; ++ow) small_pixel<3>(g, w, bias, y, oh, ow);
      break;
    default:
      for (int64_t ow = 0; ow < g.OW; ++ow) small_pixel<4>(g, w, bias, y, oh, ow);
      break;
  }
}

class SmallConv : public SymStep {
 public:
  SmallConv(int x, int y, int res, Tensor w_ckk, std::vector<float> bias, const graph::ConvAttrs& a, int64_t c,
            int64_t k, RowEpilogue epi)
      : x_(x),
        y_(y),
        res_(res),
        w_(std::move(w_ckk)),
        bias_(std::move(bias)),
        a_(a),
        c_(c),
        k_(k),
        epi_(std::move(epi)) {}
  Status run(const SymRun& r) const override {
    const Shape& xs = r.shape(x_);
    const Shape& ys = r.shape(y_);
    const int64_t N = ys[0], OH = ys[2], OW = ys[3], H = xs[2], W = xs[3];
    const bool nhwc = r.buffer(x_).layout == Layout::kNhwc;
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    const float* res = res_ >= 0 ? r.f32(res_) : nullptr;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        float* yr = y + (n * OH + oh) * OW * k_;
        const SmallGeometry g{x + n * c_ * H * W,
                              nhwc,
                              c_,
                              H,
                              W,
                              k_,
                              OW,
                              a_.kernel[0],
                              a_.kernel[1],
                              a_.strides[0],
                              a_.strides[1],
                              a_.pads[0],
                              a_.pads[1],
                              a_.dilations[0],
                              a_.dilations[1]};
        small_conv_row(g, w_.data<float>(), bias_.data(), yr, oh);
        epi_.apply(yr, OW, k_, k_, res ? res + (n * OH + oh) * OW * k_ : nullptr, k_);
      }
    }
    return Status::ok();
  }
  std::string describe() const override {
    return fmt::format("conv {}x{}/{} direct {}->{}{}", a_.kernel[0], a_.kernel[1], a_.strides[0], c_, k_,
                       epi_.describe());
  }

 private:
  int x_, y_, res_;
  Tensor w_;
  std::vector<float> bias_;
  graph::ConvAttrs a_;
  int64_t c_, k_;
  RowEpilogue epi_;
};

// ConvTranspose with kernel == stride, no padding: each input pixel's kh*kw*K outputs are one GEMM row (bias and
// activation fused by oneDNN), scattered to their kernel positions in y (channels-last) chunk by chunk.
class StrideDeconv : public SymStep {
 public:
  StrideDeconv(int x, int y, int64_t k, int64_t kh, int64_t kw, ChunkGemm gemm)
      : x_(x), y_(y), k_(k), kh_(kh), kw_(kw), gemm_(std::move(gemm)) {}
  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_);
    const int64_t H = xs[1], W = xs[2], C = xs[3], OH = H * kh_, OW = W * kw_, K = k_, kh = kh_, kw = kw_;
    float* y = r.f32(y_);
    GemmArgs g;
    g.m = xs[0] * H * W;
    g.a = r.f32(x_);
    g.lda = C;
    g.consume = [=](int64_t r0, int64_t rows, const float* src) {
      for (int64_t p = r0; p < r0 + rows; ++p) {
        const int64_t iw = p % W, ih = (p / W) % H, n = p / (W * H);
        const float* s = src + (p - r0) * kh * kw * K;
        for (int64_t i = 0; i < kh; ++i) {
          std::memcpy(y + ((n * OH + ih * kh + i) * OW + iw * kw) * K, s + i * kw * K,
                      static_cast<size_t>(kw * K) * sizeof(float));
        }
      }
    };
    return gemm_.run(g);
  }
  std::string describe() const override { return fmt::format("deconv {}x{}/{} {}", kh_, kw_, kh_, gemm_.describe()); }
  Status make_kernels() const override { return gemm_.init(); }

 private:
  int x_, y_;
  int64_t k_, kh_, kw_;
  ChunkGemm gemm_;
};

Status check_conv_inputs(const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  if (!x || !w || !n.output()) return invalid_argument(n.describe() + " needs an input and weights");
  if (x->shape.size() != 4 || w->shape.size() != 4) return unsupported("only 2-D convolutions (NCHW)");
  if (!w->is_constant()) return unsupported("weights computed at run time");
  if (x->dtype != DType::kF32 || w->dtype != DType::kF32) return unsupported("f32 only");
  if (x->shape[1] < 0) return unsupported("a symbolic channel count");
  return Status::ok();
}

}  // namespace

Status build_sym_conv(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_conv_inputs(n));
  const auto& a = n.attr<graph::ConvAttrs>();
  const graph::Value* x = n.input(0);
  const Tensor& w = n.input(1)->constant;
  const int64_t C = x->shape[1], K = w.dim(0), g = a.group;
  if (g == C && K == C && w.dim(1) == 1) return build_sym_depthwise(b, n);
  if (g != 1) return unsupported(fmt::format("grouped convolution (group {} of {} channels)", g, C));
  if (w.dim(1) != C)
    return invalid_argument(fmt::format("{}: weights {} for {} channels", n.describe(), w.describe(), C));
  ASSIGN_OR_RETURN(ConvEpilogue epi, conv_epilogue(n, a.act, n.input(3), K));
  int res = -1;
  if (epi.residual) {
    ASSIGN_OR_RETURN(res, b.in_layout(epi.residual, Layout::kNhwc));
  }
  const bool pointwise = a.kernel[0] == 1 && a.kernel[1] == 1 && a.strides[0] == 1 && a.strides[1] == 1 &&
                         a.pads[0] == 0 && a.pads[1] == 0 && a.pads[2] == 0 && a.pads[3] == 0;
  std::vector<int> reads;
  int xb;
  std::unique_ptr<SymStep> step;
  const int y = b.new_buffer(n.output(), Layout::kNhwc);
  const bool small = !pointwise && C * w.dim(2) * w.dim(3) <= 64 && K % 16 == 0 && K <= 64;
  if (pointwise) {
    ASSIGN_OR_RETURN(xb, b.in_layout(x, Layout::kNhwc));
    // [K, C, 1, 1] -> [C, K]
    Tensor wt = Tensor::empty(DType::kF32, {C, K});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c) dst[c * K + k] = src[k * C + c];
    step = std::make_unique<PointwiseConv>(
        xb, y, res, ChunkGemm(C, K, std::move(wt), std::move(epi.bias), std::move(epi.post_ops)));
  } else if (small) {
    ASSIGN_OR_RETURN(xb, b.home(x));
    if (b.buffer(xb).layout != Layout::kPlain || b.buffer(b.root_of(xb)).storage != SymBuffer::Storage::kInput) {
      ASSIGN_OR_RETURN(xb, b.in_layout(x, Layout::kNhwc));
    }
    // [K, C, kh, kw] -> [kh, kw, C, K]: each input value's weights contiguous across the output channels.
    const int64_t kh = w.dim(2), kw = w.dim(3);
    Tensor wt = Tensor::empty(DType::kF32, {kh, kw, C, K});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) dst[((i * kw + j) * C + c) * K + k] = src[((k * C + c) * kh + i) * kw + j];
    std::vector<float> bias(static_cast<size_t>(K), 0.f);
    if (n.input(2)) bias = n.input(2)->constant.to_floats();
    // The bias starts the accumulator: the epilogue without it.
    Epilogue e;
    e.out = n.output();
    if (n.input(3)) {
      PostOp sum;
      sum.kind = PostOp::kSum;
      e.ops.push_back(sum);
      e.residual = n.input(3);
    }
    add_activation(e, a.act);
    RETURN_IF_ERROR(add_epilogue(e, n));
    ASSIGN_OR_RETURN(RowEpilogue rows, RowEpilogue::make(nullptr, K, e));
    step = std::make_unique<SmallConv>(xb, y, res, std::move(wt), std::move(bias), a, C, K, std::move(rows));
  } else {
    // The graph's input is read where it is (plain NCHW): the first convolution gathers its windows from it.
    ASSIGN_OR_RETURN(xb, b.home(x));
    if (b.buffer(xb).layout != Layout::kPlain || b.buffer(b.root_of(xb)).storage != SymBuffer::Storage::kInput) {
      ASSIGN_OR_RETURN(xb, b.in_layout(x, Layout::kNhwc));
    }
    // [K, C, kh, kw] -> [kh, kw, C, K]: a gathered row's order, by output channel.
    const int64_t kh = w.dim(2), kw = w.dim(3);
    Tensor wt = Tensor::empty(DType::kF32, {kh, kw, C, K});
    const float* src = w.data<float>();
    float* dst = wt.data<float>();
    for (int64_t k = 0; k < K; ++k)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) dst[((i * kw + j) * C + c) * K + k] = src[((k * C + c) * kh + i) * kw + j];
    step = std::make_unique<GatherConv>(
        xb, y, res, ChunkGemm(kh * kw * C, K, std::move(wt), std::move(epi.bias), std::move(epi.post_ops)), a, C);
  }
  reads.push_back(xb);
  if (res >= 0) reads.push_back(res);
  b.add_step(std::move(step), reads, {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

Status build_sym_conv_transpose(SymBuilder& b, const graph::Node& n) {
  RETURN_IF_ERROR(check_conv_inputs(n));
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const Tensor& w = n.input(1)->constant;  // [C, K/group, kh, kw]
  const int64_t C = w.dim(0), K = w.dim(1), kh = w.dim(2), kw = w.dim(3);
  const bool simple = a.group == 1 && a.kernel[0] == a.strides[0] && a.kernel[1] == a.strides[1] &&
                      a.dilations[0] == 1 && a.dilations[1] == 1 && a.output_padding[0] == 0 &&
                      a.output_padding[1] == 0 &&
                      std::all_of(a.pads.begin(), a.pads.end(), [](int64_t p) { return p == 0; });
  if (!simple || kh != a.kernel[0] || kw != a.kernel[1]) {
    return unsupported("a transposed convolution other than kernel == stride without padding");
  }
  ASSIGN_OR_RETURN(ConvEpilogue epi, conv_epilogue(n, a.act, nullptr, K));
  if (epi.residual) return unsupported("a residual after a transposed convolution");
  ASSIGN_OR_RETURN(int xb, b.in_layout(n.input(0), Layout::kNhwc));
  // [C, K, kh, kw] -> [C, kh, kw, K]: one GEMM row per input pixel holds its outputs in scatter order.
  Tensor wt = Tensor::empty(DType::kF32, {C, kh, kw, K});
  const float* src = w.data<float>();
  float* dst = wt.data<float>();
  for (int64_t c = 0; c < C; ++c)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t i = 0; i < kh; ++i)
        for (int64_t j = 0; j < kw; ++j) dst[((c * kh + i) * kw + j) * K + k] = src[((c * K + k) * kh + i) * kw + j];
  // The bias once per kernel position: the GEMM's columns are [kh, kw, K].
  std::vector<float> bias;
  for (int64_t t = 0; t < kh * kw && !epi.bias.empty(); ++t) bias.insert(bias.end(), epi.bias.begin(), epi.bias.end());
  Epilogue post = epi.post_ops;
  for (PostOp& p : post.ops) {
    // Per-channel operands: repeated per kernel position as well (one value for all stays one).
    if (p.kind != PostOp::kBinary || p.channel.numel() == 1) continue;
    std::vector<float> v = p.channel.to_floats(), all;
    for (int64_t t = 0; t < kh * kw; ++t) all.insert(all.end(), v.begin(), v.end());
    p.channel = Tensor::from_floats({static_cast<int64_t>(all.size())}, all);
  }
  const int y = b.new_buffer(n.output(), Layout::kNhwc);
  b.add_step(std::make_unique<StrideDeconv>(xb, y, K, kh, kw,
                                            ChunkGemm(C, kh * kw * K, std::move(wt), std::move(bias), std::move(post))),
             {xb}, {y}, &n);
  b.set_home(n.output(), y);
  return Status::ok();
}

}  // namespace steadyocr::cpu

// Conv (NCHW, groups, strides, dilations, asymmetric pads) with the fused epilogue
// y = act(conv(x, w) + b + residual). Accumulates in double: this is the oracle, so it favours exactness
// over speed, but stays a blocked im2col + GEMM so the real models run in well under a second.
#include <algorithm>
#include <cstring>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

constexpr int64_t kTileP = 128;  // output positions per accumulator tile (4 rows x 128 doubles = 4 KiB)
// Below this many multiply-adds per task, forking threads costs more than it saves (more so on a loaded host).
constexpr int64_t kMinTaskMacs = int64_t{1} << 18;

struct ConvGeometry {
  int64_t n, c, h, w;     // input
  int64_t m, oh, ow;      // output
  int64_t kh, kw, group;  // kernel
  int64_t cg, mg, k, p;   // per group: input channels, output channels, GEMM depth, output positions
  int64_t sh, sw, dh, dw, pt, pl;
};

// col[k][p] for one image and group: the input pixel each kernel tap reads at each output position (0 in pads).
void im2col(const ConvGeometry& g, const float* x, float* col) {
  for (int64_t c = 0; c < g.cg; ++c) {
    const float* xc = x + c * g.h * g.w;
    for (int64_t i = 0; i < g.kh; ++i) {
      for (int64_t j = 0; j < g.kw; ++j) {
        float* row = col + ((c * g.kh + i) * g.kw + j) * g.p;
        const int64_t off_w = j * g.dw - g.pl;
        // Output columns whose input column lies inside [0, W).
        int64_t lo = off_w >= 0 ? 0 : (-off_w + g.sw - 1) / g.sw;
        int64_t hi = g.w - off_w > 0 ? (g.w - off_w - 1) / g.sw + 1 : 0;
        lo = std::min(lo, g.ow);
        hi = std::clamp(hi, lo, g.ow);
        for (int64_t oy = 0; oy < g.oh; ++oy) {
          float* r = row + oy * g.ow;
          const int64_t iy = oy * g.sh - g.pt + i * g.dh;
          if (iy < 0 || iy >= g.h) {
            std::memset(r, 0, static_cast<size_t>(g.ow) * sizeof(float));
            continue;
          }
          const float* xr = xc + iy * g.w;
          for (int64_t ox = 0; ox < lo; ++ox) r[ox] = 0.f;
          if (g.sw == 1) {
            if (hi > lo) std::memcpy(r + lo, xr + lo + off_w, static_cast<size_t>(hi - lo) * sizeof(float));
          } else {
            for (int64_t ox = lo; ox < hi; ++ox) r[ox] = xr[ox * g.sw + off_w];
          }
          for (int64_t ox = hi; ox < g.ow; ++ox) r[ox] = 0.f;
        }
      }
    }
  }
}

struct Epilogue {
  const float* bias;      // [M] or null
  const float* residual;  // [N, M, OH, OW] or null
  graph::Activation act;
};

// y[m][p] = epilogue(sum_k w[m][k] * col[k][p]) for the group's rows m in [0, mg) and positions [p0, p1).
void gemm_tile(const ConvGeometry& g, const float* w, const float* col, int64_t p0, int64_t p1, int64_t m_base,
               int64_t n_img, const Epilogue& ep, float* y) {
  const int64_t tp = p1 - p0;
  double acc[4][kTileP];
  for (int64_t m0 = 0; m0 < g.mg; m0 += 4) {
    const int64_t mb = std::min<int64_t>(4, g.mg - m0);
    for (int64_t i = 0; i < mb; ++i) std::fill(acc[i], acc[i] + tp, 0.0);
    const float* wm = w + m0 * g.k;
    if (mb == 4) {
      double* a0 = acc[0];
      double* a1 = acc[1];
      double* a2 = acc[2];
      double* a3 = acc[3];
      for (int64_t k = 0; k < g.k; ++k) {
        const float* cr = col + k * g.p + p0;
        const double w0 = wm[k], w1 = wm[g.k + k], w2 = wm[2 * g.k + k], w3 = wm[3 * g.k + k];
        // Independent outputs per q (no reduction across q), so forcing SIMD does not change any result.
#pragma omp simd
        for (int64_t q = 0; q < tp; ++q) {
          const double v = cr[q];
          a0[q] += w0 * v;
          a1[q] += w1 * v;
          a2[q] += w2 * v;
          a3[q] += w3 * v;
        }
      }
    } else {
      for (int64_t k = 0; k < g.k; ++k) {
        const float* cr = col + k * g.p + p0;
        for (int64_t i = 0; i < mb; ++i) {
          const double wv = wm[i * g.k + k];
          double* a = acc[i];
#pragma omp simd
          for (int64_t q = 0; q < tp; ++q) a[q] += wv * cr[q];
        }
      }
    }
    for (int64_t i = 0; i < mb; ++i) {
      const int64_t m = m_base + m0 + i;
      const double b = ep.bias ? ep.bias[m] : 0.0;
      const int64_t base = (n_img * g.m + m) * g.p + p0;
      float* yr = y + base;
      const float* rr = ep.residual ? ep.residual + base : nullptr;
      for (int64_t q = 0; q < tp; ++q) {
        double v = acc[i][q] + b;
        if (rr) v += rr[q];
        yr[q] = static_cast<float>(v);
      }
      if (ep.act.kind != graph::ActKind::kNone) {
        for (int64_t q = 0; q < tp; ++q) yr[q] = ep.act.apply(yr[q]);
      }
    }
  }
}

}  // namespace

Status conv_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_attrs<graph::ConvAttrs>(node));
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const auto& a = node.attr<graph::ConvAttrs>();
  const Tensor& x = *in[0];
  const Tensor& wt = *in[1];
  const Tensor* bias = in.size() > 2 && in[2] && in[2]->defined() ? in[2] : nullptr;
  const Tensor* res = in.size() > 3 && in[3] && in[3]->defined() ? in[3] : nullptr;
  Tensor& y = out[0];
  if (x.rank() != 4 || wt.rank() != 4 || y.rank() != 4) {
    return unsupported(fmt::format("{}: only 2-D convolution (rank-4 NCHW) is supported, got x {} w {}",
                                   node.describe(), x.describe(), wt.describe()));
  }
  ConvGeometry g{};
  g.n = x.dim(0), g.c = x.dim(1), g.h = x.dim(2), g.w = x.dim(3);
  g.m = wt.dim(0), g.kh = wt.dim(2), g.kw = wt.dim(3), g.group = a.group;
  g.oh = y.dim(2), g.ow = y.dim(3);
  g.sh = a.strides[0], g.sw = a.strides[1], g.dh = a.dilations[0], g.dw = a.dilations[1];
  g.pt = a.pads[0], g.pl = a.pads[1];
  if (g.group < 1 || g.c % g.group || g.m % g.group || wt.dim(1) * g.group != g.c || g.sh < 1 || g.sw < 1 || g.dh < 1 ||
      g.dw < 1 || (a.kernel[0] && a.kernel[0] != g.kh) || (a.kernel[1] && a.kernel[1] != g.kw)) {
    return invalid_argument(fmt::format("{}: x {} and weights {} do not fit group {} / kernel {}x{} / strides {}x{}",
                                        node.describe(), x.describe(), wt.describe(), g.group, a.kernel[0], a.kernel[1],
                                        g.sh, g.sw));
  }
  const int64_t eh = (g.h + a.pads[0] + a.pads[2] - g.dh * (g.kh - 1) - 1) / g.sh + 1;
  const int64_t ew = (g.w + a.pads[1] + a.pads[3] - g.dw * (g.kw - 1) - 1) / g.sw + 1;
  if (y.dim(0) != g.n || y.dim(1) != g.m || y.dim(2) != eh || y.dim(3) != ew) {
    return invalid_argument(fmt::format("{}: output value is {} but x {} with weights {} gives [{},{},{},{}]",
                                        node.describe(), y.describe(), x.describe(), wt.describe(), g.n, g.m, eh, ew));
  }
  if (bias && (bias->dtype() != DType::kF32 || bias->numel() != g.m)) {
    return invalid_argument(
        fmt::format("{}: bias {} must be f32 with {} elements", node.describe(), bias->describe(), g.m));
  }
  if (res && (res->dtype() != DType::kF32 || res->shape() != y.shape())) {
    return invalid_argument(fmt::format("{}: residual {} must be f32 of the output shape {}", node.describe(),
                                        res->describe(), shape_str(y.shape())));
  }
  g.cg = g.c / g.group, g.mg = g.m / g.group;
  g.k = g.cg * g.kh * g.kw, g.p = g.oh * g.ow;
  if (y.numel() == 0) return Status::ok();
  Epilogue ep{bias ? bias->data<float>() : nullptr, res ? res->data<float>() : nullptr, a.act};
  const float* px = x.data<float>();
  const float* pw = wt.data<float>();
  float* py = y.data<float>();
  // A 1x1, stride-1, unpadded conv reads the input planes as they are: no im2col copy.
  const bool direct =
      g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.pt == 0 && g.pl == 0 && a.pads[2] == 0 && a.pads[3] == 0;
  const int64_t tiles = (g.p + kTileP - 1) / kTileP;
  const int64_t images_groups = g.n * g.group;
  auto one_group = [&](int64_t ng, std::vector<float>& col, bool split_tiles) {
    const int64_t n = ng / g.group, gi = ng % g.group;
    const float* xg = px + (n * g.c + gi * g.cg) * g.h * g.w;
    const float* cm = xg;
    if (!direct) {
      col.resize(static_cast<size_t>(g.k * g.p));
      im2col(g, xg, col.data());
      cm = col.data();
    }
    const float* wg = pw + gi * g.mg * g.k;
    auto run_tiles = [&](int64_t t0, int64_t t1) {
      for (int64_t t = t0; t < t1; ++t) {
        gemm_tile(g, wg, cm, t * kTileP, std::min(g.p, (t + 1) * kTileP), gi * g.mg, n, ep, py);
      }
    };
    if (split_tiles) {
      parallel_for(tiles, run_tiles, std::max<int64_t>(1, kMinTaskMacs / std::max<int64_t>(g.mg * g.k * kTileP, 1)));
    } else {
      run_tiles(0, tiles);
    }
  };
  if (images_groups >= 2 * num_threads()) {
    // Many groups (depthwise): one thread per (image, group), each with its own im2col buffer.
    parallel_for(
        images_groups,
        [&](int64_t b, int64_t e) {
          std::vector<float> col;
          for (int64_t ng = b; ng < e; ++ng) one_group(ng, col, false);
        },
        std::max<int64_t>(1, kMinTaskMacs / std::max<int64_t>(g.mg * g.k * g.p, 1)));
  } else {
    std::vector<float> col;
    for (int64_t ng = 0; ng < images_groups; ++ng) one_group(ng, col, true);
  }
  return Status::ok();
}

}  // namespace steadyocr::reference

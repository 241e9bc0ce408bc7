// ConvTranspose on oneDNN's deconvolution, with the epilogue (bias add, BatchNorm, activations) fused.
#include <fmt/format.h>

#include <cstring>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/fusion.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {
namespace {

// ConvTranspose whose kernel equals its stride (no pads, dilation, groups or output padding): the DB head's
// 2x2/2 upsampling. Every input pixel owns one kh x kw output block, so it is a 1x1 convolution to
// kh*kw*OC channels (oneDNN, channels-last, epilogue fused) followed by a pixel shuffle that moves each
// pixel's kh*kw groups of OC values into place. (oneDNN 2.6 runs this shape as a backward convolution,
// about 50x slower; a strided GEMM was still 4x slower for the 1-channel output.)
class PixelShuffleOp : public CpuOp {
 public:
  // src: [N*H*W, kh*kw*OC] channels-last; dst: [N, OH, OW, OC] channels-last (plain when OC == 1).
  PixelShuffleOp(int src, int dst, int64_t nh, int64_t w, int64_t kh, int64_t kw, int64_t oc)
      : src_(src), dst_(dst), nh_(nh), w_(w), kh_(kh), kw_(kw), oc_(oc) {}
  Status run(RunContext& ctx) override {
    const float* s = ctx.f32(src_);
    float* d = ctx.f32(dst_);
    const int64_t run = kw_ * oc_, r = kh_ * run, ow = w_ * kw_;
    parallel_chunks(
        nh_ * kh_,
        [&](int64_t b, int64_t e) {
          for (int64_t row = b; row < e; ++row) {
            const int64_t hh = row / kh_, i = row % kh_;
            shuffle_row(s + hh * w_ * r + i * run, d + row * ow * oc_, w_, run, r);
          }
        },
        std::max<int64_t>(1, 16384 / std::max<int64_t>(ow * oc_, 1)));
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("pixel shuffle {}x{} x{} channels", kh_, kw_, oc_); }

 private:
  // dst[w*run + k] = src[w*stride + k]: `w` runs of `run` floats gathered from a stride.
  static void shuffle_row(const float* __restrict src, float* __restrict dst, int64_t w, int64_t run, int64_t stride) {
    if (run == 2) {
      for (int64_t x = 0; x < w; ++x) {
        dst[2 * x] = src[x * stride];
        dst[2 * x + 1] = src[x * stride + 1];
      }
      return;
    }
    for (int64_t x = 0; x < w; ++x)
      std::memcpy(dst + x * run, src + x * stride, static_cast<size_t>(run) * sizeof(float));
  }

  int src_, dst_;
  int64_t nh_, w_, kh_, kw_, oc_;
};

// Per-channel post-op constants repeated for the kh*kw output positions of the 1x1 convolution's channels.
Epilogue tile_channels(const Epilogue& e, int64_t times) {
  Epilogue t = e;
  for (PostOp& p : t.ops) {
    if (p.kind != PostOp::kBinary || p.channel.numel() == 1) continue;  // one value for all stays one
    const int64_t c = p.channel.numel();
    std::vector<float> src = p.channel.to_floats(), v(static_cast<size_t>(c * times));
    for (int64_t j = 0; j < times; ++j) std::copy(src.begin(), src.end(), v.begin() + j * c);
    p.channel = Tensor::from_floats({c * times}, v);
  }
  return t;
}

Result<bool> build_block_upsample(PlanBuilder& b, const graph::Node& n, const Epilogue& full, const Epilogue& base) {
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* bias = n.input(2);
  const graph::Value* y = n.output();
  const int64_t batch = x->shape[0], ic = x->shape[1], h = x->shape[2], wd = x->shape[3];
  const int64_t oc = y->shape[1], kh = w->shape[2], kw = w->shape[3], r = kh * kw * oc;
  const Dims src_d = to_dims(x->shape), mid_d{batch, r, h, wd};
  const Md mid_md(mid_d, Dt::f32, Tag::acdb);
  const Md y_md(to_dims(y->shape), Dt::f32, oc == 1 ? Tag::abcd : Tag::acdb);
  const Md bias_md({r}, Dt::f32, Tag::a);
  ASSIGN_OR_RETURN(int home, b.home(x));
  Md src_md = b.buffer(home).md;
  if (layout_kind(src_md).kind == LayoutKind::kOther) src_md = Md(src_d, Dt::f32, Tag::any);

  dnnl::convolution_forward::primitive_desc pd;
  DnnlArgs args;
  const Epilogue* used = nullptr;
  // The input as it is, else channels-last like the output (oneDNN has no JIT kernel for blocked -> nhwc).
  for (const Md& in_md : {src_md, Md(src_d, Dt::f32, Tag::acdb)}) {
    for (const Epilogue* e : {&full, &base}) {
      if (e->residual) continue;  // the sum would have to happen after the shuffle
      DnnlArgs try_args;
      auto po = make_post_ops(b, tile_channels(*e, kh * kw), 4, 1, try_args);
      if (!po.is_ok()) continue;
      Status st = dnnl_try("deconvolution as a 1x1 convolution", [&] {
        auto attr = base_attr();
        attr.set_post_ops(po.value());
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          in_md, Md({r, ic, 1, 1}, Dt::f32, Tag::any), bias ? bias_md : Md(), mid_md,
                                          {1, 1}, {0, 0}, {0, 0}, {0, 0});
        pd = dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
      });
      if (st.is_ok() && std::string(pd.impl_info_str()).find("ref") == std::string::npos) {
        used = e;
        args = std::move(try_args);
        break;
      }
    }
    if (used) break;
  }
  if (!used) return false;
  if (used == &base && !n.epilogue.empty()) return b.expand_epilogue(n);

  // ONNX weights are [IC, OC, kh, kw]; 1x1 output channel (i*kw + j)*OC + oc takes w[ic, oc, i, j].
  const std::vector<float> wv = w->constant.to_floats();
  std::vector<float> w1(static_cast<size_t>(r * ic));
  for (int64_t c = 0; c < ic; ++c) {
    for (int64_t o = 0; o < oc; ++o) {
      for (int64_t i = 0; i < kh; ++i) {
        for (int64_t j = 0; j < kw; ++j) w1[((i * kw + j) * oc + o) * ic + c] = wv[((c * oc + o) * kh + i) * kw + j];
      }
    }
  }
  ASSIGN_OR_RETURN(dnnl::memory wm, b.weights().get(Tensor::from_floats({r, ic, 1, 1}, w1),
                                                    Md({r, ic, 1, 1}, Dt::f32, Tag::oihw), pd.weights_desc()));
  args.add_memory(DNNL_ARG_WEIGHTS, wm);
  if (bias) {
    std::vector<float> bv = bias->constant.to_floats(), tiled(static_cast<size_t>(r));
    for (int64_t k = 0; k < kh * kw; ++k) std::copy(bv.begin(), bv.end(), tiled.begin() + k * oc);
    const Tensor& bt = b.keep(Tensor::from_floats({r}, tiled));
    args.add_memory(DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), const_cast<void*>(bt.raw())));
  }
  ASSIGN_OR_RETURN(int src, b.in_layout(x, pd.src_desc()));
  const int mid = b.new_buffer(DType::kF32, Shape(mid_d.begin(), mid_d.end()), pd.dst_desc(), y->name + "@blocks");
  args.add(DNNL_ARG_SRC, src, pd.src_desc());
  args.add(DNNL_ARG_DST, mid, pd.dst_desc());
  std::string label = fmt::format("deconv {}x{}/{} as conv 1x1 {}->[{},{},{},{}] {}", kh, kw, kh, shape_str(x->shape),
                                  batch, r, h, wd, used->describe());
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), {src}, {mid}, &n);
  if (pd.dst_desc() != mid_md) return internal_error("1x1 convolution did not keep the channels-last output");
  const int dst = b.new_buffer(DType::kF32, y->shape, y_md, used->out->name);
  b.add_step(std::make_unique<PixelShuffleOp>(mid, dst, batch * h, wd, kh, kw, oc), {mid}, {dst}, &n);
  b.set_home(used->out, dst);
  return true;
}

}  // namespace

Status build_conv_transpose(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* bias = n.input(2);
  const graph::Value* y = n.output();
  if (!x || !w || !y) return invalid_argument("ConvTranspose needs an input and weights");
  if (x->shape.size() != 4 || w->shape.size() != 4 || y->shape.size() != 4) {
    return unsupported(fmt::format("only 2-D transposed convolutions are supported, input is {}", shape_str(x->shape)));
  }
  if (!w->is_constant() || (bias && !bias->is_constant())) {
    return unsupported("ConvTranspose weights and bias must be constants");
  }
  if (x->dtype != DType::kF32) return unsupported("ConvTranspose runs in f32 only");
  const int64_t g = a.group, ic = x->shape[1], oc = y->shape[1];
  if (g < 1 || ic % g || w->shape[0] != ic || w->shape[1] * g != oc) {
    return invalid_argument(fmt::format("weights {} do not match input {} / output {} with group {}",
                                        shape_str(w->shape), shape_str(x->shape), shape_str(y->shape), g));
  }
  const int64_t kh = w->shape[2], kw = w->shape[3];
  Dims src_d = to_dims(x->shape), dst_d = to_dims(y->shape);
  // ONNX stores (C_in, C_out/group, kh, kw): oneDNN's "io" order.
  Dims w_d = g == 1 ? Dims{oc, ic, kh, kw} : Dims{g, oc / g, ic / g, kh, kw};
  Md w_plain(w_d, Dt::f32, g == 1 ? Tag::iohw : Tag::giohw);
  Md bias_md({oc}, Dt::f32, Tag::a);
  Dims strides{a.strides[0], a.strides[1]}, dil{a.dilations[0] - 1, a.dilations[1] - 1};
  Dims pad_l{a.pads[0], a.pads[1]}, pad_r(2);
  const int64_t k[2] = {kh, kw};
  for (int i = 0; i < 2; ++i) {
    // Output padding and explicit output shapes both show up as a smaller right padding.
    pad_r[i] = (src_d[2 + i] - 1) * a.strides[i] + (k[i] - 1) * a.dilations[i] + 1 - pad_l[i] - dst_d[2 + i];
  }

  Epilogue base;
  base.out = y;
  add_activation(base, a.act);
  Epilogue full = base;
  RETURN_IF_ERROR(add_epilogue(full, n));

  const bool block_upsample = g == 1 && kh == a.strides[0] && kw == a.strides[1] && a.dilations[0] == 1 &&
                              a.dilations[1] == 1 && pad_l[0] == 0 && pad_l[1] == 0 && pad_r[0] == 0 && pad_r[1] == 0 &&
                              dst_d[2] == src_d[2] * kh && dst_d[3] == src_d[3] * kw;
  if (block_upsample) {
    ASSIGN_OR_RETURN(bool done, build_block_upsample(b, n, full, base));
    if (done) return Status::ok();
  }

  dnnl::deconvolution_forward::primitive_desc pd;
  DnnlArgs args;
  const Epilogue* used = nullptr;
  Status last;
  for (const Epilogue* e : {&full, &base}) {
    DnnlArgs try_args;
    auto po = make_post_ops(b, *e, 4, 1, try_args);
    if (!po.is_ok()) {
      last = po.status();
      continue;
    }
    last = dnnl_try("deconvolution " + shape_str(x->shape) + " -> " + shape_str(y->shape), [&] {
      auto attr = base_attr();
      attr.set_post_ops(po.value());
      dnnl::deconvolution_forward::desc d(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::deconvolution_direct, Md(src_d, Dt::f32, Tag::any),
          Md(w_d, Dt::f32, Tag::any), bias ? bias_md : Md(), Md(dst_d, Dt::f32, Tag::any), strides, dil, pad_l, pad_r);
      pd = dnnl::deconvolution_forward::primitive_desc(d, attr, cpu_engine());
    });
    if (last.is_ok()) {
      used = e;
      args = std::move(try_args);
      break;
    }
  }
  if (!used) return last;
  if (used == &base && !n.epilogue.empty()) return b.expand_epilogue(n);

  ASSIGN_OR_RETURN(WeightedBinding bound, bind_weighted(b, *used, n, x, w, w_plain, bias, bias_md, pd.src_desc(),
                                                        pd.weights_desc(), pd.dst_desc(), args));
  const int dst = bound.dst;
  std::vector<int> reads = std::move(bound.reads);
  std::string label = fmt::format("deconv {}x{}/{} {}->{} {}", kh, kw, a.strides[0], shape_str(x->shape),
                                  shape_str(y->shape), used->describe());
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), reads, {dst}, &n);
  b.set_home(used->out, dst);
  return Status::ok();
}

}  // namespace steadyocr::cpu

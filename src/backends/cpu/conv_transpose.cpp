// ConvTranspose on oneDNN's deconvolution, with the epilogue (bias add, BatchNorm, activations) fused.
#include <fmt/format.h>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/fusion.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {
namespace {

// ConvTranspose whose kernel equals its stride (no pads, dilation, groups or output padding): the DB head's
// 2x2/2 upsampling. Every input pixel owns one kh x kw output block, so it is kh GEMMs
// [N*H*W, IC] x [IC, kw*OC], each writing its output rows straight into the channels-last output through a
// strided destination. (oneDNN 2.6 runs this shape as a backward convolution about 50x slower.)
class DeconvGemmOp : public CpuOp {
 public:
  DeconvGemmOp(std::string label, dnnl::matmul::primitive_desc pd, std::vector<DnnlArgs> rows)
      : label_(std::move(label)), pd_(std::move(pd)), rows_(std::move(rows)) {
    label_ += std::string(" ") + pd_.impl_info_str();
  }
  Status bind(const RunContext& ctx) override {
    RETURN_IF_ERROR(dnnl_try("creating matmul " + label_, [&] { prim_ = dnnl::matmul(pd_); }));
    for (auto& r : rows_) RETURN_IF_ERROR(r.bind(ctx, pd_.scratchpad_desc()));
    return Status::ok();
  }
  Status run(RunContext& ctx) override {
    for (auto& r : rows_) RETURN_IF_ERROR(r.execute(ctx, prim_, label_.c_str()));
    return Status::ok();
  }
  std::string describe() const override { return label_; }
  size_t scratchpad_bytes() const override { return pd_.scratchpad_desc().get_size(); }

 private:
  std::string label_;
  dnnl::matmul::primitive_desc pd_;
  dnnl::matmul prim_;
  std::vector<DnnlArgs> rows_;
};

// Per-channel post-op constants repeated for the kw output columns of a GEMM row block.
Epilogue tile_channels(const Epilogue& e, int64_t kw) {
  Epilogue t = e;
  for (PostOp& p : t.ops) {
    if (p.kind != PostOp::kBinary) continue;
    const int64_t c = p.channel.numel();
    std::vector<float> src = p.channel.to_floats(), v(static_cast<size_t>(c * kw));
    for (int64_t j = 0; j < kw; ++j) std::copy(src.begin(), src.end(), v.begin() + j * c);
    p.channel = Tensor::from_floats({c * kw}, v);
  }
  return t;
}

Result<bool> build_deconv_gemm(PlanBuilder& b, const graph::Node& n, const Epilogue& full, const Epilogue& base) {
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* bias = n.input(2);
  const graph::Value* y = n.output();
  const int64_t batch = x->shape[0], ic = x->shape[1], h = x->shape[2], wd = x->shape[3];
  const int64_t oc = y->shape[1], kh = w->shape[2], kw = w->shape[3], ow = y->shape[3];
  const Md x_md(to_dims(x->shape), Dt::f32, ic == 1 ? Tag::abcd : Tag::acdb);
  const Md y_md(to_dims(y->shape), Dt::f32, oc == 1 ? Tag::abcd : Tag::acdb);
  const Md src_md({batch * h, wd, ic}, Dt::f32, Dims{wd * ic, ic, 1});
  const Md dst_md({batch * h, wd, kw * oc}, Dt::f32, Dims{kh * ow * oc, kw * oc, 1});
  const Md bias_md({1, 1, kw * oc}, Dt::f32, Tag::abc);

  dnnl::matmul::primitive_desc pd;
  DnnlArgs tmpl;
  const Epilogue* used = nullptr;
  for (const Epilogue* e : {&full, &base}) {
    DnnlArgs try_args;
    Epilogue tiled = tile_channels(*e, kw);
    auto po = make_post_ops(b, tiled, 3, 2, try_args);
    if (!po.is_ok()) continue;
    Status st = dnnl_try("deconvolution as matmul", [&] {
      auto attr = base_attr();
      attr.set_post_ops(po.value());
      dnnl::matmul::desc d(src_md, Md({1, ic, kw * oc}, Dt::f32, Tag::any), bias ? bias_md : Md(), dst_md);
      pd = dnnl::matmul::primitive_desc(d, attr, cpu_engine());
    });
    if (st.is_ok()) {
      used = e;
      tmpl = std::move(try_args);
      break;
    }
  }
  if (!used) return false;
  std::string impl = pd.impl_info_str();
  if (impl.find("ref") != std::string::npos) return false;  // no fast kernel for this shape: use deconvolution

  ASSIGN_OR_RETURN(int src, b.in_layout(x, x_md));
  std::vector<int> reads{src};
  ASSIGN_OR_RETURN(int dst, fused_output(b, *used, n, y_md, {src}, &reads));
  if (bias) {
    std::vector<float> bv = bias->constant.to_floats(), tiled(static_cast<size_t>(kw * oc));
    for (int64_t j = 0; j < kw; ++j) std::copy(bv.begin(), bv.end(), tiled.begin() + j * oc);
    const Tensor& bt = b.keep(Tensor::from_floats({kw * oc}, tiled));
    tmpl.add_memory(DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), const_cast<void*>(bt.raw())));
  }
  // ONNX weights are [IC, OC, kh, kw]; output row i uses W_i[ic, j*OC + oc] = w[ic, oc, i, j].
  const std::vector<float> wv = w->constant.to_floats();
  std::vector<DnnlArgs> rows;
  for (int64_t i = 0; i < kh; ++i) {
    std::vector<float> wi(static_cast<size_t>(ic * kw * oc));
    for (int64_t c = 0; c < ic; ++c) {
      for (int64_t o = 0; o < oc; ++o) {
        for (int64_t j = 0; j < kw; ++j) wi[(c * kw + j) * oc + o] = wv[((c * oc + o) * kh + i) * kw + j];
      }
    }
    Tensor wt = Tensor::from_floats({1, ic, kw * oc}, wi);
    ASSIGN_OR_RETURN(dnnl::memory wm, b.weights().get(wt, Md({1, ic, kw * oc}, Dt::f32, Tag::abc), pd.weights_desc()));
    DnnlArgs a = tmpl;
    a.add_memory(DNNL_ARG_WEIGHTS, wm);
    a.add(DNNL_ARG_SRC, src, src_md);
    a.add(DNNL_ARG_DST, dst, dst_md, static_cast<size_t>(i * ow * oc) * sizeof(float));
    rows.push_back(std::move(a));
  }
  std::string label =
      fmt::format("deconv {}x{}/{} as {} GEMMs {}->{} {}{}", kh, kw, kh, kh, shape_str(x->shape), shape_str(y->shape),
                  md_str(y_md).substr(0, md_str(y_md).find('[')), used->describe());
  b.add_step(std::make_unique<DeconvGemmOp>(label, pd, std::move(rows)), reads, {dst}, &n);
  for (const graph::Node* m : used->absorbed) b.absorb(m);
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
  grow_epilogue(b, full, 1, true);

  const bool block_upsample = g == 1 && kh == a.strides[0] && kw == a.strides[1] && a.dilations[0] == 1 &&
                              a.dilations[1] == 1 && pad_l[0] == 0 && pad_l[1] == 0 && pad_r[0] == 0 && pad_r[1] == 0 &&
                              dst_d[2] == src_d[2] * kh && dst_d[3] == src_d[3] * kw;
  if (block_upsample) {
    ASSIGN_OR_RETURN(bool done, build_deconv_gemm(b, n, full, base));
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

  ASSIGN_OR_RETURN(int src, b.in_layout(x, pd.src_desc()));
  ASSIGN_OR_RETURN(dnnl::memory wm, b.weights().get(w->constant, w_plain, pd.weights_desc()));
  args.add_memory(DNNL_ARG_WEIGHTS, wm);
  if (bias) {
    const Tensor& bt = b.keep(bias->constant);
    args.add_memory(DNNL_ARG_BIAS, dnnl::memory(bias_md, cpu_engine(), const_cast<void*>(bt.raw())));
  }
  std::vector<int> reads{src};
  ASSIGN_OR_RETURN(int dst, fused_output(b, *used, n, pd.dst_desc(), {src}, &reads));
  args.add(DNNL_ARG_SRC, src, pd.src_desc());
  args.add(DNNL_ARG_DST, dst, pd.dst_desc());
  std::string label = fmt::format("deconv {}x{}/{} {}->{} {}", kh, kw, a.strides[0], shape_str(x->shape),
                                  shape_str(y->shape), used->describe());
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), reads, {dst}, &n);
  for (const graph::Node* m : used->absorbed) b.absorb(m);
  b.set_home(used->out, dst);
  return Status::ok();
}

}  // namespace steadyocr::cpu

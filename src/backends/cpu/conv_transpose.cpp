// ConvTranspose on oneDNN's deconvolution, with the epilogue (bias add, BatchNorm, activations) fused.
#include <fmt/format.h>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/fusion.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {

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

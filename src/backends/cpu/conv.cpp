// Conv on oneDNN: grouped/depthwise, strides, asymmetric pads, dilation; bias, the IR activation, a
// residual (sum post-op) and the IR epilogue after it fused as post-ops; layouts chosen by oneDNN.
#include <fmt/format.h>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/fusion.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {

Status build_conv(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* bias = n.input(2);
  const graph::Value* res = n.input(3);
  const graph::Value* y = n.output();
  if (!x || !w || !y) return invalid_argument("Conv needs an input and weights");
  if (x->shape.size() != 4 || w->shape.size() != 4 || y->shape.size() != 4) {
    return unsupported(fmt::format("only 2-D convolutions (NCHW) are supported, input is {}", shape_str(x->shape)));
  }
  if (!w->is_constant() || (bias && !bias->is_constant())) {
    return unsupported("Conv weights and bias must be constants");
  }
  if (x->dtype != DType::kF32 || w->dtype != DType::kF32) return unsupported("Conv runs in f32 only");
  const int64_t g = a.group, oc = w->shape[0], ic = x->shape[1];
  if (g < 1 || ic % g || oc % g || w->shape[1] != ic / g) {
    return invalid_argument(
        fmt::format("weights {} do not match input {} with group {}", shape_str(w->shape), shape_str(x->shape), g));
  }
  Dims src_d = to_dims(x->shape), dst_d = to_dims(y->shape);
  Dims w_d = g == 1 ? Dims{oc, ic, w->shape[2], w->shape[3]} : Dims{g, oc / g, ic / g, w->shape[2], w->shape[3]};
  Md w_plain(w_d, Dt::f32, g == 1 ? Tag::oihw : Tag::goihw);
  Md bias_md({oc}, Dt::f32, Tag::a);
  Dims strides{a.strides[0], a.strides[1]}, dil{a.dilations[0] - 1, a.dilations[1] - 1};
  Dims pad_l{a.pads[0], a.pads[1]}, pad_r{a.pads[2], a.pads[3]};

  Epilogue base;
  base.out = y;
  if (res) {
    PostOp sum;
    sum.kind = PostOp::kSum;
    sum.label = "sum";
    base.ops.push_back(sum);
    base.residual = res;
  }
  add_activation(base, a.act);
  Epilogue full = base;
  RETURN_IF_ERROR(add_epilogue(full, n));

  dnnl::convolution_forward::primitive_desc pd;
  DnnlArgs args;
  const Epilogue* used = nullptr;
  Status last;
  for (const Epilogue* e : {&full, &base}) {
    if (e == &base && used) break;
    DnnlArgs try_args;
    auto po = make_post_ops(b, *e, 4, 1, try_args);
    if (!po.is_ok()) {
      last = po.status();
      continue;
    }
    // The input's own channels-last layout (no reorder), then channel-blocked activations (few input
    // channels: the first layer reads its plain input as is), then whatever oneDNN prefers. A reference
    // (non-JIT) implementation is taken only when nothing else exists.
    const Md blocked_dst(dst_d, Dt::f32, conv_blocked_tag());
    const Md blocked_src = ic >= 8 ? Md(src_d, Dt::f32, conv_blocked_tag()) : Md(src_d, Dt::f32, Tag::any);
    std::vector<std::pair<Md, Md>> choices;
    ASSIGN_OR_RETURN(int x_home, b.home(x));
    if (layout_kind(b.buffer(x_home).md).kind == LayoutKind::kChannelsLast) {
      choices.push_back({b.buffer(x_home).md, Md(dst_d, Dt::f32, Tag::acdb)});
    }
    if (e->residual) {
      ASSIGN_OR_RETURN(int r, b.home(e->residual));
      if (b.buffer(r).md.dims() == dst_d) choices.push_back({blocked_src, b.buffer(r).md});
    }
    choices.push_back({blocked_src, blocked_dst});
    choices.push_back({Md(src_d, Dt::f32, Tag::any), Md(dst_d, Dt::f32, Tag::any)});
    dnnl::convolution_forward::primitive_desc fallback;
    bool found = false, have_fallback = false;
    Status err = unsupported("no convolution implementation");
    for (const auto& [src_md, dst_md] : choices) {
      dnnl::convolution_forward::primitive_desc cand;
      Status st = dnnl_try("convolution " + shape_str(x->shape) + " -> " + shape_str(y->shape), [&] {
        auto attr = base_attr();
        attr.set_post_ops(po.value());
        dnnl::convolution_forward::desc d(dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
                                          src_md, Md(w_d, Dt::f32, Tag::any), bias ? bias_md : Md(), dst_md, strides,
                                          dil, pad_l, pad_r);
        cand = dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
      });
      if (!st.is_ok()) {
        err = st;
        continue;
      }
      if (std::string(cand.impl_info_str()).find("ref") == std::string::npos) {
        pd = cand;
        found = true;
        break;
      }
      if (!have_fallback) {
        fallback = cand;
        have_fallback = true;
      }
    }
    if (!found && have_fallback) {
      pd = fallback;
      found = true;
    }
    last = found ? Status::ok() : err;
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

  std::string label =
      fmt::format("conv {}x{}/{}{} {}->{} {}{}", a.kernel[0], a.kernel[1], a.strides[0],
                  g == 1 ? "" : (g == ic ? " dw" : fmt::format(" g{}", g)), shape_str(x->shape), shape_str(y->shape),
                  md_str(pd.dst_desc()).substr(0, md_str(pd.dst_desc()).find('[')), used->describe());
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), reads, {dst}, &n);
  b.set_home(used->out, dst);
  return Status::ok();
}

}  // namespace steadyocr::cpu

// MaxPool, AveragePool and GlobalAveragePool on oneDNN pooling, reading the producer's layout as it is.
#include <fmt/format.h>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/ops.h"

namespace steadyocr::cpu {

Status build_pool(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y) return invalid_argument("pooling needs an input");
  if (x->shape.size() != 4 || y->shape.size() != 4) {
    return unsupported(fmt::format("only 2-D pooling (NCHW) is supported, input is {}", shape_str(x->shape)));
  }
  if (x->dtype != DType::kF32) return unsupported("pooling runs in f32 only");
  const int64_t h = x->shape[2], w = x->shape[3], oh = y->shape[2], ow = y->shape[3];
  Dims kernel, strides, pad_l, pad_r;
  dnnl::algorithm alg;
  if (n.op == graph::OpKind::kGlobalAveragePool) {
    kernel = {h, w};
    strides = {1, 1};
    pad_l = {0, 0};
    pad_r = {0, 0};
    alg = dnnl::algorithm::pooling_avg_include_padding;
  } else {
    const auto& a = n.attr<graph::PoolAttrs>();
    kernel = {a.kernel[0], a.kernel[1]};
    strides = {a.strides[0], a.strides[1]};
    pad_l = {a.pads[0], a.pads[1]};
    // ceil_mode shows up as extra right padding: take what makes the output shape come out.
    pad_r = {(oh - 1) * strides[0] + kernel[0] - h - pad_l[0], (ow - 1) * strides[1] + kernel[1] - w - pad_l[1]};
    if (pad_r[0] < 0 || pad_r[1] < 0) {
      // Floor mode drops the input's last rows/columns; oneDNN wants them covered, so pad less (never < 0).
      pad_r = {std::max<int64_t>(pad_r[0], 0), std::max<int64_t>(pad_r[1], 0)};
    }
    alg = n.op == graph::OpKind::kMaxPool ? dnnl::algorithm::pooling_max
          : a.count_include_pad           ? dnnl::algorithm::pooling_avg_include_padding
                                          : dnnl::algorithm::pooling_avg_exclude_padding;
  }
  ASSIGN_OR_RETURN(int src_home, b.home(x));
  Md src_md = b.buffer(src_home).md;
  dnnl::pooling_forward::primitive_desc pd;
  Status st = dnnl_try("pooling " + shape_str(x->shape) + " -> " + shape_str(y->shape), [&] {
    dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, src_md,
                                  Md(to_dims(y->shape), Dt::f32, Tag::any), strides, kernel, pad_l, pad_r);
    pd = dnnl::pooling_forward::primitive_desc(d, base_attr(), cpu_engine());
  });
  if (!st.is_ok()) {
    // Some layouts have no pooling kernel: fall back to oneDNN's choice (a reorder is added).
    RETURN_IF_ERROR(dnnl_try("pooling " + shape_str(x->shape) + " -> " + shape_str(y->shape), [&] {
      dnnl::pooling_forward::desc d(dnnl::prop_kind::forward_inference, alg, Md(to_dims(x->shape), Dt::f32, Tag::any),
                                    Md(to_dims(y->shape), Dt::f32, Tag::any), strides, kernel, pad_l, pad_r);
      pd = dnnl::pooling_forward::primitive_desc(d, base_attr(), cpu_engine());
    }));
  }
  if (pd.dst_desc().dims() != to_dims(y->shape)) {
    return unsupported(fmt::format("pooling output {} cannot be produced with these pads", shape_str(y->shape)));
  }
  ASSIGN_OR_RETURN(int src, b.in_layout(x, pd.src_desc()));
  int dst = b.new_buffer(DType::kF32, y->shape, pd.dst_desc(), y->name);
  DnnlArgs args;
  args.add(DNNL_ARG_SRC, src, pd.src_desc());
  args.add(DNNL_ARG_DST, dst, pd.dst_desc());
  std::string label = fmt::format("{} {}x{}/{} {}->{} {}", graph::op_name(n.op), kernel[0], kernel[1], strides[0],
                                  shape_str(x->shape), shape_str(y->shape), md_str(pd.dst_desc()));
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), {src}, {dst}, &n);
  b.set_home(y, dst);
  return Status::ok();
}

}  // namespace steadyocr::cpu

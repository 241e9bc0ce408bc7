// Conv: cuDNN forward convolution (NCHW; fp16 data with fp32 accumulation in reduced precision), followed by one
// fused epilogue program y = act(conv + bias + residual) (cudnnConvolutionBiasActivationForward only fuses ReLU
// and identity, and only for some algorithms; the program covers every activation and absorbs later
// elementwise ops through the fusion pass). Asymmetric pads are applied by copying into a padded scratch.
#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/ops/conv_util.h"
#include "backends/cuda/ops/cudnn_util.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

class ConvStep : public Step {
 public:
  ConvProblem problem;
  ConvDescriptors desc;
  ConvAlgoChoice algo;
  DevTensor x, y_raw;  // cuDNN reads x (or the padded scratch) and writes y_raw
  BufRef w, workspace;
  bool padded = false;
  DevTensor x_padded;
  std::vector<int64_t> pad_tl;  // top, left
  EwProgram epilogue;           // acc = y_raw; bias, residual, activation, fused consumers

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    y_ptr_ = b.ptr(y_raw.ref);
    w_ptr_ = b.ptr(w);
    ws_ptr_ = b.ptr(workspace);
    if (padded) {
      xp_ptr_ = b.ptr(x_padded.ref);
      const int64_t H = x.shape[2], W = x.shape[3], Hp = x_padded.shape[2], Wp = x_padded.shape[3];
      pad_copy_ = k::CopyParams();
      pad_copy_.rank = 3;
      pad_copy_.shape[0] = x.shape[0] * x.shape[1];
      pad_copy_.shape[1] = H;
      pad_copy_.shape[2] = W;
      pad_copy_.src = x_ptr_;
      pad_copy_.src_strides[0] = H * W;
      pad_copy_.src_strides[1] = W;
      pad_copy_.src_strides[2] = 1;
      const size_t es = dtype_size(x.dtype);
      pad_copy_.dst = static_cast<char*>(xp_ptr_) + (pad_tl[0] * Wp + pad_tl[1]) * es;
      pad_copy_.dst_strides[0] = Hp * Wp;
      pad_copy_.dst_strides[1] = Wp;
      pad_copy_.dst_strides[2] = 1;
      pad_copy_.elem_size = static_cast<int>(es);
    }
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y_raw.ref && epilogue.out_dtype == y_raw.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    const void* src = x_ptr_;
    if (padded) {
      SO_GPU_CHECK(cudaMemsetAsync(xp_ptr_, 0, x_padded.nbytes(), ctx.stream));
      SO_LAUNCH(k::launch_strided_copy(pad_copy_, ctx.stream));
      src = xp_ptr_;
    }
    const float one = 1.f, zero = 0.f;
    SO_GPU_CHECK(dnn().cudnnConvolutionForward(ctx.cudnn, &one, desc.x, src, desc.w, w_ptr_, desc.conv,
                                               static_cast<cudnnConvolutionFwdAlgo_t>(algo.algo), ws_ptr_,
                                               algo.workspace, &zero, desc.y, y_ptr_));
    if (run_epilogue_) SO_LAUNCH(k::launch_elementwise(epi_params_, ctx.stream));
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(x.ref);
    reads->push_back(w);
    writes->push_back(workspace);
    if (padded) writes->push_back(x_padded.ref);
    writes->push_back(y_raw.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  unsigned calls() const override { return kCallsCudnn | (padded || run_epilogue_ ? kCallsOwnKernels : 0u); }

  EwProgram* program() override { return &epilogue; }

 private:
  const void* x_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* ws_ptr_ = nullptr;
  void* xp_ptr_ = nullptr;
  k::CopyParams pad_copy_;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

}  // namespace

Status build_conv(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  bool handled = false;
  RETURN_IF_ERROR(build_conv_without_cudnn(b, n, &handled));
  if (handled) return Status::ok();
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<ConvStep>();
  ConvProblem& p = step->problem;
  p.dtype = dt;
  p.n = xv->shape[0];
  p.c = xv->shape[1];
  p.h = xv->shape[2];
  p.w = xv->shape[3];
  p.k = wv->shape[0];
  p.kh = wv->shape[2];
  p.kw = wv->shape[3];
  p.oh = yv->shape[2];
  p.ow = yv->shape[3];
  p.stride_h = a.strides[0];
  p.stride_w = a.strides[1];
  p.dil_h = a.dilations[0];
  p.dil_w = a.dilations[1];
  p.group = a.group;
  if (wv->shape[1] * a.group != p.c || yv->shape[1] != p.k) {
    return invalid_argument(fmt::format("weights {} do not fit input {} with group {}", shape_str(wv->shape),
                                        shape_str(xv->shape), a.group));
  }
  // cuDNN takes symmetric pads only: asymmetric ones are materialised in a zero-padded copy of the input.
  if (a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3]) {
    step->padded = true;
    step->pad_tl = {a.pads[0], a.pads[1]};
    step->x_padded.dtype = dt;
    step->x_padded.shape = {p.n, p.c, p.h + a.pads[0] + a.pads[2], p.w + a.pads[1] + a.pads[3]};
    p.h = step->x_padded.shape[2];
    p.w = step->x_padded.shape[3];
  } else {
    p.pad_h = a.pads[0];
    p.pad_w = a.pads[1];
  }
  // cuDNN's part first, before anything is added to the plan: a shape it cannot plan runs on our own kernels.
  if (Status planned = plan_with_cudnn(b, p, &step->desc, &step->algo); !planned.is_ok()) {
    return conv_fallback(b, n, planned, /*transposed=*/false);
  }
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  if (step->padded) step->x_padded.ref = b.scratch(step->x_padded.nbytes());
  b.need_workspace(step->algo.workspace);
  step->workspace = b.workspace();
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(yv, dt));
  step->y_raw = y;

  RETURN_IF_ERROR(build_conv_epilogue(b, n, y, p.k, a.act, &step->epilogue));
  b.add_step(std::move(step), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

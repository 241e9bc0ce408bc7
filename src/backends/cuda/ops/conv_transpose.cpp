// ConvTranspose as cuDNN's backward-data convolution, then the same fused epilogue as Conv (bias + activation).
// cuDNN takes symmetric pads only: with asymmetric ones the full (unpadded) output goes to a scratch buffer and
// the padded window is copied out.
#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/cudnn_api.h"
#include "backends/cuda/ops/conv_util.h"
#include "backends/cuda/ops/cudnn_util.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

class DeconvStep : public Step {
 public:
  ConvProblem problem;
  ConvDescriptors desc;
  ConvAlgoChoice algo;
  DevTensor x, y_raw;
  BufRef w, workspace;
  EwProgram epilogue;
  bool cropped = false;
  DevTensor y_full;  // cropped: the unpadded output
  int64_t crop_t = 0, crop_l = 0;

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    y_ptr_ = b.ptr(y_raw.ref);
    if (cropped) {
      full_ptr_ = b.ptr(y_full.ref);
      const int64_t Hf = y_full.shape[2], Wf = y_full.shape[3], H = y_raw.shape[2], W = y_raw.shape[3];
      const size_t es = dtype_size(y_raw.dtype);
      crop_ = k::CopyParams();
      crop_.rank = 3;
      crop_.shape[0] = y_raw.shape[0] * y_raw.shape[1];
      crop_.shape[1] = H;
      crop_.shape[2] = W;
      crop_.src = static_cast<const char*>(full_ptr_) + (crop_t * Wf + crop_l) * es;
      crop_.src_strides[0] = Hf * Wf;
      crop_.src_strides[1] = Wf;
      crop_.src_strides[2] = 1;
      crop_.dst = y_ptr_;
      crop_.dst_strides[0] = H * W;
      crop_.dst_strides[1] = W;
      crop_.dst_strides[2] = 1;
      crop_.elem_size = static_cast<int>(es);
    }
    w_ptr_ = b.ptr(w);
    ws_ptr_ = b.ptr(workspace);
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y_raw.ref && epilogue.out_dtype == y_raw.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    const float one = 1.f, zero = 0.f;
    SO_GPU_CHECK(dnn().cudnnConvolutionBackwardData(ctx.cudnn, &one, desc.w, w_ptr_, desc.y, x_ptr_, desc.conv,
                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), ws_ptr_,
                                                    algo.workspace, &zero, desc.x, cropped ? full_ptr_ : y_ptr_));
    if (cropped) SO_LAUNCH(k::launch_strided_copy(crop_, ctx.stream));
    if (run_epilogue_) SO_LAUNCH(k::launch_elementwise(epi_params_, ctx.stream));
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(x.ref);
    reads->push_back(w);
    writes->push_back(workspace);
    if (cropped) writes->push_back(y_full.ref);
    writes->push_back(y_raw.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  unsigned calls() const override { return kCallsCudnn | (cropped || run_epilogue_ ? kCallsOwnKernels : 0u); }

  EwProgram* program() override { return &epilogue; }

 private:
  const void* x_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* ws_ptr_ = nullptr;
  void* full_ptr_ = nullptr;
  k::CopyParams crop_;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

}  // namespace

Status build_conv_transpose(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  bool handled = false;
  RETURN_IF_ERROR(build_conv_transpose_without_cudnn(b, n, &handled));
  if (handled) return Status::ok();
  const bool cropped = a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3];
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<DeconvStep>();
  // The forward convolution whose data gradient this is: input dx = our output, output dy = our input.
  ConvProblem& p = step->problem;
  p.backward_data = true;
  p.dtype = dt;
  p.n = yv->shape[0];
  p.c = yv->shape[1];
  p.h = yv->shape[2] + (cropped ? a.pads[0] + a.pads[2] : 0);
  p.w = yv->shape[3] + (cropped ? a.pads[1] + a.pads[3] : 0);
  p.k = xv->shape[1];
  p.kh = wv->shape[2];
  p.kw = wv->shape[3];
  p.oh = xv->shape[2];
  p.ow = xv->shape[3];
  p.pad_h = cropped ? 0 : a.pads[0];
  p.pad_w = cropped ? 0 : a.pads[1];
  p.stride_h = a.strides[0];
  p.stride_w = a.strides[1];
  p.dil_h = a.dilations[0];
  p.dil_w = a.dilations[1];
  p.group = a.group;
  if (wv->shape[0] != p.k || wv->shape[1] * a.group != p.c) {
    return invalid_argument(fmt::format("weights {} do not fit input {} / output {} with group {}",
                                        shape_str(wv->shape), shape_str(xv->shape), shape_str(yv->shape), a.group));
  }
  // cuDNN's part first, before anything is added to the plan: a shape it cannot plan runs on our own kernels.
  if (Status planned = plan_with_cudnn(b, p, &step->desc, &step->algo); !planned.is_ok()) {
    return conv_fallback(b, n, planned, /*transposed=*/true);
  }
  b.need_workspace(step->algo.workspace);
  step->workspace = b.workspace();
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(yv, dt));
  step->y_raw = y;
  if (cropped) {
    step->cropped = true;
    step->crop_t = a.pads[0];
    step->crop_l = a.pads[1];
    step->y_full.dtype = dt;
    step->y_full.shape = {p.n, p.c, p.h, p.w};
    step->y_full.ref = b.scratch(step->y_full.nbytes());
  }
  RETURN_IF_ERROR(build_conv_epilogue(b, n, y, p.c, a.act, &step->epilogue));
  b.add_step(std::move(step), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

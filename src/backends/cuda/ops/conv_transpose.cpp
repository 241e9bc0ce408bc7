// ConvTranspose as cuDNN's backward-data convolution, then the same fused epilogue as Conv (bias + activation).
#include <fmt/format.h>

#include "backends/cuda/check.h"
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

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    y_ptr_ = b.ptr(y_raw.ref);
    w_ptr_ = b.ptr(w);
    ws_ptr_ = b.ptr(workspace);
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y_raw.ref && epilogue.out_dtype == y_raw.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    const float one = 1.f, zero = 0.f;
    cudnnStatus_t rc = cudnnConvolutionBackwardData(ctx.cudnn, &one, desc.w, w_ptr_, desc.y, x_ptr_, desc.conv,
                                                    static_cast<cudnnConvolutionBwdDataAlgo_t>(algo.algo), ws_ptr_,
                                                    algo.workspace, &zero, desc.x, y_ptr_);
    if (ctx.inject_cudnn_not_supported) {
      ctx.inject_cudnn_not_supported = false;
      rc = CUDNN_STATUS_NOT_SUPPORTED;
    }
    SO_GPU_CHECK(rc);
    if (run_epilogue_) SO_LAUNCH(ctx, k::launch_elementwise(epi_params_, ctx.stream));
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(x.ref);
    reads->push_back(w);
    writes->push_back(workspace);
    writes->push_back(y_raw.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  EwProgram* program() override { return &epilogue; }

 private:
  const void* x_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* ws_ptr_ = nullptr;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

}  // namespace

Status build_conv_transpose(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  if (a.pads[0] != a.pads[2] || a.pads[1] != a.pads[3]) {
    return unsupported("asymmetric pads on ConvTranspose (cuDNN takes symmetric pads only)");
  }
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<DeconvStep>();
  // The forward convolution whose data gradient this is: input dx = our output, output dy = our input.
  ConvProblem& p = step->problem;
  p.backward_data = true;
  p.dtype = dt;
  p.n = yv->shape[0];
  p.c = yv->shape[1];
  p.h = yv->shape[2];
  p.w = yv->shape[3];
  p.k = xv->shape[1];
  p.kh = wv->shape[2];
  p.kw = wv->shape[3];
  p.oh = xv->shape[2];
  p.ow = xv->shape[3];
  p.pad_h = a.pads[0];
  p.pad_w = a.pads[1];
  p.stride_h = a.strides[0];
  p.stride_w = a.strides[1];
  p.dil_h = a.dilations[0];
  p.dil_w = a.dilations[1];
  p.group = a.group;
  if (wv->shape[0] != p.k || wv->shape[1] * a.group != p.c) {
    return invalid_argument(fmt::format("weights {} do not fit input {} / output {} with group {}",
                                        shape_str(wv->shape), shape_str(xv->shape), shape_str(yv->shape), a.group));
  }
  RETURN_IF_ERROR(make_conv_descriptors(p, &step->desc));
  ASSIGN_OR_RETURN(step->algo, choose_conv_algo(b.device(), b.cudnn(), p, &step->desc));
  b.need_workspace(step->algo.workspace);
  step->workspace = b.workspace();
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(yv, dt));
  step->y_raw = y;
  EwProgram& e = step->epilogue;
  e.shape = yv->shape;
  e.inputs.push_back({y.ref, y.dtype, y.shape});
  if (const graph::Value* bias = n.input(2)) {
    ASSIGN_OR_RETURN(DevTensor bt, b.input(bias, DType::kF32));
    e.inputs.push_back({bt.ref, DType::kF32, Shape{1, p.c, 1, 1}});
    k::EwInstr add;
    add.op = k::EwOp::kAdd;
    add.src = static_cast<int8_t>(e.inputs.size() - 1);
    e.instrs.push_back(add);
  }
  k::EwInstr act;
  if (activation_instr(a.act, &act)) e.instrs.push_back(act);
  e.out = y.ref;
  e.out_dtype = y.dtype;
  b.add_step(std::move(step), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

// Convolutions without cuDNN (conv_util.h): depthwise through kernels/depthwise.cu, pointwise 1x1 as one cuBLAS
// (strided batched) GEMM per batch: y[n] (K x HW) = W (K x C) * x[n] (C x HW). Both end with the same fused
// epilogue program as the cuDNN path, so the fusion pass treats them alike.
#include <fmt/format.h>

#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/conv_util.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

class OwnConvStep : public Step {
 public:
  enum class Kind { kDepthwise, kPointwise } kind = Kind::kDepthwise;
  DevTensor x, y;
  BufRef w;
  k::DepthwiseParams dw;                       // kDepthwise (pointers filled at bind)
  int64_t batch = 1, c = 0, kout = 0, hw = 0;  // kPointwise
  EwProgram epilogue;

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    w_ptr_ = b.ptr(w);
    y_ptr_ = b.ptr(y.ref);
    dw.x = x_ptr_;
    dw.w = w_ptr_;
    dw.y = y_ptr_;
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y.ref && epilogue.out_dtype == y.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    if (kind == Kind::kDepthwise) {
      SO_LAUNCH(k::launch_depthwise(dw, ctx.stream));
    } else {
      const float one = 1.f, zero = 0.f;
      const cudaDataType_t t = y.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
      SO_GPU_CHECK(cublasGemmStridedBatchedEx(
          ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(hw), static_cast<int>(kout), static_cast<int>(c), &one,
          x_ptr_, t, static_cast<int>(hw), c * hw, w_ptr_, t, static_cast<int>(c), 0, &zero, y_ptr_, t,
          static_cast<int>(hw), kout * hw, static_cast<int>(batch), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (run_epilogue_) SO_LAUNCH(k::launch_elementwise(epi_params_, ctx.stream));
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(x.ref);
    reads->push_back(w);
    writes->push_back(y.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  unsigned calls() const override {
    if (kind == Kind::kDepthwise) return kCallsOwnKernels;
    return kCallsCublas | (run_epilogue_ ? kCallsOwnKernels : 0u);
  }

  EwProgram* program() override { return &epilogue; }

 private:
  const void* x_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

}  // namespace

Status build_conv_epilogue(PlanBuilder& b, const graph::Node& n, const DevTensor& y, int64_t channels,
                           const graph::Activation& act, EwProgram* e) {
  e->shape = y.shape;
  e->inputs.push_back({y.ref, y.dtype, y.shape});
  if (const graph::Value* bias = n.input(2)) {
    ASSIGN_OR_RETURN(DevTensor bt, b.input(bias, DType::kF32));
    e->inputs.push_back({bt.ref, DType::kF32, Shape{1, channels, 1, 1}});
    k::EwInstr add;
    add.op = k::EwOp::kAdd;
    add.src = static_cast<int8_t>(e->inputs.size() - 1);
    e->instrs.push_back(add);
  }
  if (n.op == graph::OpKind::kConv) {
    if (const graph::Value* res = n.input(3)) {
      ASSIGN_OR_RETURN(DevTensor rt, b.input_any(res));
      e->inputs.push_back({rt.ref, rt.dtype, rt.shape});
      k::EwInstr add;
      add.op = k::EwOp::kAdd;
      add.src = static_cast<int8_t>(e->inputs.size() - 1);
      e->instrs.push_back(add);
    }
  }
  k::EwInstr ins;
  if (activation_instr(act, &ins)) e->instrs.push_back(ins);
  e->out = y.ref;
  e->out_dtype = y.dtype;
  return Status::ok();
}

Status build_conv_without_cudnn(PlanBuilder& b, const graph::Node& n, bool* handled) {
  *handled = false;
  if (!b.own_conv()) return Status::ok();
  const auto& a = n.attr<graph::ConvAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  const int64_t C = xv->shape[1], K = wv->shape[0];
  const bool depthwise = a.group == C && K == C && wv->shape[1] == 1;
  const bool pointwise = a.group == 1 && wv->shape[1] == C && wv->shape[2] == 1 && wv->shape[3] == 1 &&
                         a.strides[0] == 1 && a.strides[1] == 1 && a.pads[0] == 0 && a.pads[1] == 0 && a.pads[2] == 0 &&
                         a.pads[3] == 0 && yv->shape[2] == xv->shape[2] && yv->shape[3] == xv->shape[3];
  if (!depthwise && !pointwise) return Status::ok();
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<OwnConvStep>();
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(step->y, b.output(yv, dt));
  if (depthwise) {
    step->kind = OwnConvStep::Kind::kDepthwise;
    k::DepthwiseParams& p = step->dw;
    p.dt = to_kdt(dt);
    p.n = static_cast<int>(xv->shape[0]);
    p.c = static_cast<int>(C);
    p.h = static_cast<int>(xv->shape[2]);
    p.w_in = static_cast<int>(xv->shape[3]);
    p.oh = static_cast<int>(yv->shape[2]);
    p.ow = static_cast<int>(yv->shape[3]);
    p.kh = static_cast<int>(wv->shape[2]);
    p.kw = static_cast<int>(wv->shape[3]);
    p.sh = static_cast<int>(a.strides[0]);
    p.sw = static_cast<int>(a.strides[1]);
    p.pad_t = static_cast<int>(a.pads[0]);
    p.pad_l = static_cast<int>(a.pads[1]);
    p.dil_h = static_cast<int>(a.dilations[0]);
    p.dil_w = static_cast<int>(a.dilations[1]);
  } else {
    step->kind = OwnConvStep::Kind::kPointwise;
    step->batch = xv->shape[0];
    step->c = C;
    step->kout = K;
    step->hw = xv->shape[2] * xv->shape[3];
  }
  RETURN_IF_ERROR(build_conv_epilogue(b, n, step->y, K, a.act, &step->epilogue));
  b.add_step(std::move(step), &n);
  *handled = true;
  return Status::ok();
}

}  // namespace steadyocr::cuda

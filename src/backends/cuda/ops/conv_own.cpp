// Convolutions without cuDNN (conv_util.h): depthwise through kernels/depthwise.cu, pointwise 1x1 as one cuBLAS
// (strided batched) GEMM per batch: y[n] (K x HW) = W (K x C) * x[n] (C x HW). With cuDNN off (BackendConfig::cudnn)
// every other convolution too: im2col (kernels/im2col.cu) then y[n]_g (K/g x OHOW) = W_g (K/g x C/g*kh*kw) *
// col[n]_g, and transposed ones as col[n]_g (C/g*kh*kw x HW) = W_g^T * x[n]_g then col2im. All end with the same
// fused epilogue program as the cuDNN path, so the fusion pass treats them alike. With cuDNN on, two more take the
// own kernels (STEADYOCR_CUDA_OWN_CONV=0 gives them back to cuDNN): convolutions along W on rows of height 1
// (im2col + GEMM) and transposed convolutions whose kernel is their stride (kernels/deconv.cu). The depthwise and
// shuffle-deconv kernels evaluate per-channel epilogues themselves (fuse_channel_epilogue), and so does the fp16
// pointwise kernel (kernels/pointwise.cu) that replaces cuBLAS's GEMM where the epilogue allows.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <string>

#include "backends/cuda/check.h"
#include "backends/cuda/cuda_backend.h"
#include "backends/cuda/faults.h"
#include "backends/cuda/ops/conv_util.h"
#include "backends/cuda/ops/ops_util.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timer.h"

namespace steadyocr::cuda {
namespace {

// Input channels up to which the fused pointwise kernel takes rows that are not in words (k::pointwise_in_words; its
// register-staged path; wider ones stay with cuBLAS).
constexpr int64_t kFusedPointwiseMaxChannels = 128;

// A convolution's epilogue into its own kernel (k::DwEpilogue; depthwise and shuffle deconvolution): the program reads
// the raw output `y` as its accumulator over y's own index space, and every other operand is one value per channel or
// one value in all. False (and `e` unused) otherwise: the epilogue runs as its own launch.
bool fuse_channel_epilogue(const EwProgram& epilogue, const DevTensor& y, const Bindings& b, k::DwEpilogue* e) {
  if (epilogue.acc_src != 0 || !(epilogue.inputs[0].ref == y.ref) || epilogue.inputs[0].dtype != y.dtype ||
      epilogue.shape != y.shape || y.shape.size() != 4 || epilogue.instrs.empty() ||
      epilogue.instrs.size() > static_cast<size_t>(k::kEwMaxInstrs) ||
      epilogue.inputs.size() > static_cast<size_t>(k::kEwMaxInputs)) {
    return false;
  }
  const int64_t channels = y.shape[1];
  for (size_t i = 1; i < epilogue.inputs.size(); ++i) {
    const auto& in = epilogue.inputs[i];
    if (in.dtype != DType::kF32 && in.dtype != DType::kF16) return false;
    Shape s = in.shape;
    if (s.size() > 4) return false;
    s.insert(s.begin(), 4 - s.size(), 1);
    const bool one = shape_numel(s) == 1;
    if (!one && !(s[0] == 1 && s[1] == channels && s[2] == 1 && s[3] == 1)) return false;
    e->in[i] = b.ptr(in.ref);
    e->in_dt[i] = to_kdt(in.dtype);
    e->per_channel[i] = !one;
  }
  e->n_instrs = static_cast<int>(epilogue.instrs.size());
  for (size_t j = 0; j < epilogue.instrs.size(); ++j) e->ins[j] = epilogue.instrs[j];
  e->out = b.ptr(epilogue.out);
  e->out_dt = to_kdt(epilogue.out_dtype);
  return true;
}

class OwnConvStep : public Step {
 public:
  enum class Kind { kDepthwise, kPointwise, kIm2col } kind = Kind::kDepthwise;
  DevTensor x, y;
  BufRef w;
  k::DepthwiseParams dw;                       // kDepthwise (pointers filled at bind)
  int64_t batch = 1, c = 0, kout = 0, hw = 0;  // kPointwise (and kIm2col: hw = input H*W)
  // kIm2col: col holds `chunk` images' columns (c*kh*kw x ohw each); the GEMMs run per group.
  k::Im2colParams ic;
  BufRef col;
  int64_t group = 1, kk = 1, ohw = 0, chunk = 1;
  EwProgram epilogue;

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    w_ptr_ = b.ptr(w);
    y_ptr_ = b.ptr(y.ref);
    dw.x = x_ptr_;
    dw.w = w_ptr_;
    dw.y = y_ptr_;
    if (kind == Kind::kIm2col) col_ptr_ = b.ptr(col);
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y.ref && epilogue.out_dtype == y.dtype &&
                      epilogue.inputs.size() == 1);
    dw.epi = k::DwEpilogue();
    if (run_epilogue_ && kind == Kind::kDepthwise && fuse_channel_epilogue(epilogue, y, b, &dw.epi)) {
      run_epilogue_ = false;
    }
    // fp16 pointwise with a per-channel epilogue: one kernel of our own instead of cuBLAS's GEMM and the epilogue's
    // launch (k::launch_pointwise), and no cuBLAS heuristics on a new shape. It takes rows in words (input channels a
    // multiple of 8, an even number of pixels) at any width, other rows up to 128 input channels, and one pixel per
    // image; wider sums on odd rows stay with cuBLAS (the register-staged kernel was slower there: H100, 2026-12-06,
    // docs/BENCHMARKS.md). fp32 keeps cuBLAS, as do epilogues with other operands.
    fused_gemm_ = false;
    if ((c <= kFusedPointwiseMaxChannels || hw == 1 || k::pointwise_in_words(c, hw)) && run_epilogue_ &&
        kind == Kind::kPointwise && y.dtype == DType::kF16 && k::pointwise_supported(batch, c, kout, hw)) {
      pw_ = k::PointwiseParams();
      if (fuse_channel_epilogue(epilogue, y, b, &pw_.epi)) {
        pw_.x = x_ptr_;
        pw_.w = w_ptr_;
        pw_.n = static_cast<int>(batch);
        pw_.c = static_cast<int>(c);
        pw_.k = static_cast<int>(kout);
        pw_.hw = static_cast<int>(hw);
        run_epilogue_ = false;
        fused_gemm_ = true;
      }
    }
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    if (kind == Kind::kDepthwise) {
      SO_LAUNCH(k::launch_depthwise(dw, ctx.stream));
    } else if (kind == Kind::kIm2col) {
      RETURN_IF_ERROR(enqueue_im2col(ctx));
    } else if (fused_gemm_) {
      SO_LAUNCH(k::launch_pointwise(pw_, ctx.stream));
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
    if (kind == Kind::kIm2col) writes->push_back(col);
    writes->push_back(y.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  unsigned calls() const override {
    if (kind == Kind::kDepthwise) return kCallsOwnKernels;  // the epilogue fused or not
    if (kind == Kind::kIm2col) return kCallsCublas | kCallsOwnKernels;
    if (fused_gemm_) return kCallsOwnKernels;
    return kCallsCublas | (run_epilogue_ ? kCallsOwnKernels : 0u);
  }

  EwProgram* program() override { return &epilogue; }

 private:
  Status enqueue_im2col(const ExecContext& ctx) const {
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t t = y.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
    const size_t es = dtype_size(y.dtype);
    const int64_t cg = c / group, kg = kout / group, rows = cg * kk;  // GEMM: (kg x rows) * (rows x ohw)
    for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
      const int64_t cnt = std::min(chunk, batch - n0);
      k::Im2colParams p = ic;
      p.n = static_cast<int>(cnt);
      p.src = static_cast<const char*>(x_ptr_) + n0 * c * hw * es;
      p.dst = col_ptr_;
      SO_LAUNCH(k::launch_im2col(p, ctx.stream));
      char* y0 = static_cast<char*>(y_ptr_) + n0 * kout * ohw * es;
      if (group == 1) {
        SO_GPU_CHECK(cublasGemmStridedBatchedEx(
            ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(ohw), static_cast<int>(kout), static_cast<int>(rows),
            &one, col_ptr_, t, static_cast<int>(ohw), rows * ohw, w_ptr_, t, static_cast<int>(rows), 0, &zero, y0, t,
            static_cast<int>(ohw), kout * ohw, static_cast<int>(cnt), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
        continue;
      }
      for (int64_t i = 0; i < cnt; ++i) {
        SO_GPU_CHECK(cublasGemmStridedBatchedEx(
            ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(ohw), static_cast<int>(kg), static_cast<int>(rows),
            &one, static_cast<const char*>(col_ptr_) + i * c * kk * ohw * es, t, static_cast<int>(ohw), rows * ohw,
            w_ptr_, t, static_cast<int>(rows), kg * rows, &zero, y0 + i * kout * ohw * es, t, static_cast<int>(ohw),
            kg * ohw, static_cast<int>(group), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
    }
    return Status::ok();
  }

  const void* x_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  void* col_ptr_ = nullptr;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
  k::PointwiseParams pw_;  // fused_gemm_: the GEMM and its epilogue in one launch
  bool fused_gemm_ = false;
};

// ConvTranspose without cuDNN: per image and group col_g (Cout/g*kh*kw x HW) = W_g^T (Cout/g*kh*kw x Cin/g) *
// x_g (Cin/g x HW), then col2im gathers the output (its pads and output_padding are in the output sides).
class OwnDeconvStep : public Step {
 public:
  DevTensor x, y;
  BufRef w, col;
  k::Im2colParams ci;  // col2im: h/w_in the input sides, oh/ow the output sides
  int64_t batch = 1, cin = 0, cout = 0, group = 1, kk = 1, hw = 0, ohw = 0, chunk = 1;
  EwProgram epilogue;

  Status bind(const Bindings& b) override {
    x_ptr_ = b.ptr(x.ref);
    w_ptr_ = b.ptr(w);
    y_ptr_ = b.ptr(y.ref);
    col_ptr_ = b.ptr(col);
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y.ref && epilogue.out_dtype == y.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    const float one = 1.f, zero = 0.f;
    const cudaDataType_t t = y.dtype == DType::kF16 ? CUDA_R_16F : CUDA_R_32F;
    const size_t es = dtype_size(y.dtype);
    const int64_t cing = cin / group, rows = cout / group * kk;  // col_g: rows x hw
    for (int64_t n0 = 0; n0 < batch; n0 += chunk) {
      const int64_t cnt = std::min(chunk, batch - n0);
      const char* x0 = static_cast<const char*>(x_ptr_) + n0 * cin * hw * es;
      for (int64_t i = 0; i < cnt; ++i) {
        // Column-major: col_g^T (hw x rows) = x_g^T (hw x cing) * W_g (cing x rows), W_g stored as (rows x cing).
        SO_GPU_CHECK(cublasGemmStridedBatchedEx(
            ctx.cublas, CUBLAS_OP_N, CUBLAS_OP_T, static_cast<int>(hw), static_cast<int>(rows), static_cast<int>(cing),
            &one, x0 + i * cin * hw * es, t, static_cast<int>(hw), cing * hw, w_ptr_, t, static_cast<int>(rows),
            cing * rows, &zero, static_cast<char*>(col_ptr_) + i * cout * kk * hw * es, t, static_cast<int>(hw),
            rows * hw, static_cast<int>(group), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
      }
      k::Im2colParams p = ci;
      p.n = static_cast<int>(cnt);
      p.src = col_ptr_;
      p.dst = static_cast<char*>(y_ptr_) + n0 * cout * ohw * es;
      SO_LAUNCH(k::launch_col2im(p, ctx.stream));
    }
    if (run_epilogue_) SO_LAUNCH(k::launch_elementwise(epi_params_, ctx.stream));
    return Status::ok();
  }

  void collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const override {
    reads->push_back(x.ref);
    reads->push_back(w);
    writes->push_back(col);
    writes->push_back(y.ref);
    for (const auto& in : epilogue.inputs) reads->push_back(in.ref);
    writes->push_back(epilogue.out);
  }

  unsigned calls() const override { return kCallsCublas | kCallsOwnKernels; }

  EwProgram* program() override { return &epilogue; }

 private:
  const void* x_ptr_ = nullptr;
  const void* w_ptr_ = nullptr;
  void* y_ptr_ = nullptr;
  void* col_ptr_ = nullptr;
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

// ConvTranspose whose kernel is its stride (k::launch_shuffle_deconv): one kernel, the epilogue fused where it can be.
class ShuffleDeconvStep : public Step {
 public:
  DevTensor x, y;
  BufRef w;
  k::ShuffleDeconvParams p;
  EwProgram epilogue;

  Status bind(const Bindings& b) override {
    p.x = b.ptr(x.ref);
    p.w = b.ptr(w);
    p.y = b.ptr(y.ref);
    p.epi = k::DwEpilogue();
    run_epilogue_ = !(epilogue.instrs.empty() && epilogue.out == y.ref && epilogue.out_dtype == y.dtype &&
                      epilogue.inputs.size() == 1);
    if (run_epilogue_ && fuse_channel_epilogue(epilogue, y, b, &p.epi)) run_epilogue_ = false;
    if (run_epilogue_) RETURN_IF_ERROR(epilogue.to_params(b, &epi_params_));
    return Status::ok();
  }

  Status enqueue(const ExecContext& ctx) const override {
    SO_LAUNCH(k::launch_shuffle_deconv(p, ctx.stream));
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

  unsigned calls() const override { return kCallsOwnKernels; }

  EwProgram* program() override { return &epilogue; }

 private:
  k::EwParams epi_params_;
  bool run_epilogue_ = false;
};

// The convolution's geometry into a kernel's parameters (DepthwiseParams, Im2colParams: same field names); `c` is
// the channel count the kernel iterates over, x/y the input and output of the node (for ConvTranspose too).
template <typename P, typename Attrs>
void set_geometry(P* p, DType dt, int64_t c, const graph::Value* x, const graph::Value* w, const graph::Value* y,
                  const Attrs& a) {
  p->dt = to_kdt(dt);
  p->c = static_cast<int>(c);
  p->h = static_cast<int>(x->shape[2]);
  p->w_in = static_cast<int>(x->shape[3]);
  p->oh = static_cast<int>(y->shape[2]);
  p->ow = static_cast<int>(y->shape[3]);
  p->kh = static_cast<int>(w->shape[2]);
  p->kw = static_cast<int>(w->shape[3]);
  p->sh = static_cast<int>(a.strides[0]);
  p->sw = static_cast<int>(a.strides[1]);
  p->pad_t = static_cast<int>(a.pads[0]);
  p->pad_l = static_cast<int>(a.pads[1]);
  p->dil_h = static_cast<int>(a.dilations[0]);
  p->dil_w = static_cast<int>(a.dilations[1]);
}

// Images per im2col/col2im scratch: as many as fit 64 MiB, at least one.
int64_t images_per_chunk(int64_t batch, int64_t bytes_per_image) {
  constexpr int64_t kScratch = int64_t{64} << 20;
  return std::clamp<int64_t>(kScratch / std::max<int64_t>(bytes_per_image, 1), 1, std::max<int64_t>(batch, 1));
}

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

Status build_conv_without_cudnn(PlanBuilder& b, const graph::Node& n, bool* handled, bool force) {
  *handled = false;
  if (!b.own_conv() && !force) return Status::ok();
  const auto& a = n.attr<graph::ConvAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  const int64_t C = xv->shape[1], K = wv->shape[0];
  const bool depthwise = a.group == C && K == C && wv->shape[1] == 1;
  const bool pointwise = a.group == 1 && wv->shape[1] == C && wv->shape[2] == 1 && wv->shape[3] == 1 &&
                         a.strides[0] == 1 && a.strides[1] == 1 && a.pads[0] == 0 && a.pads[1] == 0 && a.pads[2] == 0 &&
                         a.pads[3] == 0 && yv->shape[2] == xv->shape[2] && yv->shape[3] == xv->shape[3];
  // A convolution along W alone on rows of height 1 (the recogniser's neck: 1x3 over [N, C, 1, T]): cuDNN took
  // 0.06-0.11 ms for each (H200, 2026-12-03); im2col and one GEMM take it with the own kernels.
  const bool line = xv->shape[2] == 1 && wv->shape[2] == 1 && yv->shape[2] == 1 && a.group == 1;
  const bool general = !depthwise && !pointwise;
  if (general && b.use_cudnn() && !force && !line) return Status::ok();
  if (wv->shape[1] * a.group != C || K % a.group != 0) {
    return invalid_argument(fmt::format("weights {} do not fit input {} with group {}", shape_str(wv->shape),
                                        shape_str(xv->shape), a.group));
  }
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<OwnConvStep>();
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(step->y, b.output(yv, dt));
  if (depthwise) {
    step->kind = OwnConvStep::Kind::kDepthwise;
    k::DepthwiseParams& p = step->dw;
    set_geometry(&p, dt, C, xv, wv, yv, a);
    p.n = static_cast<int>(xv->shape[0]);
  } else if (pointwise) {
    step->kind = OwnConvStep::Kind::kPointwise;
    step->batch = xv->shape[0];
    step->c = C;
    step->kout = K;
    step->hw = xv->shape[2] * xv->shape[3];
  } else {
    step->kind = OwnConvStep::Kind::kIm2col;
    step->batch = xv->shape[0];
    step->c = C;
    step->kout = K;
    step->group = a.group;
    step->hw = xv->shape[2] * xv->shape[3];
    step->kk = wv->shape[2] * wv->shape[3];
    step->ohw = yv->shape[2] * yv->shape[3];
    k::Im2colParams& p = step->ic;
    set_geometry(&p, dt, C, xv, wv, yv, a);
    const int64_t per_image = C * step->kk * step->ohw * static_cast<int64_t>(dtype_size(dt));
    step->chunk = images_per_chunk(step->batch, per_image);
    step->col = b.scratch(static_cast<size_t>(step->chunk * per_image));
  }
  RETURN_IF_ERROR(build_conv_epilogue(b, n, step->y, K, a.act, &step->epilogue));
  b.add_step(std::move(step), &n);
  *handled = true;
  return Status::ok();
}

Status build_conv_transpose_without_cudnn(PlanBuilder& b, const graph::Node& n, bool* handled, bool force) {
  *handled = false;
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const graph::Value* xv = n.input(0);
  const graph::Value* wv = n.input(1);
  const graph::Value* yv = n.output();
  const int64_t cin = xv->shape[1], cout = yv->shape[1];
  // Kernel == stride, no pads, dilation, output padding or groups: every output has one input pixel (the detector's
  // 2x2 stride-2 heads), a kernel of its own (k::launch_shuffle_deconv); cuDNN took 0.30 ms for one on a page.
  const bool shuffle = a.group == 1 && wv->shape.size() == 4 && wv->shape[2] == a.strides[0] &&
                       wv->shape[3] == a.strides[1] && a.dilations[0] == 1 && a.dilations[1] == 1 &&
                       a.pads == std::array<int64_t, 4>{0, 0, 0, 0} && a.output_padding[0] == 0 &&
                       a.output_padding[1] == 0 && yv->shape[2] == xv->shape[2] * a.strides[0] &&
                       yv->shape[3] == xv->shape[3] * a.strides[1] && wv->shape[0] == cin && wv->shape[1] == cout;
  if (shuffle && (b.own_conv() || force)) {
    const DType dt = b.compute_type(n);
    auto step = std::make_unique<ShuffleDeconvStep>();
    ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
    ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
    ASSIGN_OR_RETURN(step->y, b.output(yv, dt));
    k::ShuffleDeconvParams& p = step->p;
    p.dt = to_kdt(dt);
    p.n = static_cast<int>(xv->shape[0]);
    p.cin = static_cast<int>(cin);
    p.cout = static_cast<int>(cout);
    p.h = static_cast<int>(xv->shape[2]);
    p.w_in = static_cast<int>(xv->shape[3]);
    p.sh = static_cast<int>(a.strides[0]);
    p.sw = static_cast<int>(a.strides[1]);
    RETURN_IF_ERROR(build_conv_epilogue(b, n, step->y, cout, a.act, &step->epilogue));
    b.add_step(std::move(step), &n);
    *handled = true;
    return Status::ok();
  }
  if (b.use_cudnn() && !force) return Status::ok();
  if (wv->shape[0] != cin || wv->shape[1] * a.group != cout || cin % a.group != 0) {
    return invalid_argument(fmt::format("weights {} do not fit input {} / output {} with group {}",
                                        shape_str(wv->shape), shape_str(xv->shape), shape_str(yv->shape), a.group));
  }
  const DType dt = b.compute_type(n);
  auto step = std::make_unique<OwnDeconvStep>();
  ASSIGN_OR_RETURN(step->x, b.input(xv, dt));
  ASSIGN_OR_RETURN(step->w, b.weight(wv->constant, dt));
  ASSIGN_OR_RETURN(step->y, b.output(yv, dt));
  step->batch = xv->shape[0];
  step->cin = cin;
  step->cout = cout;
  step->group = a.group;
  step->kk = wv->shape[2] * wv->shape[3];
  step->hw = xv->shape[2] * xv->shape[3];
  step->ohw = yv->shape[2] * yv->shape[3];
  k::Im2colParams& p = step->ci;
  set_geometry(&p, dt, cout, xv, wv, yv, a);
  const int64_t per_image = cout * step->kk * step->hw * static_cast<int64_t>(dtype_size(dt));
  step->chunk = images_per_chunk(step->batch, per_image);
  step->col = b.scratch(static_cast<size_t>(step->chunk * per_image));
  RETURN_IF_ERROR(build_conv_epilogue(b, n, step->y, cout, a.act, &step->epilogue));
  b.add_step(std::move(step), &n);
  *handled = true;
  return Status::ok();
}

Status plan_with_cudnn(PlanBuilder& b, const ConvProblem& p, ConvDescriptors* d, ConvAlgoChoice* algo) {
  if (faults::on_conv_plan(model_role(b.graph()))) {
    return gpu_status(CUDNN_STATUS_NOT_SUPPORTED, "cudnnGetConvolutionForwardAlgorithm_v7 [injected cudnn_no_algo]",
                      __FILE__, __LINE__);
  }
  // Timed apart from the rest of the convolution's build (steadyocr_cuda_build_ms_total{op="Conv"} holds both).
  Stopwatch sw;
  RETURN_IF_ERROR(make_conv_descriptors(p, d));
  const double descriptors_ms = sw.elapsed_ms();
  sw.reset();
  auto chosen = choose_conv_algo(
      b.device(), [&b] { return b.cudnn(); }, p, d);
  b.add_cudnn_ms(descriptors_ms, sw.elapsed_ms());
  ASSIGN_OR_RETURN(*algo, std::move(chosen));
  return Status::ok();
}

Status conv_fallback(PlanBuilder& b, const graph::Node& n, const Status& cudnn_error, bool transposed) {
  const StatusCode c = cudnn_error.code();
  if (c == StatusCode::kDeviceFault || c == StatusCode::kOutOfMemory || c == StatusCode::kInvalidArgument) {
    return cudnn_error;
  }
  const char* op = transposed ? "ConvTranspose" : "Conv";
  log::warn("cuda", "{} '{}': cuDNN cannot plan it ({}); it runs as {} on our own kernels", op, n.name,
            cudnn_error.message(), transposed ? "cuBLAS GEMM + col2im" : "im2col + cuBLAS GEMM");
  metrics::inc("steadyocr_cuda_conv_cudnn_fallbacks_total", {{"op", op}});
  bool handled = false;
  RETURN_IF_ERROR(transposed ? build_conv_transpose_without_cudnn(b, n, &handled, /*force=*/true)
                             : build_conv_without_cudnn(b, n, &handled, /*force=*/true));
  if (!handled) return internal_error(fmt::format("{} '{}': no cuDNN-free path took it", op, n.name));
  return Status::ok();
}

}  // namespace steadyocr::cuda

// LayerNorm over the trailing axes from `axis` (kernels/layernorm.cu), scale and bias in fp32.
#include <fmt/format.h>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

// A constant scale/bias broadcast (NumPy rules, right-aligned) to the normalised shape, as fp32 on the device.
Result<DevTensor> expanded_param(PlanBuilder& b, const graph::Value* v, const Shape& norm_shape) {
  const int64_t cols = shape_numel(norm_shape);
  if (shape_numel(v->shape) == cols) return b.input(v, DType::kF32);
  if (!v->is_constant()) return unsupported("LayerNorm scale/bias that broadcast must be constant");
  const Shape& s = v->constant.shape();
  if (s.size() > norm_shape.size()) return invalid_argument("LayerNorm scale/bias of higher rank than normalised");
  std::vector<float> src = v->constant.to_floats();
  std::vector<int64_t> ss = shape_strides(s);
  std::vector<float> full(static_cast<size_t>(cols));
  const size_t r = norm_shape.size(), off = r - s.size();
  for (int64_t j = 0; j < cols; ++j) {
    int64_t rem = j, at = 0;
    for (size_t d = r; d-- > 0;) {
      const int64_t c = rem % norm_shape[d];
      rem /= norm_shape[d];
      if (d < off) continue;
      const int64_t sd = s[d - off];
      if (sd != 1 && sd != norm_shape[d]) return invalid_argument("LayerNorm scale/bias does not broadcast");
      if (sd != 1) at += c * ss[d - off];
    }
    full[static_cast<size_t>(j)] = src[static_cast<size_t>(at)];
  }
  DevTensor t;
  ASSIGN_OR_RETURN(t.ref, b.weight_floats(full));
  t.dtype = DType::kF32;
  t.shape = norm_shape;
  return t;
}

}  // namespace

Status build_layernorm(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::LayerNormAttrs>();
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  int64_t axis = 0;
  if (rank == 0 || !normalize_axis(a.axis, rank, &axis)) {
    return invalid_argument(fmt::format("axis {} out of range for {}", a.axis, shape_str(x.shape)));
  }
  int64_t rows = 1, cols = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= x.shape[d];
  for (int64_t d = axis; d < rank; ++d) cols *= x.shape[d];
  const Shape norm_shape(x.shape.begin() + axis, x.shape.end());
  ASSIGN_OR_RETURN(DevTensor scale, expanded_param(b, n.input(1), norm_shape));
  DevTensor bias;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(bias, expanded_param(b, n.input(2), norm_shape));
  }
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  struct Ptrs {
    const void* x;
    void* y;
    const float* scale;
    const float* bias;
  };
  auto ptrs = std::make_shared<Ptrs>();
  const float eps = a.epsilon;
  std::vector<BufRef> reads{x.ref, scale.ref};
  if (bias.ref.valid()) reads.push_back(bias.ref);
  b.add_step(std::make_unique<KernelStep>(
                 reads, std::vector<BufRef>{y.ref},
                 [ptrs, x, y, scale, bias](const Bindings& bd) {
                   *ptrs = {bd.ptr(x.ref), bd.ptr(y.ref), static_cast<const float*>(bd.ptr(scale.ref)),
                            static_cast<const float*>(bd.ptr(bias.ref))};
                 },
                 [ptrs, dt, rows, cols, eps](cudaStream_t s) {
                   return k::launch_layernorm(ptrs->x, ptrs->y, to_kdt(dt), ptrs->scale, ptrs->bias, rows, cols, eps,
                                              s);
                 }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

// BatchNorm that the passes could not fold into a conv (e.g. after a ConvTranspose in the det head).
#include <fmt/format.h>

#include <cmath>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

using graph::Node;

// BatchNorm (inference) as x * a[c] + b[c], with a and b folded on the host in double precision.
Status build_batchnorm(PlanBuilder& b, const Node& n) {
  const graph::Value* x = n.input(0);
  for (size_t i = 1; i < 5; ++i) {
    if (!n.input(i) || !n.input(i)->is_constant()) return unsupported("BatchNorm with computed parameters");
  }
  std::vector<float> scale = n.input(1)->constant.to_floats(), bias = n.input(2)->constant.to_floats(),
                     mean = n.input(3)->constant.to_floats(), var = n.input(4)->constant.to_floats();
  const size_t c = scale.size();
  if (x->shape.size() < 2 || static_cast<size_t>(x->shape[1]) != c || bias.size() != c || mean.size() != c ||
      var.size() != c) {
    return invalid_argument(fmt::format("BatchNorm parameters of size {} for input {}", c, shape_str(x->shape)));
  }
  float eps = std::holds_alternative<graph::BatchNormAttrs>(n.attrs) ? n.attr<graph::BatchNormAttrs>().epsilon : 1e-5f;
  std::vector<float> a(c), sh(c);
  for (size_t i = 0; i < c; ++i) {
    double inv = 1.0 / std::sqrt(static_cast<double>(var[i]) + eps);
    a[i] = static_cast<float>(scale[i] * inv);
    sh[i] = static_cast<float>(bias[i] - mean[i] * scale[i] * inv);
  }
  Shape pshape(x->shape.size(), 1);
  pshape[1] = static_cast<int64_t>(c);
  ASSIGN_OR_RETURN(DevTensor xin, b.input_any(x));
  ASSIGN_OR_RETURN(BufRef ra, b.weight_floats(a));
  ASSIGN_OR_RETURN(BufRef rb, b.weight_floats(sh));
  EwProgram p;
  p.shape = n.output()->shape;
  p.inputs.push_back({xin.ref, xin.dtype, xin.shape});
  p.inputs.push_back({ra, DType::kF32, pshape});
  p.inputs.push_back({rb, DType::kF32, pshape});
  k::EwInstr mul, add;
  mul.op = k::EwOp::kMul;
  mul.src = 1;
  add.op = k::EwOp::kAdd;
  add.src = 2;
  p.instrs = {mul, add};
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), b.compute_type(n)));
  p.out = y.ref;
  p.out_dtype = y.dtype;
  b.add_step(std::make_unique<EwStep>(std::move(p)), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

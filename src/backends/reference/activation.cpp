// Relu, Sigmoid, HardSigmoid, HardSwish, Clip: elementwise f32 through Activation::apply, the same
// definition the fused Conv epilogues use. Clip's bounds come from inputs 1/2 when present (opset >= 11),
// else from the attributes.
#include <cmath>
#include <limits>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {
namespace {

using graph::Activation;
using graph::ActKind;
using graph::OpKind;

ActKind kind_of(OpKind op) {
  switch (op) {
    case OpKind::kRelu:
      return ActKind::kRelu;
    case OpKind::kSigmoid:
      return ActKind::kSigmoid;
    case OpKind::kHardSigmoid:
      return ActKind::kHardSigmoid;
    case OpKind::kHardSwish:
      return ActKind::kHardSwish;
    case OpKind::kClip:
      return ActKind::kClip;
    default:
      return ActKind::kNone;
  }
}

Status bound(const graph::Node& node, const Inputs& in, size_t i, float* v) {
  if (i >= in.size() || in[i] == nullptr || !in[i]->defined()) return Status::ok();
  if (in[i]->numel() != 1) {
    return invalid_argument(
        fmt::format("{}: bound input {} must be a scalar, got {}", node.describe(), i, in[i]->describe()));
  }
  *v = in[i]->to_floats()[0];
  return Status::ok();
}

}  // namespace

Status activation_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const ActKind kind = kind_of(node.op);
  Activation act;
  if (const auto* a = std::get_if<graph::ActAttrs>(&node.attrs); a != nullptr && a->act.kind == kind) {
    act = a->act;
  } else if (kind == ActKind::kHardSigmoid) {
    act = Activation::hard_sigmoid(0.2f, 0.5f);  // ONNX defaults
  } else if (kind == ActKind::kClip) {
    act = Activation::clip(-std::numeric_limits<float>::infinity(), std::numeric_limits<float>::infinity());
  } else {
    act.kind = kind;
  }
  if (kind == ActKind::kClip) {
    RETURN_IF_ERROR(bound(node, in, 1, &act.alpha));
    RETURN_IF_ERROR(bound(node, in, 2, &act.beta));
  }
  const Tensor& x = *in[0];
  Tensor& y = out[0];
  if (x.numel() != y.numel()) {
    return invalid_argument(fmt::format("{}: input {} vs output {}", node.describe(), x.describe(), y.describe()));
  }
  const float* px = x.data<float>();
  float* py = y.data<float>();
  parallel_for(
      x.numel(),
      [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) py[i] = act.apply(px[i]);
      },
      kMinParallelWork);
  return Status::ok();
}

}  // namespace steadyocr::reference

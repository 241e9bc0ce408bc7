// The cpu backend's ops, declared once: builder and conditions per op. CpuBackend::supports, the plan builder and
// the elementwise chains (which ops may join one) read this table.
#include <fmt/format.h>

#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

using graph::OpKind;

// oneDNN primitives and our float kernels compute in f32.
bool f32_outputs(const graph::Node& n, std::string* why) {
  for (const graph::Value* o : n.outputs) {
    if (o && o->dtype != DType::kF32) {
      if (why) *why = fmt::format("{} on {} is not supported (f32 only)", graph::op_name(n.op), dtype_name(o->dtype));
      return false;
    }
  }
  return true;
}

// Add/Sub/Mul/Div in f32, or on i64/i32 (shape arithmetic left at run time).
bool arithmetic(const graph::Node& n, std::string* why) {
  return int_binary_supported(n) || f32_outputs(n, why);
}

bool power(const graph::Node& n, std::string* why) {
  if (n.input(0) && n.input(1) && n.input(0)->dtype == DType::kF32 && n.input(1)->dtype != DType::kF32 &&
      !n.input(1)->is_constant()) {
    if (why) *why = "Pow with a runtime integer exponent is not supported";
    return false;
  }
  return f32_outputs(n, why);
}

}  // namespace

const common::OpTable<CpuBuildFn>& cpu_ops() {
  // Layout ops (no check) take any element type.
  static const common::OpTable<CpuBuildFn> table(
      "cpu", {
                 {{OpKind::kConv}, build_conv, f32_outputs},
                 {{OpKind::kConvTranspose}, build_conv_transpose, f32_outputs},
                 {{OpKind::kMatMul}, build_matmul, f32_outputs},
                 {{OpKind::kMaxPool, OpKind::kAveragePool, OpKind::kGlobalAveragePool}, build_pool, f32_outputs},
                 {{OpKind::kConcat}, build_concat},
                 {{OpKind::kTranspose}, build_transpose},
                 {{OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv}, build_eltwise, arithmetic},
                 {{OpKind::kPow}, build_eltwise, power},
                 {{OpKind::kSqrt, OpKind::kRelu, OpKind::kSigmoid, OpKind::kHardSigmoid, OpKind::kHardSwish,
                   OpKind::kClip, OpKind::kBatchNorm},
                  build_eltwise,
                  f32_outputs},
                 {{OpKind::kSoftmax}, build_softmax, f32_outputs},
                 {{OpKind::kLayerNorm}, build_layernorm, f32_outputs},
                 {{OpKind::kReduceMean}, build_reduce_mean, f32_outputs},
                 {{OpKind::kResize}, build_resize, f32_outputs},
                 {{OpKind::kSlice}, build_slice},
                 {{OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}, build_view},
                 {{OpKind::kShape}, build_shape},
                 {{OpKind::kCast}, build_cast},
             });
  return table;
}

bool cpu_supports(const graph::Node& n, std::string* why) {
  return cpu_ops().supports(n, why);
}

bool is_eltwise(graph::OpKind op) {
  const CpuOpEntry* e = cpu_ops().find(op);
  return e && e->build == build_eltwise;
}

}  // namespace steadyocr::cpu

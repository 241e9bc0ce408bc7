// The op -> builder table and the static support check used by Backend::supports.
#include <array>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

using graph::OpKind;

std::array<OpBuildFn, static_cast<size_t>(OpKind::kCount)> build_table() {
  std::array<OpBuildFn, static_cast<size_t>(OpKind::kCount)> t{};
  auto set = [&t](OpKind op, OpBuildFn fn) { t[static_cast<size_t>(op)] = fn; };
  set(OpKind::kConv, build_conv);
  set(OpKind::kConvTranspose, build_conv_transpose);
  set(OpKind::kBatchNorm, build_batchnorm);
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kPow}) set(op, build_binary);
  for (OpKind op :
       {OpKind::kSqrt, OpKind::kRelu, OpKind::kSigmoid, OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kClip}) {
    set(op, build_unary);
  }
  for (OpKind op : {OpKind::kGlobalAveragePool, OpKind::kAveragePool, OpKind::kMaxPool}) set(op, build_pool);
  set(OpKind::kResize, build_resize);
  set(OpKind::kConcat, build_concat);
  for (OpKind op : {OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}) set(op, build_reshape);
  set(OpKind::kTranspose, build_transpose);
  set(OpKind::kMatMul, build_matmul);
  set(OpKind::kSoftmax, build_softmax);
  set(OpKind::kReduceMean, build_reduce_mean);
  set(OpKind::kShape, build_shape);
  set(OpKind::kCast, build_cast);
  set(OpKind::kSlice, build_slice);
  set(OpKind::kLayerNorm, build_layernorm);
  return t;
}

bool rank_is(const graph::Value* v, size_t r) {
  return v && v->shape.size() == r;
}

}  // namespace

OpBuildFn find_op_builder(OpKind op) {
  static const auto table = build_table();
  auto i = static_cast<size_t>(op);
  return i < table.size() ? table[i] : nullptr;
}

bool op_supported(const graph::Node& n, std::string* why) {
  auto no = [why](const char* reason) {
    if (why) *why = reason;
    return false;
  };
  if (!find_op_builder(n.op)) return no("no CUDA kernel for this op");
  for (const graph::Value* v : n.outputs) {
    if (v && v->shape.size() > 8) return no("rank above 8");
  }
  switch (n.op) {
    case OpKind::kConv:
    case OpKind::kConvTranspose:
      if (!float_tensors_only(n)) return no("only float tensors");
      if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return no("only 2-D convolutions (NCHW)");
      if (!n.input(1) || !n.input(1)->is_constant()) return no("weights must be constant");
      return true;
    case OpKind::kResize:
      if (!float_tensors_only(n)) return no("only float tensors");
      if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return no("only 4-D (NCHW) resize");
      if (n.input(0)->shape[0] != n.output()->shape[0] || n.input(0)->shape[1] != n.output()->shape[1]) {
        return no("only the two trailing axes may be resized");
      }
      return true;
    case OpKind::kGlobalAveragePool:
    case OpKind::kAveragePool:
    case OpKind::kMaxPool:
      if (!float_tensors_only(n)) return no("only float tensors");
      if (!rank_is(n.input(0), 4)) return no("only 2-D pooling (NCHW)");
      return true;
    case OpKind::kLayerNorm: {
      if (!float_tensors_only(n) || !n.input(0)) return no("only float tensors");
      const Shape& xs = n.input(0)->shape;
      int64_t axis = 0;
      if (!normalize_axis(n.attr<graph::LayerNormAttrs>().axis, static_cast<int64_t>(xs.size()), &axis)) {
        return no("axis out of range");
      }
      int64_t cols = 1;
      for (size_t d = static_cast<size_t>(axis); d < xs.size(); ++d) cols *= xs[d];
      for (size_t i = 1; i < 3; ++i) {
        const graph::Value* p = n.input(i);
        // Constants may broadcast (expanded on the host); a computed scale/bias must cover every element.
        if (p && !p->is_constant() && shape_numel(p->shape) != cols) return no("computed scale/bias that broadcast");
      }
      return true;
    }
    case OpKind::kReshape:
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
    case OpKind::kIdentity:
    case OpKind::kTranspose:
    case OpKind::kConcat:
    case OpKind::kSlice:
    case OpKind::kShape:
    case OpKind::kCast:
      return true;  // any element type
    default:
      if (!float_tensors_only(n)) return no("only float tensors (integer math is folded on the host)");
      return true;
  }
}

}  // namespace steadyocr::cuda

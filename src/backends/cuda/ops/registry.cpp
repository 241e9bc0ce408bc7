// The CUDA backend's ops, declared once: builder and conditions per op. Backend::supports and the plan builder
// read this table.
#include "backends/common/op_table.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {
namespace {

using common::decline;
using common::rank_is;
using graph::OpKind;

bool rank_at_most_8(const graph::Node& n, std::string* why) {
  for (const graph::Value* v : n.outputs) {
    if (v && v->shape.size() > 8) return decline(why, "rank above 8");
  }
  return true;
}

// Pointwise and reduction ops: integer math is folded on the host.
bool floats(const graph::Node& n, std::string* why) {
  if (!float_tensors_only(n)) return decline(why, "only float tensors (integer math is folded on the host)");
  return true;
}

bool conv_ok(const graph::Node& n, std::string* why) {
  if (!float_tensors_only(n)) return decline(why, "only float tensors");
  if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return decline(why, "only 2-D convolutions (NCHW)");
  if (!n.input(1) || !n.input(1)->is_constant()) return decline(why, "weights must be constant");
  return true;
}

bool resize_ok(const graph::Node& n, std::string* why) {
  if (!float_tensors_only(n)) return decline(why, "only float tensors");
  return common::resize_of_trailing_axes(n, why);
}

bool pool_ok(const graph::Node& n, std::string* why) {
  if (!float_tensors_only(n)) return decline(why, "only float tensors");
  if (!rank_is(n.input(0), 4)) return decline(why, "only 2-D pooling (NCHW)");
  return true;
}

bool layernorm_ok(const graph::Node& n, std::string* why) {
  if (!float_tensors_only(n) || !n.input(0)) return decline(why, "only float tensors");
  const Shape& xs = n.input(0)->shape;
  int64_t axis = 0;
  if (!normalize_axis(n.attr<graph::LayerNormAttrs>().axis, static_cast<int64_t>(xs.size()), &axis)) {
    return decline(why, "axis out of range");
  }
  int64_t cols = 1;
  for (size_t d = static_cast<size_t>(axis); d < xs.size(); ++d) cols *= xs[d];
  for (size_t i = 1; i < 3; ++i) {
    const graph::Value* p = n.input(i);
    // Constants may broadcast (expanded on the host); a computed scale/bias must cover every element.
    if (p && !p->is_constant() && shape_numel(p->shape) != cols)
      return decline(why, "computed scale/bias that broadcast");
  }
  return true;
}

const common::OpTable<OpBuildFn>& op_table() {
  // Layout ops (no check) take any element type.
  static const common::OpTable<OpBuildFn> table(
      "CUDA",
      {
          {{OpKind::kConv}, build_conv, conv_ok},
          {{OpKind::kConvTranspose}, build_conv_transpose, conv_ok},
          {{OpKind::kBatchNorm}, build_batchnorm, floats},
          {{OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kPow}, build_binary, floats},
          {{OpKind::kSqrt, OpKind::kRelu, OpKind::kSigmoid, OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kClip},
           build_unary,
           floats},
          {{OpKind::kGlobalAveragePool, OpKind::kAveragePool, OpKind::kMaxPool}, build_pool, pool_ok},
          {{OpKind::kResize}, build_resize, resize_ok},
          {{OpKind::kConcat}, build_concat},
          {{OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}, build_reshape},
          {{OpKind::kTranspose}, build_transpose},
          {{OpKind::kMatMul}, build_matmul, floats},
          {{OpKind::kSoftmax}, build_softmax, floats},
          {{OpKind::kTop1}, build_top1, floats},
          {{OpKind::kImageLut}, build_image_lut},
          {{OpKind::kReduceMean}, build_reduce_mean, floats},
          {{OpKind::kShape}, build_shape},
          {{OpKind::kCast}, build_cast},
          {{OpKind::kSlice}, build_slice},
          {{OpKind::kLayerNorm}, build_layernorm, layernorm_ok},
      },
      rank_at_most_8);
  return table;
}

}  // namespace

OpBuildFn find_op_builder(OpKind op) {
  const auto* e = op_table().find(op);
  return e ? e->build : nullptr;
}

bool op_supported(const graph::Node& n, std::string* why) {
  return op_table().supports(n, why);
}

}  // namespace steadyocr::cuda

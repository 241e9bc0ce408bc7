// The op -> kernel table, and run_node_reference (used by the interpreter and the constant folder).
#include <array>
#include <new>

#include "backends/reference/kernels.h"

namespace steadyocr {
namespace {

using graph::OpKind;

std::array<RefKernelFn, static_cast<size_t>(OpKind::kCount)> build_table() {
  std::array<RefKernelFn, static_cast<size_t>(OpKind::kCount)> t{};
  auto set = [&t](OpKind op, RefKernelFn fn) { t[static_cast<size_t>(op)] = fn; };
  set(OpKind::kConv, reference::conv_kernel);
  set(OpKind::kConvTranspose, reference::conv_transpose_kernel);
  set(OpKind::kBatchNorm, reference::batchnorm_kernel);
  for (OpKind op : {OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kPow}) {
    set(op, reference::binary_kernel);
  }
  set(OpKind::kSqrt, reference::sqrt_kernel);
  for (OpKind op : {OpKind::kRelu, OpKind::kSigmoid, OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kClip}) {
    set(op, reference::activation_kernel);
  }
  set(OpKind::kGlobalAveragePool, reference::global_avg_pool_kernel);
  set(OpKind::kAveragePool, reference::avg_pool_kernel);
  set(OpKind::kMaxPool, reference::max_pool_kernel);
  set(OpKind::kResize, reference::resize_kernel);
  set(OpKind::kConcat, reference::concat_kernel);
  for (OpKind op : {OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}) {
    set(op, reference::reshape_kernel);
  }
  set(OpKind::kTranspose, reference::transpose_kernel);
  set(OpKind::kMatMul, reference::matmul_kernel);
  set(OpKind::kSoftmax, reference::softmax_kernel);
  set(OpKind::kReduceMean, reference::reduce_mean_kernel);
  set(OpKind::kShape, reference::shape_kernel);
  set(OpKind::kCast, reference::cast_kernel);
  set(OpKind::kSlice, reference::slice_kernel);
  set(OpKind::kLayerNorm, reference::layernorm_kernel);
  set(OpKind::kTop1, reference::top1_kernel);
  set(OpKind::kImageLut, reference::image_lut_kernel);
  return t;
}

const std::array<RefKernelFn, static_cast<size_t>(OpKind::kCount)>& table() {
  static const auto t = build_table();
  return t;
}

}  // namespace

RefKernelFn find_reference_kernel(graph::OpKind op) {
  auto i = static_cast<size_t>(op);
  return i < table().size() ? table()[i] : nullptr;
}

Status run_node_reference(const graph::Node& node, const std::vector<const Tensor*>& inputs,
                          std::vector<Tensor>* outputs) {
  RefKernelFn fn = find_reference_kernel(node.op);
  if (fn == nullptr) {
    return unsupported(
        fmt::format("{}: the reference backend has no kernel for op {}", node.describe(), graph::op_name(node.op)));
  }
  if (!node.epilogue.empty()) {
    return unsupported(
        fmt::format("{}: a fused epilogue runs on the reference backend only as nodes "
                    "(graph::expand_epilogues)",
                    node.describe()));
  }
  outputs->clear();
  try {
    for (const graph::Value* v : node.outputs) {
      if (v == nullptr) return internal_error(fmt::format("{}: null output value", node.describe()));
      if (!v->has_static_shape()) {
        return invalid_argument(fmt::format("{}: output '{}' has no static shape ({}); specialise the graph first",
                                            node.describe(), v->name, shape_str(v->shape)));
      }
      outputs->push_back(Tensor::empty(v->dtype, v->shape));
    }
    Status s = fn(node, inputs, *outputs);
    if (!s.is_ok()) {
      outputs->clear();
      return s;
    }
  } catch (const std::bad_alloc&) {
    outputs->clear();
    return Status(StatusCode::kOutOfMemory,
                  fmt::format("{}: out of host memory allocating its outputs or workspace", node.describe()));
  }
  return Status::ok();
}

}  // namespace steadyocr

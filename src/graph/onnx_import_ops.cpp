// One mapper per ONNX op: reads the ONNX attributes (and constant parameter inputs) of the opset in use and
// emits the IR node(s) with typed attributes. Anything we do not handle is a kUnsupported error naming it.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "graph/onnx_import_internal.h"

namespace steadyocr::graph::onnx_detail {

Status expect_inputs(NodeContext& c, size_t min, size_t max) {
  size_t n = c.inputs.size();
  while (n > 0 && c.inputs[n - 1] == nullptr) --n;  // trailing omitted optionals
  if (n < min || c.inputs.size() > max) {
    return c.invalid(fmt::format("has {} inputs, expected {}", c.inputs.size(),
                                 min == max ? fmt::format("{}", min) : fmt::format("{} to {}", min, max)));
  }
  for (size_t i = 0; i < min; ++i) {
    if (!c.inputs[i]) return c.invalid(fmt::format("required input {} is empty", i));
  }
  return Status::ok();
}

void ignore_attrs(NodeContext& c, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (!c.attrs->has(n)) continue;
    // Read with whatever type it has; the value does not matter.
    const auto& proto = *c.proto;
    for (const auto& a : proto.attribute()) {
      if (a.name() != n) continue;
      switch (a.type()) {
        case onnx::AttributeProto::INT:
          c.attrs->get_int(n, 0);
          break;
        case onnx::AttributeProto::FLOAT:
          c.attrs->get_float(n, 0);
          break;
        case onnx::AttributeProto::STRING:
          c.attrs->get_string(n, "");
          break;
        case onnx::AttributeProto::INTS:
          c.attrs->get_ints(n);
          break;
        case onnx::AttributeProto::FLOATS:
          c.attrs->get_floats(n);
          break;
        default:
          break;
      }
    }
  }
}

namespace {

using Mapper = Status (*)(NodeContext& c);

// ---- helpers ----

std::string join_ints(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ","));
}

// Weight rank 4 / kernel of rank 2 only: OCR models use 2-D convolution and pooling.
struct Spatial {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
};

Status read_pair(NodeContext& c, const char* name, std::array<int64_t, 2>* out, int64_t min_value) {
  if (!c.attrs->has(name)) return Status::ok();
  auto v = c.attrs->get_ints(name);
  if (v.size() != 2) {
    return c.unsupported_attr(fmt::format("{}={} (only 2-D {} is supported)", name, join_ints(v), c.proto->op_type()));
  }
  for (int64_t x : v) {
    if (x < min_value) return c.invalid(fmt::format("{}={} has a value below {}", name, join_ints(v), min_value));
  }
  *out = {v[0], v[1]};
  return Status::ok();
}

// Reads kernel_shape/strides/dilations/pads/auto_pad. `weight_kernel` (from the weight's shape) is used when
// kernel_shape is absent; for auto_pad SAME_* the pads are derived from the input size when needed.
Status read_spatial(NodeContext& c, Spatial* s, const Shape* weight_shape, bool allow_dilations, bool transposed) {
  if (weight_shape && weight_shape->size() == 4) s->kernel = {(*weight_shape)[2], (*weight_shape)[3]};
  if (c.attrs->has("kernel_shape")) {
    std::array<int64_t, 2> k{1, 1};
    RETURN_IF_ERROR(read_pair(c, "kernel_shape", &k, 1));
    if (weight_shape && weight_shape->size() == 4 && (k[0] != s->kernel[0] || k[1] != s->kernel[1])) {
      return c.invalid(
          fmt::format("kernel_shape [{},{}] disagrees with the weight shape {}", k[0], k[1], shape_str(*weight_shape)));
    }
    s->kernel = k;
  } else if (!weight_shape) {
    return c.invalid("has no kernel_shape attribute");
  }
  RETURN_IF_ERROR(read_pair(c, "strides", &s->strides, 1));
  if (allow_dilations) {
    RETURN_IF_ERROR(read_pair(c, "dilations", &s->dilations, 1));
  } else if (c.attrs->has("dilations")) {
    auto d = c.attrs->get_ints("dilations");
    if (std::any_of(d.begin(), d.end(), [](int64_t x) { return x != 1; })) {
      return c.unsupported_attr(fmt::format("dilations={}", join_ints(d)));
    }
  }
  if (c.attrs->has("pads")) {
    auto p = c.attrs->get_ints("pads");
    if (p.size() != 4) return c.unsupported_attr(fmt::format("pads={} (only 2-D pads are supported)", join_ints(p)));
    for (int64_t x : p) {
      if (x < 0) return c.unsupported_attr(fmt::format("negative pads {}", join_ints(p)));
    }
    s->pads = {p[0], p[1], p[2], p[3]};
  }
  std::string auto_pad = c.attrs->get_string("auto_pad", "NOTSET");
  if (auto_pad == "NOTSET") return Status::ok();
  if (auto_pad == "VALID") {
    s->pads = {0, 0, 0, 0};
    return Status::ok();
  }
  if (auto_pad != "SAME_UPPER" && auto_pad != "SAME_LOWER") return c.unsupported_attr("auto_pad '" + auto_pad + "'");
  if (transposed) return c.unsupported_attr("auto_pad '" + auto_pad + "' on ConvTranspose");
  const Shape& in = c.input(0)->shape;
  for (int i = 0; i < 2; ++i) {
    int64_t eff = s->dilations[i] * (s->kernel[i] - 1) + 1;
    int64_t total;
    if (s->strides[i] == 1) {
      total = eff - 1;
    } else {
      if (in.size() != 4 || in[2 + i] < 0) {
        return c.unsupported_attr(
            fmt::format("auto_pad '{}' with stride {} on an input of dynamic size; give "
                        "explicit pads",
                        auto_pad, s->strides[i]));
      }
      int64_t out = (in[2 + i] + s->strides[i] - 1) / s->strides[i];
      total = std::max<int64_t>(0, (out - 1) * s->strides[i] + eff - in[2 + i]);
    }
    int64_t small = total / 2, big = total - small;
    s->pads[i] = auto_pad == "SAME_UPPER" ? small : big;
    s->pads[i + 2] = auto_pad == "SAME_UPPER" ? big : small;
  }
  return Status::ok();
}

// Axes for Squeeze/Unsqueeze/ReduceMean: an attribute before `input_from_opset`, an optional constant input after.
Result<std::optional<std::vector<int64_t>>> read_axes(NodeContext& c, int64_t input_from_opset, size_t input_index) {
  if (c.ctx->opset < input_from_opset) {
    if (!c.attrs->has("axes")) return std::optional<std::vector<int64_t>>();
    return std::optional<std::vector<int64_t>>(c.attrs->get_ints("axes"));
  }
  if (!c.input(input_index)) return std::optional<std::vector<int64_t>>();
  ASSIGN_OR_RETURN(Tensor t, c.constant_input(input_index, "axes"));
  return std::optional<std::vector<int64_t>>(t.to_int64s());
}

// ---- mappers ----

Status map_conv(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 3));
  const Shape& w = c.input(1)->shape;
  if (w.size() != 4) {
    return c.unsupported_attr(fmt::format("a weight of shape {} (only 2-D convolution, weight rank 4)", shape_str(w)));
  }
  Spatial s;
  RETURN_IF_ERROR(read_spatial(c, &s, &w, true, false));
  ConvAttrs a;
  a.kernel = s.kernel;
  a.strides = s.strides;
  a.dilations = s.dilations;
  a.pads = s.pads;
  a.group = c.attrs->get_int("group", 1);
  if (a.group < 1) return c.invalid(fmt::format("group={} must be at least 1", a.group));
  return c.emit(OpKind::kConv, c.inputs, a).status();
}

Status map_conv_transpose(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 3));
  const Shape& w = c.input(1)->shape;
  if (w.size() != 4) {
    return c.unsupported_attr(
        fmt::format("a weight of shape {} (only 2-D ConvTranspose, weight rank 4)", shape_str(w)));
  }
  if (c.attrs->has("output_shape")) return c.unsupported_attr("the output_shape attribute (give pads instead)");
  Spatial s;
  RETURN_IF_ERROR(read_spatial(c, &s, &w, true, true));
  ConvTransposeAttrs a;
  a.kernel = s.kernel;
  a.strides = s.strides;
  a.dilations = s.dilations;
  a.pads = s.pads;
  RETURN_IF_ERROR(read_pair(c, "output_padding", &a.output_padding, 0));
  a.group = c.attrs->get_int("group", 1);
  if (a.group < 1) return c.invalid(fmt::format("group={} must be at least 1", a.group));
  return c.emit(OpKind::kConvTranspose, c.inputs, a).status();
}

Status map_batchnorm(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 5, 5));
  RETURN_IF_ERROR(c.require_unused_outputs_from(1));
  if (c.attrs->get_int("training_mode", 0) != 0) return c.unsupported_attr("training_mode=1");
  if (c.attrs->get_int("spatial", 1) != 1) return c.unsupported_attr("spatial=0");
  ignore_attrs(c, {"momentum", "is_test", "consumed_inputs"});
  BatchNormAttrs a;
  a.epsilon = c.attrs->get_float("epsilon", 1e-5f);
  return c.emit(OpKind::kBatchNorm, c.inputs, a).status();
}

template <OpKind kOp>
Status map_binary(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 2));
  return c.emit(kOp, c.inputs, {}).status();
}

template <OpKind kOp>
Status map_unary(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(kOp, c.inputs, {}).status();
}

Status map_relu(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kRelu, c.inputs, ActAttrs{Activation::relu()}).status();
}

Status map_sigmoid(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kSigmoid, c.inputs, ActAttrs{Activation::sigmoid()}).status();
}

Status map_hard_sigmoid(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  float alpha = c.attrs->get_float("alpha", 0.2f), beta = c.attrs->get_float("beta", 0.5f);
  return c.emit(OpKind::kHardSigmoid, c.inputs, ActAttrs{Activation::hard_sigmoid(alpha, beta)}).status();
}

Status map_hard_swish(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kHardSwish, c.inputs, ActAttrs{Activation::hard_swish()}).status();
}

Status map_clip(NodeContext& c) {
  float lo = std::numeric_limits<float>::lowest(), hi = std::numeric_limits<float>::max();
  if (c.ctx->opset < 11) {
    RETURN_IF_ERROR(expect_inputs(c, 1, 1));
    lo = c.attrs->get_float("min", lo);
    hi = c.attrs->get_float("max", hi);
  } else {
    RETURN_IF_ERROR(expect_inputs(c, 1, 3));
    if (c.input(1)) {
      ASSIGN_OR_RETURN(Tensor t, c.constant_input(1, "min"));
      if (t.numel() != 1) return c.invalid(fmt::format("min must be a scalar, got {}", t.describe()));
      lo = t.to_floats()[0];
    }
    if (c.input(2)) {
      ASSIGN_OR_RETURN(Tensor t, c.constant_input(2, "max"));
      if (t.numel() != 1) return c.invalid(fmt::format("max must be a scalar, got {}", t.describe()));
      hi = t.to_floats()[0];
    }
  }
  return c.emit(OpKind::kClip, {c.input(0)}, ActAttrs{Activation::clip(lo, hi)}).status();
}

Status map_global_average_pool(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kGlobalAveragePool, c.inputs, {}).status();
}

Status map_pool(NodeContext& c, OpKind op) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  RETURN_IF_ERROR(c.require_unused_outputs_from(1));
  Spatial s;
  RETURN_IF_ERROR(read_spatial(c, &s, nullptr, false, false));
  PoolAttrs a;
  a.kernel = s.kernel;
  a.strides = s.strides;
  a.pads = s.pads;
  a.ceil_mode = c.attrs->get_int("ceil_mode", 0) != 0;
  if (op == OpKind::kAveragePool) {
    a.count_include_pad = c.attrs->get_int("count_include_pad", 0) != 0;
  } else {
    ignore_attrs(c, {"storage_order"});  // only affects the Indices output, which we refuse above
  }
  return c.emit(op, c.inputs, a).status();
}

Status map_average_pool(NodeContext& c) {
  return map_pool(c, OpKind::kAveragePool);
}

Status map_max_pool(NodeContext& c) {
  return map_pool(c, OpKind::kMaxPool);
}

Status map_concat(NodeContext& c) {
  if (c.inputs.empty()) return c.invalid("has no inputs");
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (!c.inputs[i]) return c.invalid(fmt::format("input {} is empty", i));
  }
  if (!c.attrs->has("axis")) return c.invalid("has no axis attribute");
  return c.emit(OpKind::kConcat, c.inputs, AxisAttrs{c.attrs->get_int("axis", 0)}).status();
}

Status map_reshape(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 2));
  ReshapeAttrs a;
  a.allowzero = c.attrs->get_int("allowzero", 0) != 0;
  Value* shape = c.input(1);
  if (shape->is_constant()) {
    a.shape = shape->constant.to_int64s();
    return c.emit(OpKind::kReshape, {c.input(0)}, a).status();
  }
  // Computed at run time (Shape->Slice->Concat chains): kept as an input until specialisation folds it.
  return c.emit(OpKind::kReshape, c.inputs, a).status();
}

Status map_flatten(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  const Shape& in = c.input(0)->shape;
  int64_t rank = static_cast<int64_t>(in.size());
  int64_t axis = c.attrs->get_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) return c.invalid(fmt::format("axis out of range for input {}", shape_str(in)));
  ReshapeAttrs a;
  if (axis == 0) {
    a.shape = {1, -1};
  } else if (axis == 1) {
    a.shape = {0, -1};
  } else {
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i) {
      if (in[static_cast<size_t>(i)] < 0) {
        return c.unsupported_attr(fmt::format("axis {} over the dynamic dims of {}", axis, shape_str(in)));
      }
      outer *= in[static_cast<size_t>(i)];
    }
    a.shape = {outer, -1};
  }
  return c.emit(OpKind::kReshape, c.inputs, a).status();
}

Status map_transpose(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kTranspose, c.inputs, TransposeAttrs{c.attrs->get_ints("perm")}).status();
}

Status map_matmul(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 2));
  return c.emit(OpKind::kMatMul, c.inputs, {}).status();
}

Status map_softmax(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  SoftmaxAttrs a;
  a.flatten_trailing = c.ctx->opset < 13;
  a.axis = c.attrs->get_int("axis", a.flatten_trailing ? 1 : -1);
  // Flattening at the last axis is plain softmax over it; say so, so backends need only one form.
  int64_t rank = static_cast<int64_t>(c.input(0)->shape.size());
  if (a.flatten_trailing && (a.axis == -1 || a.axis == rank - 1)) {
    a.flatten_trailing = false;
    a.axis = -1;
  }
  return c.emit(OpKind::kSoftmax, c.inputs, a).status();
}

Status map_reduce_mean(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, c.ctx->opset >= 18 ? 2 : 1));
  ReduceAttrs a;
  ASSIGN_OR_RETURN(auto axes, read_axes(c, 18, 1));
  if (axes) a.axes = *axes;
  a.keepdims = c.attrs->get_int("keepdims", 1) != 0;
  if (c.attrs->get_int("noop_with_empty_axes", 0) != 0 && a.axes.empty()) {
    return c.emit(OpKind::kIdentity, {c.input(0)}, {}).status();
  }
  return c.emit(OpKind::kReduceMean, {c.input(0)}, a).status();
}

Status map_squeeze(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, c.ctx->opset >= 13 ? 2 : 1));
  ASSIGN_OR_RETURN(auto axes, read_axes(c, 13, 1));
  if (!axes || axes->empty()) {
    const Shape& in = c.input(0)->shape;
    if (std::any_of(in.begin(), in.end(), [](int64_t d) { return d < 0; })) {
      return c.unsupported_attr(
          fmt::format("no axes on an input of dynamic shape {} (the output rank would depend "
                      "on the data); give axes explicitly",
                      shape_str(in)));
    }
  }
  return c.emit(OpKind::kSqueeze, {c.input(0)}, AxesAttrs{axes ? *axes : std::vector<int64_t>{}}).status();
}

Status map_unsqueeze(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, c.ctx->opset >= 13 ? 2 : 1, c.ctx->opset >= 13 ? 2 : 1));
  ASSIGN_OR_RETURN(auto axes, read_axes(c, 13, 1));
  if (!axes || axes->empty()) return c.invalid("has no axes");
  return c.emit(OpKind::kUnsqueeze, {c.input(0)}, AxesAttrs{*axes}).status();
}

Status map_shape(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  const int64_t rank = static_cast<int64_t>(c.input(0)->shape.size());
  int64_t start = c.attrs->get_int("start", 0);
  int64_t end = c.attrs->get_int("end", rank);
  if (start == 0 && end >= rank) return c.emit(OpKind::kShape, c.inputs, {}).status();
  // opset 15 start/end: the full shape then a slice of it.
  ASSIGN_OR_RETURN(Node * shape, c.emit_intermediate(OpKind::kShape, "shape", c.inputs, {}));
  SliceAttrs s;
  s.starts = {start};
  s.ends = {end};
  s.axes = {0};
  s.steps = {1};
  return c.emit(OpKind::kSlice, {shape->output()}, s).status();
}

Status map_cast(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  int64_t to = c.attrs->get_int("to", 0);
  DType d;
  if (!dtype_from_onnx(static_cast<int32_t>(to), &d) || to == onnx::TensorProto::DOUBLE) {
    return c.unsupported_attr(fmt::format("to={} ({})", to, onnx::TensorProto::DataType_Name(static_cast<int>(to))));
  }
  ignore_attrs(c, {"saturate"});
  return c.emit(OpKind::kCast, c.inputs, CastAttrs{d}).status();
}

Status map_slice(NodeContext& c) {
  SliceAttrs a;
  if (c.ctx->opset < 10) {
    RETURN_IF_ERROR(expect_inputs(c, 1, 1));
    a.starts = c.attrs->get_ints("starts");
    a.ends = c.attrs->get_ints("ends");
    a.axes = c.attrs->get_ints("axes");
  } else {
    RETURN_IF_ERROR(expect_inputs(c, 3, 5));
    ASSIGN_OR_RETURN(Tensor starts, c.constant_input(1, "starts"));
    ASSIGN_OR_RETURN(Tensor ends, c.constant_input(2, "ends"));
    a.starts = starts.to_int64s();
    a.ends = ends.to_int64s();
    if (c.input(3)) {
      ASSIGN_OR_RETURN(Tensor axes, c.constant_input(3, "axes"));
      a.axes = axes.to_int64s();
    }
    if (c.input(4)) {
      ASSIGN_OR_RETURN(Tensor steps, c.constant_input(4, "steps"));
      a.steps = steps.to_int64s();
    }
  }
  if (a.starts.size() != a.ends.size() || (!a.axes.empty() && a.axes.size() != a.starts.size()) ||
      (!a.steps.empty() && a.steps.size() != a.starts.size())) {
    return c.invalid(fmt::format("starts {} / ends {} / axes {} / steps {} differ in length", join_ints(a.starts),
                                 join_ints(a.ends), join_ints(a.axes), join_ints(a.steps)));
  }
  if (a.axes.empty()) {
    for (size_t i = 0; i < a.starts.size(); ++i) a.axes.push_back(static_cast<int64_t>(i));
  }
  if (a.steps.empty()) a.steps.assign(a.starts.size(), 1);
  return c.emit(OpKind::kSlice, {c.input(0)}, a).status();
}

Status map_layer_norm(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 3));
  RETURN_IF_ERROR(c.require_unused_outputs_from(1));
  ignore_attrs(c, {"stash_type"});
  LayerNormAttrs a;
  a.axis = c.attrs->get_int("axis", -1);
  a.epsilon = c.attrs->get_float("epsilon", 1e-5f);
  return c.emit(OpKind::kLayerNorm, c.inputs, a).status();
}

Status map_identity(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 1));
  return c.emit(OpKind::kIdentity, c.inputs, {}).status();
}

Status map_dropout(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 1, 3));
  RETURN_IF_ERROR(c.require_unused_outputs_from(1));
  ignore_attrs(c, {"ratio", "is_test", "seed"});
  if (c.input(2)) {
    ASSIGN_OR_RETURN(Tensor t, c.constant_input(2, "training_mode"));
    if (t.numel() != 1 || t.to_int64s()[0] != 0) return c.unsupported_attr("training_mode=true");
  }
  return c.emit(OpKind::kIdentity, {c.input(0)}, {}).status();
}

// Gemm: Y = alpha * A' * B' + beta * C, as MatMul (+ Add). Transposes and scales are applied to constant B and C
// at import; on run-time tensors they become Transpose / Mul nodes.
Tensor transpose_2d(const Tensor& t) {
  Tensor out = Tensor::empty(t.dtype(), {t.dim(1), t.dim(0)});
  const size_t es = dtype_size(t.dtype());
  const auto* src = static_cast<const uint8_t*>(t.raw());
  auto* dst = static_cast<uint8_t*>(out.raw());
  for (int64_t i = 0; i < t.dim(0); ++i) {
    for (int64_t j = 0; j < t.dim(1); ++j)
      std::memcpy(dst + (j * t.dim(0) + i) * es, src + (i * t.dim(1) + j) * es, es);
  }
  return out;
}

Tensor scaled(const Tensor& t, float s) {
  std::vector<float> v = t.to_floats();
  for (float& x : v) x *= s;
  return Tensor::from_floats(t.shape(), v);
}

Status map_gemm(NodeContext& c) {
  RETURN_IF_ERROR(expect_inputs(c, 2, 3));
  float alpha = c.attrs->get_float("alpha", 1.f), beta = c.attrs->get_float("beta", 1.f);
  bool trans_a = c.attrs->get_int("transA", 0) != 0, trans_b = c.attrs->get_int("transB", 0) != 0;
  Value* a = c.input(0);
  Value* b = c.input(1);
  Value* bias = c.input(2);
  if (a->shape.size() != 2 || b->shape.size() != 2) {
    return c.invalid(fmt::format("A {} and B {} must be 2-D", shape_str(a->shape), shape_str(b->shape)));
  }
  if (trans_a) {
    ASSIGN_OR_RETURN(Node * t, c.emit_intermediate(OpKind::kTranspose, "transA", {a}, TransposeAttrs{{1, 0}}));
    a = t->output();
  }
  if (b->is_constant() && b->dtype == DType::kF32) {
    Tensor bt = trans_b ? transpose_2d(b->constant) : b->constant;
    if (alpha != 1.f) bt = scaled(bt, alpha);
    if (trans_b || alpha != 1.f) b = c.add_constant("B", bt);
  } else {
    if (trans_b) {
      ASSIGN_OR_RETURN(Node * t, c.emit_intermediate(OpKind::kTranspose, "transB", {b}, TransposeAttrs{{1, 0}}));
      b = t->output();
    }
    if (alpha != 1.f) {
      ASSIGN_OR_RETURN(Node * m,
                       c.emit_intermediate(OpKind::kMul, "alpha",
                                           {b, c.add_constant("alpha_value", Tensor::scalar_f32(alpha))}, {}));
      b = m->output();
    }
  }
  if (!bias || beta == 0.f) return c.emit(OpKind::kMatMul, {a, b}, {}).status();
  ASSIGN_OR_RETURN(Node * mm, c.emit_intermediate(OpKind::kMatMul, "matmul", {a, b}, {}));
  if (beta != 1.f) {
    if (bias->is_constant() && bias->dtype == DType::kF32) {
      bias = c.add_constant("C", scaled(bias->constant, beta));
    } else {
      ASSIGN_OR_RETURN(Node * m,
                       c.emit_intermediate(OpKind::kMul, "beta",
                                           {bias, c.add_constant("beta_value", Tensor::scalar_f32(beta))}, {}));
      bias = m->output();
    }
  }
  return c.emit(OpKind::kAdd, {mm->output(), bias}, {}).status();
}

const std::map<std::string, Mapper>& mappers() {
  static const std::map<std::string, Mapper> kMappers = {
      {"Add", map_binary<OpKind::kAdd>},
      {"AveragePool", map_average_pool},
      {"BatchNormalization", map_batchnorm},
      {"Cast", map_cast},
      {"Clip", map_clip},
      {"Concat", map_concat},
      {"Conv", map_conv},
      {"ConvTranspose", map_conv_transpose},
      {"Div", map_binary<OpKind::kDiv>},
      {"Dropout", map_dropout},
      {"Flatten", map_flatten},
      {"Gemm", map_gemm},
      {"GlobalAveragePool", map_global_average_pool},
      {"HardSigmoid", map_hard_sigmoid},
      {"HardSwish", map_hard_swish},
      {"Identity", map_identity},
      {"LayerNormalization", map_layer_norm},
      {"MatMul", map_matmul},
      {"MaxPool", map_max_pool},
      {"Mul", map_binary<OpKind::kMul>},
      {"Pow", map_binary<OpKind::kPow>},
      {"ReduceMean", map_reduce_mean},
      {"Relu", map_relu},
      {"Reshape", map_reshape},
      {"Resize", map_resize},
      {"Shape", map_shape},
      {"Sigmoid", map_sigmoid},
      {"Slice", map_slice},
      {"Softmax", map_softmax},
      {"Sqrt", map_unary<OpKind::kSqrt>},
      {"Squeeze", map_squeeze},
      {"Sub", map_binary<OpKind::kSub>},
      {"Transpose", map_transpose},
      {"Unsqueeze", map_unsqueeze},
      {"Upsample", map_upsample},
  };
  return kMappers;
}

}  // namespace

std::string supported_ops_list() {
  std::vector<std::string> names;
  for (const auto& [name, fn] : mappers()) names.push_back(name);
  names.push_back("Constant");
  std::sort(names.begin(), names.end());
  return fmt::format("{}", fmt::join(names, ", "));
}

Status import_node(ImportContext& ctx, const onnx::NodeProto& node, const std::string& node_name) {
  auto it = mappers().find(node.op_type());
  if (it == mappers().end()) {
    return unsupported(fmt::format("model {}: node '{}' uses op '{}', which steadyocr does not support (supported: {})",
                                   ctx.model_name, node_name, node.op_type(), supported_ops_list()));
  }
  NodeAttributes attrs(node);
  NodeContext c;
  c.ctx = &ctx;
  c.proto = &node;
  c.name = node_name;
  c.attrs = &attrs;
  for (const std::string& in : node.input()) {
    if (in.empty()) {
      c.inputs.push_back(nullptr);
      continue;
    }
    auto v = ctx.values.find(in);
    if (v == ctx.values.end()) {
      auto later = ctx.declared_by.find(in);
      if (later != ctx.declared_by.end()) {
        return invalid_argument(fmt::format(
            "{} reads '{}', which only {} produces: the graph has a cycle or is not in topological "
            "order; re-export the model (onnx.utils / onnxsim sort the nodes)",
            c.where(), in, later->second == node_name ? "the node itself" : "the later node '" + later->second + "'"));
      }
      return invalid_argument(
          fmt::format("{} reads '{}', a dangling input: no node, graph input or initializer produces it "
                      "(the model is malformed); re-export it",
                      c.where(), in));
    }
    c.inputs.push_back(v->second);
  }
  // Read attributes before mapping so a type error is reported as such rather than as a missing attribute.
  Status s = it->second(c);
  if (!attrs.status().is_ok()) return c.invalid(attrs.status().message());
  RETURN_IF_ERROR(s);
  std::vector<std::string> unread = attrs.unread();
  if (!unread.empty()) {
    return unsupported(
        fmt::format("{} has attribute(s) {} that steadyocr does not interpret; results could differ, "
                    "so the model is refused",
                    c.where(), fmt::join(unread, ", ")));
  }
  return Status::ok();
}

}  // namespace steadyocr::graph::onnx_detail

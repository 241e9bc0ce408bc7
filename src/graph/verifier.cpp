#include "graph/verifier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "graph/shape_inference.h"

namespace steadyocr::graph {
namespace {

template <typename... A>
Status bad(const Node& n, fmt::format_string<A...> f, A&&... a) {
  return internal_error(fmt::format("verifier: {}: {}", n.describe(), fmt::format(f, std::forward<A>(a)...)));
}

struct Arity {
  size_t min, max;
};

Arity arity(OpKind op) {
  switch (op) {
    case OpKind::kConv:
      return {2, 4};
    case OpKind::kConvTranspose:
      return {2, 3};
    case OpKind::kBatchNorm:
      return {5, 5};
    case OpKind::kAdd:
    case OpKind::kSub:
    case OpKind::kMul:
    case OpKind::kDiv:
    case OpKind::kPow:
    case OpKind::kMatMul:
    case OpKind::kImageLut:
      return {2, 2};
    case OpKind::kConcat:
      return {1, SIZE_MAX};
    case OpKind::kReshape:
      return {1, 2};
    case OpKind::kLayerNorm:
      return {2, 3};
    default:
      return {1, 1};
  }
}

// Index into OpAttrs of the attribute struct each op carries.
size_t expected_attrs(OpKind op) {
  auto idx = [](auto tag) { return OpAttrs(decltype(tag){}).index(); };
  switch (op) {
    case OpKind::kConv:
      return idx(ConvAttrs{});
    case OpKind::kConvTranspose:
      return idx(ConvTransposeAttrs{});
    case OpKind::kBatchNorm:
      return idx(BatchNormAttrs{});
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kClip:
      return idx(ActAttrs{});
    case OpKind::kAveragePool:
    case OpKind::kMaxPool:
      return idx(PoolAttrs{});
    case OpKind::kResize:
      return idx(ResizeAttrs{});
    case OpKind::kConcat:
      return idx(AxisAttrs{});
    case OpKind::kReshape:
      return idx(ReshapeAttrs{});
    case OpKind::kTranspose:
      return idx(TransposeAttrs{});
    case OpKind::kSoftmax:
      return idx(SoftmaxAttrs{});
    case OpKind::kReduceMean:
      return idx(ReduceAttrs{});
    case OpKind::kSqueeze:
    case OpKind::kUnsqueeze:
      return idx(AxesAttrs{});
    case OpKind::kCast:
      return idx(CastAttrs{});
    case OpKind::kSlice:
      return idx(SliceAttrs{});
    case OpKind::kLayerNorm:
      return idx(LayerNormAttrs{});
    default:
      return idx(std::monostate{});
  }
}

ActKind act_for(OpKind op) {
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

Status check_activation(const Node& n, const Activation& a) {
  if (a.kind == ActKind::kClip && !(a.alpha <= a.beta))
    return bad(n, "clip bounds [{}, {}] are inverted", a.alpha, a.beta);
  if (!std::isfinite(a.alpha) && a.kind == ActKind::kHardSigmoid) return bad(n, "hardsigmoid alpha is not finite");
  return Status::ok();
}

template <size_t K>
bool all_at_least(const std::array<int64_t, K>& v, int64_t lo) {
  for (int64_t x : v) {
    if (x < lo) return false;
  }
  return true;
}

Status check_attrs(const Node& n) {
  switch (n.op) {
    case OpKind::kConv: {
      const auto& a = n.attr<ConvAttrs>();
      if (!all_at_least(a.kernel, 1) || !all_at_least(a.strides, 1) || !all_at_least(a.dilations, 1) ||
          !all_at_least(a.pads, 0) || a.group < 1) {
        return bad(n, "invalid kernel/strides/dilations/pads/group");
      }
      return check_activation(n, a.act);
    }
    case OpKind::kConvTranspose: {
      const auto& a = n.attr<ConvTransposeAttrs>();
      if (!all_at_least(a.kernel, 1) || !all_at_least(a.strides, 1) || !all_at_least(a.dilations, 1) ||
          !all_at_least(a.pads, 0) || !all_at_least(a.output_padding, 0) || a.group < 1) {
        return bad(n, "invalid kernel/strides/dilations/pads/output_padding/group");
      }
      for (int i = 0; i < 2; ++i) {
        if (a.output_padding[i] >= std::max(a.strides[i], a.dilations[i])) {
          return bad(n, "output_padding {} must be smaller than the stride or dilation", a.output_padding[i]);
        }
      }
      return check_activation(n, a.act);
    }
    case OpKind::kBatchNorm:
      if (!(n.attr<BatchNormAttrs>().epsilon >= 0.f)) return bad(n, "epsilon must be >= 0");
      return Status::ok();
    case OpKind::kRelu:
    case OpKind::kSigmoid:
    case OpKind::kHardSigmoid:
    case OpKind::kHardSwish:
    case OpKind::kClip: {
      const Activation& a = n.attr<ActAttrs>().act;
      if (a.kind != act_for(n.op)) return bad(n, "activation kind {} does not match the op", act_name(a.kind));
      return check_activation(n, a);
    }
    case OpKind::kAveragePool:
    case OpKind::kMaxPool: {
      const auto& a = n.attr<PoolAttrs>();
      if (!all_at_least(a.kernel, 1) || !all_at_least(a.strides, 1) || !all_at_least(a.pads, 0)) {
        return bad(n, "invalid kernel/strides/pads");
      }
      return Status::ok();
    }
    case OpKind::kResize: {
      const auto& a = n.attr<ResizeAttrs>();
      if (a.scales.empty() == a.sizes.empty()) return bad(n, "needs exactly one of scales and sizes");
      return Status::ok();
    }
    case OpKind::kLayerNorm:
      if (!(n.attr<LayerNormAttrs>().epsilon >= 0.f)) return bad(n, "epsilon must be >= 0");
      return Status::ok();
    default:
      return Status::ok();  // the rest is checked by shape inference (axes, perms, slice bounds)
  }
}

// Shapes agree when ranks match and every dim known on both sides is equal (an unknown side is not a conflict); two
// symbols agree when they are the same expression (the table keeps one symbol per expression).
bool shapes_agree(const Shape& stored, const Shape& inferred) {
  if (stored.size() != inferred.size()) return false;
  for (size_t i = 0; i < stored.size(); ++i) {
    if (stored[i] == kUnknownDim || inferred[i] == kUnknownDim) continue;
    if ((stored[i] >= 0 || inferred[i] >= 0 || (is_symbolic(stored[i]) && is_symbolic(inferred[i]))) &&
        stored[i] != inferred[i]) {
      return false;
    }
  }
  return true;
}

// A fused epilogue: on a Conv/ConvTranspose/MatMul, each stage a pointwise op whose operands are the node's own
// result, an earlier stage, or one of the inputs after the node's own.
Status check_epilogue(const Node& n) {
  const Epilogue& e = n.epilogue;
  if (e.empty()) return Status::ok();
  if (n.op != OpKind::kConv && n.op != OpKind::kConvTranspose && n.op != OpKind::kMatMul) {
    return bad(n, "carries an epilogue (only Conv, ConvTranspose and MatMul do)");
  }
  if (e.own_inputs > n.inputs.size() || e.original_inputs > e.own_inputs) return bad(n, "epilogue input counts");
  for (size_t i = 0; i < e.stages.size(); ++i) {
    const EpilogueStage& st = e.stages[i];
    if (st.op >= OpKind::kCount || st.attrs.index() != expected_attrs(st.op)) {
      return bad(n, "epilogue stage {} ('{}') has an invalid op or attributes", i, st.node);
    }
    for (const EpilogueStage::Operand& o : st.operands) {
      const bool ok =
          o.kind == EpilogueStage::Operand::Kind::kHead ||
          (o.kind == EpilogueStage::Operand::Kind::kStage && o.index >= 0 && o.index < static_cast<int>(i)) ||
          (o.kind == EpilogueStage::Operand::Kind::kInput &&
           (o.index == -1 ||
            (o.index >= static_cast<int>(e.own_inputs) && o.index < static_cast<int>(n.inputs.size()))));
      if (!ok) return bad(n, "epilogue stage {} ('{}') reads an operand that does not exist", i, st.node);
    }
  }
  return Status::ok();
}

Status check_inference(const Node& n, SymbolTable* symbols) {
  Node probe;
  probe.op = n.op;
  probe.name = n.name;
  // Read only by inference; an epilogue's operands are not the op's.
  const size_t own = n.epilogue.empty() ? n.inputs.size() : n.epilogue.own_inputs;
  probe.inputs.assign(n.inputs.begin(), n.inputs.begin() + std::min(own, n.inputs.size()));
  probe.attrs = n.attrs;
  std::vector<Value> outs(n.outputs.size());
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    outs[i].name = n.outputs[i]->name;
    outs[i].shape = n.outputs[i]->shape;
    outs[i].dtype = n.outputs[i]->dtype;
    probe.outputs.push_back(&outs[i]);
  }
  Status s = infer_node(probe, symbols);
  if (!s.is_ok()) return internal_error(fmt::format("verifier: shape inference fails: {}", s.message()));
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    const Value* v = n.outputs[i];
    if (!shapes_agree(v->shape, outs[i].shape) || v->dtype != outs[i].dtype) {
      return bad(n, "output '{}' is {}{} but shape inference gives {}{}", v->name, dtype_name(v->dtype),
                 shape_str(v->shape), dtype_name(outs[i].dtype), shape_str(outs[i].shape));
    }
  }
  return Status::ok();
}

}  // namespace

Status verify(const Graph& graph, const VerifyOptions& options) {
  std::unordered_set<const Value*> owned;
  for (const auto& v : graph.values()) owned.insert(v.get());
  std::unordered_set<const Value*> defined;
  auto check_static = [&](const Value* v, const std::string& who) -> Status {
    if (options.require_static_shapes && !v->has_static_shape()) {
      return internal_error(fmt::format("verifier: value '{}' ({}) has a dynamic shape {} after specialisation",
                                        v->name, who, shape_str(v->shape)));
    }
    return Status::ok();
  };
  for (const Value* in : graph.inputs()) {
    if (!in || !owned.count(in)) return internal_error("verifier: a graph input is not a value of this graph");
    if (in->producer || in->is_constant()) {
      return internal_error(fmt::format("verifier: graph input '{}' is produced by a node or is a constant", in->name));
    }
    if (!defined.insert(in).second)
      return internal_error(fmt::format("verifier: graph input '{}' is listed twice", in->name));
    RETURN_IF_ERROR(check_static(in, "graph input"));
  }
  for (const auto& v : graph.values()) {
    if (!v->is_constant()) continue;
    if (v->producer) return internal_error(fmt::format("verifier: constant '{}' also has a producer", v->name));
    if (v->constant.shape() != v->shape || v->constant.dtype() != v->dtype) {
      return internal_error(fmt::format("verifier: constant '{}' is declared {}{} but holds {}", v->name,
                                        dtype_name(v->dtype), shape_str(v->shape), v->constant.describe()));
    }
    defined.insert(v.get());
  }
  for (const auto& up : graph.nodes()) {
    const Node& n = *up;
    if (n.op >= OpKind::kCount) return internal_error(fmt::format("verifier: node '{}' has an invalid op", n.name));
    if (n.attrs.index() != expected_attrs(n.op)) return bad(n, "carries attributes of the wrong kind for its op");
    Arity ar = arity(n.op);
    const size_t own = n.epilogue.empty() ? n.inputs.size() : n.epilogue.original_inputs;
    if (own < ar.min || own > ar.max) {
      return bad(n, "has {} inputs, expected {} to {}", own, ar.min, ar.max == SIZE_MAX ? 99 : ar.max);
    }
    RETURN_IF_ERROR(check_epilogue(n));
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const Value* in = n.inputs[i];
      if (!in) {
        if (i < ar.min) return bad(n, "required input {} is missing", i);
        continue;
      }
      if (!owned.count(in)) return bad(n, "input {} is not a value of this graph (dangling)", i);
      if (!defined.count(in)) {
        if (in->producer)
          return bad(n, "reads '{}' before its producer runs (nodes not in topological order)", in->name);
        return bad(n, "reads '{}', which is not a graph input, a constant or produced by any node", in->name);
      }
      RETURN_IF_ERROR(check_static(in, n.describe() + " input"));
    }
    if (n.outputs.size() != 1) return bad(n, "has {} outputs, expected 1", n.outputs.size());
    for (const Value* out : n.outputs) {
      if (!out || !owned.count(out)) return bad(n, "an output is not a value of this graph");
      if (out->producer != &n) return bad(n, "output '{}' names another producer", out->name);
      if (out->is_constant()) return bad(n, "output '{}' is also a constant", out->name);
      if (!defined.insert(out).second) return bad(n, "output '{}' has more than one producer", out->name);
      RETURN_IF_ERROR(check_static(out, n.describe() + " output"));
    }
    RETURN_IF_ERROR(check_attrs(n));
    RETURN_IF_ERROR(check_inference(n, graph.symbols()));
  }
  if (graph.outputs().empty()) return internal_error("verifier: the graph has no outputs");
  for (const Value* out : graph.outputs()) {
    if (!out || !owned.count(out)) return internal_error("verifier: a graph output is not a value of this graph");
    if (!defined.count(out)) {
      return internal_error(fmt::format("verifier: graph output '{}' is not produced by any node", out->name));
    }
  }
  return Status::ok();
}

}  // namespace steadyocr::graph

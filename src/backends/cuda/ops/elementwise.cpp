// Elementwise ops (Add/Sub/Mul/Div/Pow with NumPy broadcasting, Sqrt, activations) as programs for
// kernels/elementwise.cu; scalar constants become immediates. The fusion pass merges chains of them.
#include <fmt/format.h>

#include "backends/cuda/check.h"
#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

using graph::Node;
using graph::OpKind;

k::Dt to_kdt(DType t) {
  switch (t) {
    case DType::kF16:
      return k::Dt::kF16;
    case DType::kI64:
      return k::Dt::kI64;
    case DType::kI32:
      return k::Dt::kI32;
    case DType::kU8:
      return k::Dt::kU8;
    case DType::kBool:
      return k::Dt::kBool;
    default:
      return k::Dt::kF32;
  }
}

Status EwProgram::to_params(const Bindings& b, k::EwParams* p) const {
  *p = k::EwParams();
  const int rank = static_cast<int>(shape.size());
  const int64_t n = shape_numel(shape);
  if (static_cast<int>(inputs.size()) > k::kEwMaxInputs || static_cast<int>(instrs.size()) > k::kEwMaxInstrs) {
    return internal_error(
        fmt::format("elementwise program too large ({} inputs, {} instructions)", inputs.size(), instrs.size()));
  }
  // Broadcast strides of each input in the output's index space.
  std::vector<std::vector<int64_t>> st(inputs.size(), std::vector<int64_t>(rank, 0));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape& s = inputs[i].shape;
    const int ri = static_cast<int>(s.size());
    if (ri > rank)
      return invalid_argument(fmt::format("input {} does not broadcast to {}", shape_str(s), shape_str(shape)));
    std::vector<int64_t> cs = shape_strides(s);
    for (int d = 0; d < rank; ++d) {
      int di = d - (rank - ri);
      if (di < 0 || s[di] == 1) continue;
      if (s[di] != shape[d]) {
        return invalid_argument(fmt::format("input {} does not broadcast to {}", shape_str(s), shape_str(shape)));
      }
      st[i][d] = cs[di];
    }
  }
  // Collapse: drop size-1 axes, merge neighbours that are contiguous for every input.
  std::vector<int64_t> shp;
  std::vector<std::vector<int64_t>> cst(inputs.size());
  for (int d = 0; d < rank; ++d) {
    if (shape[d] == 1) continue;
    bool merge = !shp.empty();
    for (size_t i = 0; merge && i < inputs.size(); ++i) merge = cst[i].back() == st[i][d] * shape[d];
    if (merge) {
      shp.back() *= shape[d];
      for (size_t i = 0; i < inputs.size(); ++i) cst[i].back() = st[i][d];
    } else {
      shp.push_back(shape[d]);
      for (size_t i = 0; i < inputs.size(); ++i) cst[i].push_back(st[i][d]);
    }
  }
  if (shp.empty()) {
    shp.push_back(1);
    for (auto& c : cst) c.push_back(0);
  }
  if (static_cast<int>(shp.size()) > k::kMaxRank) {
    return unsupported(fmt::format("elementwise broadcast over {} needs rank {} (at most {})", shape_str(shape),
                                   shp.size(), k::kMaxRank));
  }
  p->rank = static_cast<int>(shp.size());
  for (int d = 0; d < p->rank; ++d) p->shape[d] = shp[d];
  p->n = n;
  p->n_inputs = static_cast<int>(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    k::EwInput& in = p->in[i];
    in.ptr = b.ptr(inputs[i].ref);
    in.dt = to_kdt(inputs[i].dtype);
    in.contiguous = shape_numel(inputs[i].shape) == n;
    for (int d = 0; d < p->rank; ++d) in.strides[d] = cst[i][d];
    in.lo = p->rank;  // a scalar reads its one element
    for (int d = p->rank - 1; d >= 0; --d) {
      if (in.strides[d] != 0) in.lo = d;
    }
  }
  p->acc_src = acc_src;
  p->n_instrs = static_cast<int>(instrs.size());
  for (size_t j = 0; j < instrs.size(); ++j) p->ins[j] = instrs[j];
  p->out = b.ptr(out);
  p->out_dt = to_kdt(out_dtype);
  return Status::ok();
}

Status EwStep::enqueue(const ExecContext& ctx) const {
  SO_LAUNCH(k::launch_elementwise(params_, ctx.stream));
  return Status::ok();
}

void EwStep::collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const {
  for (const auto& in : prog_.inputs) reads->push_back(in.ref);
  writes->push_back(prog_.out);
}

namespace {

k::EwOp binary_op(OpKind op, bool reversed) {
  switch (op) {
    case OpKind::kAdd:
      return k::EwOp::kAdd;
    case OpKind::kMul:
      return k::EwOp::kMul;
    case OpKind::kSub:
      return reversed ? k::EwOp::kRsub : k::EwOp::kSub;
    case OpKind::kDiv:
      return reversed ? k::EwOp::kRdiv : k::EwOp::kDiv;
    default:
      return reversed ? k::EwOp::kRpow : k::EwOp::kPow;
  }
}

bool scalar_constant(const graph::Value* v, float* out) {
  if (!v || !v->is_constant() || v->constant.numel() != 1 || !is_float_type(v->constant.dtype())) return false;
  *out = v->constant.to_floats()[0];
  return true;
}

}  // namespace

Status build_binary(PlanBuilder& b, const Node& n) {
  const graph::Value* va = n.input(0);
  const graph::Value* vb = n.input(1);
  if (!va || !vb) return invalid_argument("binary op needs two inputs");
  EwProgram p;
  p.shape = n.output()->shape;
  float imm = 0.f;
  k::EwInstr ins;
  if (scalar_constant(vb, &imm) && !va->is_constant()) {
    ASSIGN_OR_RETURN(DevTensor a, b.input_any(va));
    p.inputs.push_back({a.ref, a.dtype, a.shape});
    ins.op = binary_op(n.op, false);
    ins.imm = imm;
  } else if (scalar_constant(va, &imm) && !vb->is_constant()) {
    ASSIGN_OR_RETURN(DevTensor c, b.input_any(vb));
    p.inputs.push_back({c.ref, c.dtype, c.shape});
    ins.op = binary_op(n.op, true);
    ins.imm = imm;
  } else {
    ASSIGN_OR_RETURN(DevTensor a, b.input_any(va));
    ASSIGN_OR_RETURN(DevTensor c, b.input_any(vb));
    // The accumulator is the operand with the output's shape, so a later fusion can chain on it.
    bool swap = a.shape != p.shape && c.shape == p.shape;
    const DevTensor& acc = swap ? c : a;
    const DevTensor& other = swap ? a : c;
    p.inputs.push_back({acc.ref, acc.dtype, acc.shape});
    p.inputs.push_back({other.ref, other.dtype, other.shape});
    ins.op = binary_op(n.op, swap);
    ins.src = 1;
  }
  p.instrs.push_back(ins);
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), b.compute_type(n)));
  p.out = y.ref;
  p.out_dtype = y.dtype;
  b.add_step(std::make_unique<EwStep>(std::move(p)), &n);
  return Status::ok();
}

Status build_unary(PlanBuilder& b, const Node& n) {
  ASSIGN_OR_RETURN(DevTensor x, b.input_any(n.input(0)));
  EwProgram p;
  p.shape = n.output()->shape;
  p.inputs.push_back({x.ref, x.dtype, x.shape});
  k::EwInstr ins;
  if (n.op == OpKind::kSqrt) {
    ins.op = k::EwOp::kSqrt;
  } else {
    if (!std::holds_alternative<graph::ActAttrs>(n.attrs)) return invalid_argument("activation without ActAttrs");
    if (!activation_instr(n.attr<graph::ActAttrs>().act, &ins)) ins.op = k::EwOp::kAdd;  // kNone: a copy
  }
  p.instrs.push_back(ins);
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), b.compute_type(n)));
  p.out = y.ref;
  p.out_dtype = y.dtype;
  b.add_step(std::make_unique<EwStep>(std::move(p)), &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

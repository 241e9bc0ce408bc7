// Add/Sub/Mul/Div on i64/i32 tensors with NumPy broadcasting: shape arithmetic that constant folding left in
// the graph (it normally folds all of it). Wrapping like unsigned arithmetic; Div truncates toward zero and
// division by zero is an error, as in the reference backend.
#include <fmt/format.h>

#include <limits>

#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

template <typename T>
Status apply(graph::OpKind op, const T* a, const T* b, T* y, const Shape& out, const std::vector<int64_t>& sa,
             const std::vector<int64_t>& sb) {
  const int rank = static_cast<int>(out.size());
  const int64_t n = shape_numel(out);
  std::vector<int64_t> idx(rank, 0);
  int64_t oa = 0, ob = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T u = a[oa], v = b[ob];
    switch (op) {
      case graph::OpKind::kAdd:
        y[i] = static_cast<T>(static_cast<uint64_t>(u) + static_cast<uint64_t>(v));
        break;
      case graph::OpKind::kSub:
        y[i] = static_cast<T>(static_cast<uint64_t>(u) - static_cast<uint64_t>(v));
        break;
      case graph::OpKind::kMul:
        y[i] = static_cast<T>(static_cast<uint64_t>(u) * static_cast<uint64_t>(v));
        break;
      default:
        if (v == 0) return invalid_argument("integer division by zero");
        y[i] = (u == std::numeric_limits<T>::min() && v == T(-1)) ? u : static_cast<T>(u / v);
        break;
    }
    for (int d = rank - 1; d >= 0; --d) {
      oa += sa[d];
      ob += sb[d];
      if (++idx[d] < out[d]) break;
      oa -= sa[d] * out[d];
      ob -= sb[d] * out[d];
      idx[d] = 0;
    }
  }
  return Status::ok();
}

std::vector<int64_t> broadcast_strides(const Shape& in, const Shape& out) {
  std::vector<int64_t> st(out.size(), 0);
  int64_t acc = 1;
  for (int i = static_cast<int>(in.size()) - 1; i >= 0; --i) {
    const size_t o = out.size() - in.size() + static_cast<size_t>(i);
    st[o] = in[i] == 1 ? 0 : acc;
    acc *= in[i];
  }
  return st;
}

class IntBinaryOp : public CpuOp {
 public:
  IntBinaryOp(graph::OpKind op, DType t, int a, int b, int y, Shape out, std::vector<int64_t> sa,
              std::vector<int64_t> sb)
      : op_(op), t_(t), a_(a), b_(b), y_(y), out_(std::move(out)), sa_(std::move(sa)), sb_(std::move(sb)) {}
  Status run(RunContext& ctx) override {
    if (t_ == DType::kI64) {
      return apply(op_, static_cast<const int64_t*>(ctx.ptr(a_)), static_cast<const int64_t*>(ctx.ptr(b_)),
                   static_cast<int64_t*>(ctx.ptr(y_)), out_, sa_, sb_);
    }
    return apply(op_, static_cast<const int32_t*>(ctx.ptr(a_)), static_cast<const int32_t*>(ctx.ptr(b_)),
                 static_cast<int32_t*>(ctx.ptr(y_)), out_, sa_, sb_);
  }
  std::string describe() const override {
    return fmt::format("{} {} {}", graph::op_name(op_), dtype_name(t_), shape_str(out_));
  }

 private:
  graph::OpKind op_;
  DType t_;
  int a_, b_, y_;
  Shape out_;
  std::vector<int64_t> sa_, sb_;
};

}  // namespace

bool int_binary_supported(const graph::Node& n) {
  const graph::Value* y = n.output();
  if (!y || (y->dtype != DType::kI64 && y->dtype != DType::kI32)) return false;
  if (n.op != graph::OpKind::kAdd && n.op != graph::OpKind::kSub && n.op != graph::OpKind::kMul &&
      n.op != graph::OpKind::kDiv) {
    return false;
  }
  return n.inputs.size() == 2 && n.input(0) && n.input(1) && n.input(0)->dtype == y->dtype &&
         n.input(1)->dtype == y->dtype;
}

Status build_int_binary(PlanBuilder& b, const graph::Node& n) {
  if (!int_binary_supported(n)) return unsupported("integer arithmetic is Add/Sub/Mul/Div on i64 or i32");
  const graph::Value* y = n.output();
  for (int i = 0; i < 2; ++i) {
    if (n.input(i)->shape.size() > y->shape.size()) return invalid_argument("operand rank exceeds the output's");
  }
  ASSIGN_OR_RETURN(int a, b.plain(n.input(0)));
  ASSIGN_OR_RETURN(int c, b.plain(n.input(1)));
  int out = b.new_buffer(y->dtype, y->shape, Md(), y->name);
  b.add_step(
      std::make_unique<IntBinaryOp>(n.op, y->dtype, a, c, out, y->shape, broadcast_strides(n.input(0)->shape, y->shape),
                                    broadcast_strides(n.input(1)->shape, y->shape)),
      {a, c}, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

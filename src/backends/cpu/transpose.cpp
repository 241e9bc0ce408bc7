// Transpose: f32 through a oneDNN reorder from a permuted view of the input (JIT-compiled where oneDNN has
// one); other dtypes through our strided copy.
#include <fmt/format.h>

#include <numeric>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/strided_copy.h"

namespace steadyocr::cpu {
namespace {

class StridedCopyOp : public CpuOp {
 public:
  StridedCopyOp(int in, int out, std::vector<int64_t> strides, std::vector<int64_t> dims, int64_t offset, size_t elem,
                std::string label)
      : in_(in),
        out_(out),
        strides_(std::move(strides)),
        dims_(std::move(dims)),
        offset_(offset),
        elem_(elem),
        label_(std::move(label)) {}
  Status run(RunContext& ctx) override {
    const auto* src = static_cast<const uint8_t*>(ctx.ptr(in_)) + offset_ * static_cast<int64_t>(elem_);
    strided_copy(src, strides_, dims_, static_cast<uint8_t*>(ctx.ptr(out_)), elem_);
    return Status::ok();
  }
  std::string describe() const override { return label_; }

 private:
  int in_, out_;
  std::vector<int64_t> strides_, dims_;
  int64_t offset_;
  size_t elem_;
  std::string label_;
};

}  // namespace

std::unique_ptr<CpuOp> make_strided_copy_op(int in, int out, std::vector<int64_t> strides, std::vector<int64_t> dims,
                                            int64_t offset, size_t elem, std::string label) {
  return std::make_unique<StridedCopyOp>(in, out, std::move(strides), std::move(dims), offset, elem, std::move(label));
}

Status build_transpose(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || !y) return invalid_argument("Transpose needs an input");
  const Shape& xs = x->shape;
  const int rank = static_cast<int>(xs.size());
  std::vector<int64_t> perm = n.attr<graph::TransposeAttrs>().perm;
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (static_cast<int>(perm.size()) != rank) return invalid_argument("Transpose perm does not match the rank");
  std::vector<int64_t> st = shape_strides(xs), view_strides(rank);
  Shape ys(rank);
  for (int i = 0; i < rank; ++i) {
    if (perm[i] < 0 || perm[i] >= rank) return invalid_argument("Transpose perm out of range");
    ys[i] = xs[perm[i]];
    view_strides[i] = st[perm[i]];
  }
  if (ys != y->shape) return invalid_argument("Transpose output shape does not match its perm");
  ASSIGN_OR_RETURN(int in, b.plain(x));
  int out = b.new_buffer(x->dtype, ys, x->dtype == DType::kF32 ? plain_md(ys) : Md(), y->name);
  std::string label = fmt::format("transpose {} perm[{}]", shape_str(xs), fmt::join(perm, ","));
  if (shape_numel(ys) == 0) {
    b.set_home(y, out);
    return Status::ok();
  }
  if (x->dtype == DType::kF32 && rank >= 1 && rank <= DNNL_MAX_NDIMS) {
    Md view(to_dims(ys), Dt::f32, Dims(view_strides.begin(), view_strides.end()));
    dnnl::reorder::primitive_desc pd;
    Status st_pd = dnnl_try(label, [&] {
      pd = dnnl::reorder::primitive_desc(cpu_engine(), view, cpu_engine(), plain_md(ys), base_attr());
    });
    if (st_pd.is_ok()) {
      DnnlArgs args;
      args.add(DNNL_ARG_SRC, in, view);
      args.add(DNNL_ARG_DST, out, plain_md(ys));
      b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), {in}, {out}, &n);
      b.set_home(y, out);
      return Status::ok();
    }
  }
  b.add_step(make_strided_copy_op(in, out, view_strides, std::vector<int64_t>(ys.begin(), ys.end()), 0,
                                  dtype_size(x->dtype), label),
             {in}, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

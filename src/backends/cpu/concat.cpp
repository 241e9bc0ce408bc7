// Concat: f32 on oneDNN's concat primitive, reading each input in its producer's layout (no reorders before
// it); other dtypes as plain block copies.
#include <fmt/format.h>

#include <cstring>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

class ConcatCopyOp : public CpuOp {
 public:
  ConcatCopyOp(std::vector<int> ins, std::vector<int64_t> blocks, int out, int64_t outer, size_t elem)
      : ins_(std::move(ins)), blocks_(std::move(blocks)), out_(out), outer_(outer), elem_(elem) {}
  Status run(RunContext& ctx) override {
    int64_t row = 0;
    for (int64_t bl : blocks_) row += bl;
    auto* out = static_cast<uint8_t*>(ctx.ptr(out_));
    int64_t col = 0;
    for (size_t i = 0; i < ins_.size(); ++i) {
      const auto* in = static_cast<const uint8_t*>(ctx.ptr(ins_[i]));
      for (int64_t o = 0; o < outer_; ++o) {
        std::memcpy(out + (o * row + col) * elem_, in + o * blocks_[i] * elem_, blocks_[i] * elem_);
      }
      col += blocks_[i];
    }
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("concat copy x{}", ins_.size()); }

 private:
  std::vector<int> ins_;
  std::vector<int64_t> blocks_;
  int out_;
  int64_t outer_;
  size_t elem_;
};

}  // namespace

Status build_concat(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* y = n.output();
  if (!y || n.inputs.empty()) return invalid_argument("Concat needs inputs");
  const int64_t rank = static_cast<int64_t>(y->shape.size());
  int64_t axis = n.attr<graph::AxisAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("Concat axis out of range");
  std::vector<const graph::Value*> ins;
  for (const graph::Value* v : n.inputs) {
    if (!v) continue;
    if (v->dtype != y->dtype || v->shape.size() != y->shape.size()) {
      return invalid_argument("Concat inputs differ in dtype or rank");
    }
    if (shape_numel(v->shape) > 0) ins.push_back(v);
  }
  if (ins.empty() || shape_numel(y->shape) == 0) {
    int out = b.new_buffer(y->dtype, y->shape, y->dtype == DType::kF32 ? plain_md(y->shape) : Md(), y->name);
    b.set_home(y, out);
    return Status::ok();
  }
  if (y->dtype == DType::kF32) {
    std::vector<Md> mds;
    std::vector<int> bufs;
    for (const graph::Value* v : ins) {
      ASSIGN_OR_RETURN(int h, b.home(v));
      Md md = b.buffer(h).md;
      if (layout_kind(md).kind == LayoutKind::kOther) md = plain_md(v->shape);
      ASSIGN_OR_RETURN(int buf, b.in_layout(v, md));
      mds.push_back(md);
      bufs.push_back(buf);
    }
    // The output in the first input's layout when that layout fits it, else plain.
    Md dst = same_layout(mds[0], to_dims(y->shape));
    if (dst.get_size() == 0) dst = plain_md(y->shape);
    dnnl::concat::primitive_desc pd;
    RETURN_IF_ERROR(dnnl_try("concat into " + shape_str(y->shape), [&] {
      pd = dnnl::concat::primitive_desc(dst, static_cast<int>(axis), mds, cpu_engine(), base_attr());
    }));
    int out = b.new_buffer(DType::kF32, y->shape, pd.dst_desc(), y->name);
    DnnlArgs args;
    for (size_t i = 0; i < bufs.size(); ++i) args.add(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), bufs[i], mds[i]);
    args.add(DNNL_ARG_DST, out, pd.dst_desc());
    std::string label = fmt::format("concat x{} axis {} -> {}", bufs.size(), axis, md_str(pd.dst_desc()));
    b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), bufs, {out}, &n);
    b.set_home(y, out);
    return Status::ok();
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y->shape[d];
  std::vector<int> bufs;
  std::vector<int64_t> blocks;
  for (const graph::Value* v : ins) {
    ASSIGN_OR_RETURN(int buf, b.plain(v));
    bufs.push_back(buf);
    blocks.push_back(shape_numel(v->shape) / outer);
  }
  int out = b.new_buffer(y->dtype, y->shape, Md(), y->name);
  b.add_step(std::make_unique<ConcatCopyOp>(bufs, blocks, out, outer, dtype_size(y->dtype)), bufs, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

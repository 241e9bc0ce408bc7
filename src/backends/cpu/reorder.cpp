// Layout changes between oneDNN's blocked formats and plain row-major (and strided views for Transpose).
#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

class ReorderOp : public CpuOp {
 public:
  ReorderOp(int src, const Md& src_md, int dst, const Md& dst_md, dnnl::reorder::primitive_desc pd)
      : src_md_(src_md), dst_md_(dst_md), pd_(std::move(pd)) {
    args_.add(DNNL_ARG_SRC, src, src_md);
    args_.add(DNNL_ARG_DST, dst, dst_md);
  }
  Status bind(const RunContext& ctx) override {
    RETURN_IF_ERROR(dnnl_try("creating a reorder", [&] { prim_ = dnnl::reorder(pd_); }));
    return args_.bind(ctx, pd_.scratchpad_desc());
  }
  Status run(RunContext& ctx) override { return args_.execute(ctx, prim_, "reorder"); }
  std::string describe() const override { return "reorder " + md_str(src_md_) + " -> " + md_str(dst_md_); }
  size_t scratchpad_bytes() const override { return pd_.scratchpad_desc().get_size(); }

 private:
  Md src_md_, dst_md_;
  dnnl::reorder::primitive_desc pd_;
  dnnl::reorder prim_;
  DnnlArgs args_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_reorder_op(int src, const Md& src_md, int dst, const Md& dst_md) {
  dnnl::reorder::primitive_desc pd;
  RETURN_IF_ERROR(dnnl_try("reorder " + md_str(src_md) + " -> " + md_str(dst_md), [&] {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    pd = dnnl::reorder::primitive_desc(cpu_engine(), src_md, cpu_engine(), dst_md, attr);
  }));
  return std::unique_ptr<CpuOp>(std::make_unique<ReorderOp>(src, src_md, dst, dst_md, std::move(pd)));
}

}  // namespace steadyocr::cpu

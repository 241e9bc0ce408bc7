// Internal to the oneDNN CPU backend: a step that executes one oneDNN primitive created at prepare.
#pragma once

#include <string>
#include <utility>

#include "backends/cpu/plan.h"

namespace steadyocr::cpu {

class DnnlOp : public CpuOp {
 public:
  DnnlOp(std::string label, dnnl::primitive_desc_base pd, DnnlArgs args)
      : label_(std::move(label)), pd_(std::move(pd)), args_(std::move(args)) {
    label_ += std::string(" ") + pd_.impl_info_str();
  }
  Status bind(const RunContext& ctx) override {
    RETURN_IF_ERROR(dnnl_try("creating primitive " + label_, [&] { prim_ = dnnl::primitive(pd_.get()); }));
    return args_.bind(ctx, pd_.scratchpad_desc());
  }
  Status run(RunContext& ctx) override { return args_.execute(ctx, prim_, label_.c_str()); }
  std::string describe() const override { return label_; }
  size_t scratchpad_bytes() const override { return pd_.scratchpad_desc().get_size(); }

 private:
  std::string label_;
  dnnl::primitive_desc_base pd_;
  dnnl::primitive prim_;
  DnnlArgs args_;
};

// Attributes every primitive here uses: a user scratchpad (one per plan, not one per primitive).
inline dnnl::primitive_attr base_attr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

}  // namespace steadyocr::cpu

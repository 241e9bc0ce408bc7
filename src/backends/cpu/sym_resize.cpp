// The symbolic plan's Resize of H and W (the detector's FPN upsampling), channels-last: the per-axis tables are made
// for each run's sizes (a few hundred entries), and the kernel is the per-shape plan's (resize_kernel.h).
#include <fmt/format.h>

#include <algorithm>

#include "backends/common/resize_axis.h"
#include "backends/cpu/resize_kernel.h"
#include "backends/cpu/sym_ops.h"

namespace steadyocr::cpu {
namespace {

class ResizeHw : public SymStep {
 public:
  ResizeHw(int x, int y, const graph::ResizeAttrs& a) : x_(x), y_(y), a_(a) {}
  Status run(const SymRun& r) const override {
    const Shape xs = r.physical(x_), ys = r.physical(y_);
    const Shape& logical_in = r.shape(x_);
    const Shape& logical_out = r.shape(y_);
    auto axis = [&](int d) {
      const float scale = !a_.scales.empty() ? a_.scales[static_cast<size_t>(d)]
                                             : static_cast<float>(logical_out[d]) / static_cast<float>(logical_in[d]);
      return common::resize_axis(a_, scale, logical_in[d], logical_out[d]);
    };
    const common::ResizeAxis ay = axis(2), ax = axis(3);
    Geometry g{xs[0], xs[1], xs[2], ys[1], ys[2], xs[3]};
    const float* x = r.f32(x_);
    float* y = r.f32(y_);
    const bool linear = a_.mode == graph::ResizeMode::kLinear;
    // Planes are images here, often one: blocks of output rows go across the team.
    const int64_t block = 16, blocks = (g.oh + block - 1) / block;
#pragma omp parallel for collapse(2) schedule(static)
    for (int64_t p = 0; p < g.planes; ++p) {
      for (int64_t rb = 0; rb < blocks; ++rb) {
        const int64_t r0 = rb * block, r1 = std::min(g.oh, r0 + block);
        common::ResizeAxis rows;
        rows.i0.assign(ay.i0.begin() + r0, ay.i0.begin() + r1);
        if (linear) {
          rows.i1.assign(ay.i1.begin() + r0, ay.i1.begin() + r1);
          rows.t.assign(ay.t.begin() + r0, ay.t.begin() + r1);
        }
        Geometry part = g;
        part.oh = r1 - r0;
        resize_planes(x + p * g.ih * g.iw * g.vec, y + (p * g.oh + r0) * g.ow * g.vec, part, rows, ax, linear, 0, 1);
      }
    }
    return Status::ok();
  }
  std::string describe() const override {
    return fmt::format("resize {} hw", a_.mode == graph::ResizeMode::kLinear ? "linear" : "nearest");
  }

 private:
  int x_, y_;
  graph::ResizeAttrs a_;
};

}  // namespace

Status build_sym_resize(SymBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ResizeAttrs>();
  const graph::Value* x = n.input(0);
  const graph::Value* y = n.output();
  if (!x || x->shape.size() != 4 || x->dtype != DType::kF32) return unsupported("Resize of a 4-D f32 tensor only");
  // N and C kept: scales of 1, or sizes equal to the input's.
  for (int d = 0; d < 2; ++d) {
    const bool kept = !a.scales.empty() ? a.scales[static_cast<size_t>(d)] == 1.f : x->shape[d] == y->shape[d];
    if (!kept) return unsupported("a Resize of the batch or channel axis");
  }
  if (a.scales.empty() && a.sizes.empty()) return unsupported("a Resize whose sizes come from an input");
  ASSIGN_OR_RETURN(int xb, b.in_layout(x, Layout::kNhwc));
  const int yb = b.new_buffer(y, Layout::kNhwc);
  b.add_step(std::make_unique<ResizeHw>(xb, yb, a), {xb}, {yb}, &n);
  b.set_home(y, yb);
  return Status::ok();
}

}  // namespace steadyocr::cpu

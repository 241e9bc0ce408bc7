// ReduceMean over any axes (kernels/reduce.cu): kept axes form the output index space in input order, which is
// the output's element order with or without keepdims.
#include <fmt/format.h>

#include <set>

#include "backends/cuda/ops/ops.h"
#include "backends/cuda/ops/ops_util.h"

namespace steadyocr::cuda {

Status build_reduce_mean(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ReduceAttrs>();
  const DType dt = b.compute_type(n);
  ASSIGN_OR_RETURN(DevTensor x, b.input(n.input(0), dt));
  ASSIGN_OR_RETURN(DevTensor y, b.output(n.output(), dt));
  const int64_t rank = static_cast<int64_t>(x.shape.size());
  std::set<int64_t> axes;
  for (int64_t ax : a.axes) {
    int64_t v;
    if (!normalize_axis(ax, rank, &v)) return invalid_argument(fmt::format("axis {} out of range", ax));
    axes.insert(v);
  }
  if (a.axes.empty()) {
    for (int64_t d = 0; d < rank; ++d) axes.insert(d);
  }
  std::vector<int64_t> strides = shape_strides(x.shape);
  auto p = std::make_shared<k::ReduceParams>();
  p->dt = to_kdt(dt);
  // Merge neighbouring axes of the same kind when contiguous, to stay within kMaxRank.
  std::vector<int64_t> ks, kst, rs, rst;
  int last_kind = -1;
  for (int64_t d = 0; d < rank; ++d) {
    if (x.shape[d] == 1) continue;
    int kind = axes.count(d) ? 1 : 0;
    auto& shp = kind ? rs : ks;
    auto& st = kind ? rst : kst;
    if (kind == last_kind && st.back() == strides[d] * x.shape[d]) {
      shp.back() *= x.shape[d];
      st.back() = strides[d];
    } else {
      shp.push_back(x.shape[d]);
      st.push_back(strides[d]);
    }
    last_kind = kind;
  }
  if (ks.size() > static_cast<size_t>(k::kMaxRank) || rs.size() > static_cast<size_t>(k::kMaxRank)) {
    return unsupported(fmt::format("ReduceMean over {} needs too many axes", shape_str(x.shape)));
  }
  p->keep_rank = static_cast<int>(ks.size());
  p->red_rank = static_cast<int>(rs.size());
  p->out_n = 1;
  p->red_n = 1;
  for (size_t i = 0; i < ks.size(); ++i) {
    p->keep_shape[i] = ks[i];
    p->keep_strides[i] = kst[i];
    p->out_n *= ks[i];
  }
  for (size_t i = 0; i < rs.size(); ++i) {
    p->red_shape[i] = rs[i];
    p->red_strides[i] = rst[i];
    p->red_n *= rs[i];
  }
  if (p->out_n != y.numel()) {
    return internal_error(fmt::format("ReduceMean output {} vs {} kept elements", shape_str(y.shape), p->out_n));
  }
  b.add_step(std::make_unique<KernelStep>(
                 std::vector<BufRef>{x.ref}, std::vector<BufRef>{y.ref},
                 [p, x, y](const Bindings& bd) {
                   p->x = bd.ptr(x.ref);
                   p->y = bd.ptr(y.ref);
                 },
                 [p](cudaStream_t s) { return k::launch_reduce_mean(*p, s); }),
             &n);
  return Status::ok();
}

}  // namespace steadyocr::cuda

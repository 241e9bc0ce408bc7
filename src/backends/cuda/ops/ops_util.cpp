#include "backends/cuda/ops/ops_util.h"

#include "backends/cuda/check.h"

namespace steadyocr::cuda {

bool activation_instr(const graph::Activation& act, k::EwInstr* out) {
  k::EwInstr ins;
  ins.alpha = act.alpha;
  ins.beta = act.beta;
  switch (act.kind) {
    case graph::ActKind::kNone:
      return false;
    case graph::ActKind::kRelu:
      ins.op = k::EwOp::kRelu;
      break;
    case graph::ActKind::kSigmoid:
      ins.op = k::EwOp::kSigmoid;
      break;
    case graph::ActKind::kHardSigmoid:
      ins.op = k::EwOp::kHardSigmoid;
      break;
    case graph::ActKind::kHardSwish:
      ins.op = k::EwOp::kHardSwish;
      break;
    case graph::ActKind::kClip:
      ins.op = k::EwOp::kClip;
      break;
  }
  *out = ins;
  return true;
}

bool normalize_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

bool float_tensors_only(const graph::Node& n) {
  for (const graph::Value* v : n.inputs) {
    if (v && !v->is_constant() && !is_float_type(v->dtype)) return false;
  }
  for (const graph::Value* v : n.outputs) {
    if (v && !is_float_type(v->dtype)) return false;
  }
  return true;
}

Status CopyStep::bind(const Bindings& b) {
  params_.clear();
  for (const View& v : views_) {
    // Collapse to at most kMaxRank axes: drop size-1 axes, merge axes contiguous in both views.
    std::vector<int64_t> shp, ss, ds;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.shape[d] == 1) continue;
      if (!shp.empty() && ss.back() == v.src_strides[d] * v.shape[d] && ds.back() == v.dst_strides[d] * v.shape[d]) {
        shp.back() *= v.shape[d];
        ss.back() = v.src_strides[d];
        ds.back() = v.dst_strides[d];
        continue;
      }
      shp.push_back(v.shape[d]);
      ss.push_back(v.src_strides[d]);
      ds.push_back(v.dst_strides[d]);
    }
    if (shp.empty()) {
      shp = {1};
      ss = {1};
      ds = {1};
    }
    if (shp.size() > static_cast<size_t>(k::kMaxRank)) {
      return unsupported(fmt::format("copy of rank {} after collapsing (at most {})", shp.size(), k::kMaxRank));
    }
    k::CopyParams p;
    p.rank = static_cast<int>(shp.size());
    for (int d = 0; d < p.rank; ++d) {
      p.shape[d] = shp[d];
      p.src_strides[d] = ss[d];
      p.dst_strides[d] = ds[d];
    }
    p.src = static_cast<const char*>(b.ptr(v.src)) + v.src_offset_elems * elem_size_;
    p.dst = static_cast<char*>(b.ptr(v.dst)) + v.dst_offset_elems * elem_size_;
    p.elem_size = elem_size_;
    bool empty = false;
    for (int64_t s : v.shape) empty = empty || s == 0;
    if (!empty) params_.push_back(p);
  }
  return Status::ok();
}

Status CopyStep::enqueue(const ExecContext& ctx) const {
  for (const auto& p : params_) SO_LAUNCH(k::launch_strided_copy(p, ctx.stream));
  return Status::ok();
}

void CopyStep::collect(std::vector<BufRef>* reads, std::vector<BufRef>* writes) const {
  for (const View& v : views_) {
    reads->push_back(v.src);
    writes->push_back(v.dst);
  }
}

Status KernelStep::enqueue(const ExecContext& ctx) const {
  SO_LAUNCH(launch_(ctx.stream));
  return Status::ok();
}

}  // namespace steadyocr::cuda

// The Vulkan backend's ops: for each IR op the conditions under which it runs and the dispatches it becomes
// (shaders/*.comp say what each parameter word means). Pointwise epilogues are expanded before planning
// (backend.cpp), so every op here is one node; a fused node is accepted when its head is (its stages are pointwise
// ops every f32 tensor of which this backend runs).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "backends/common/op_table.h"
#include "backends/common/resize_axis.h"
#include "backends/vulkan/ops_util.h"
#include "backends/vulkan/plan.h"

namespace steadyocr::vk {
namespace {

using common::decline;
using common::rank_is;
using graph::OpKind;
constexpr size_t kMaxRank = 8;

bool all_f32(const graph::Node& n) {
  for (const graph::Value* v : n.inputs) {
    if (v && v->dtype != DType::kF32) return false;
  }
  for (const graph::Value* v : n.outputs) {
    if (v && v->dtype != DType::kF32) return false;
  }
  return true;
}

// Layout ops move 32-bit words: 4- and 8-byte elements (f32, i32, i64).
bool word_elements(const graph::Node& n) {
  for (const graph::Value* v : n.outputs) {
    if (v && dtype_size(v->dtype) != 4 && dtype_size(v->dtype) != 8) return false;
  }
  return true;
}

// Every op: ranks up to 8, element counts that fit the shaders' 32-bit indices.
bool common_ok(const graph::Node& n, std::string* why) {
  for (const graph::Value* v : n.outputs) {
    if (!v) continue;
    if (v->shape.size() > kMaxRank) return decline(why, "rank above 8");
    if (shape_numel(v->shape) * static_cast<int64_t>(std::max<size_t>(dtype_size(v->dtype), 4) / 4) >
        (int64_t{1} << 31)) {
      return decline(why, "more than 2^31 elements");
    }
  }
  return true;
}

bool floats(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors (integer math is folded on the host)");
  return true;
}

bool conv_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors");
  if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return decline(why, "only 2-D convolutions (NCHW)");
  if (!n.input(1) || !n.input(1)->is_constant() || !rank_is(n.input(1), 4))
    return decline(why, "weights must be constant");
  return true;
}

bool batchnorm_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors");
  for (size_t i = 1; i < 5; ++i) {
    if (!n.input(i) || !n.input(i)->is_constant()) return decline(why, "statistics must be constant");
  }
  if (!n.input(0) || n.input(0)->shape.size() < 2) return decline(why, "needs [N, C, ...]");
  return true;
}

bool pool_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors");
  if (n.op == OpKind::kGlobalAveragePool) {
    if (!n.input(0) || n.input(0)->shape.size() < 3) return decline(why, "needs [N, C, spatial...]");
    return true;
  }
  if (!rank_is(n.input(0), 4) || !rank_is(n.output(), 4)) return decline(why, "only 2-D pooling (NCHW)");
  return true;
}

bool resize_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors");
  return common::resize_of_trailing_axes(n, why);
}

bool matmul_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n)) return decline(why, "only f32 tensors");
  if (!n.input(0) || !n.input(1) || n.input(0)->shape.empty() || n.input(1)->shape.empty()) {
    return decline(why, "only operands of rank 1 or more");
  }
  return true;
}

bool layernorm_ok(const graph::Node& n, std::string* why) {
  if (!all_f32(n) || !n.input(0)) return decline(why, "only f32 tensors");
  for (size_t i = 1; i < 3; ++i) {
    if (n.input(i) && !n.input(i)->is_constant()) return decline(why, "scale and bias must be constant");
  }
  if (!n.input(1)) return decline(why, "needs a scale");
  return true;
}

bool layout_ok(const graph::Node& n, std::string* why) {
  if (!word_elements(n)) return decline(why, "only 4- and 8-byte elements");
  return true;
}

bool cast_ok(const graph::Node& n, std::string* why) {
  if (!n.input(0) || !n.output()) return decline(why, "needs one input and one output");
  if (n.input(0)->dtype == n.output()->dtype) return layout_ok(n, why);
  if (!castable(n.input(0)->dtype) || !castable(n.output()->dtype)) {
    return decline(why, "only casts between f32, i32, i64, u8 and bool");
  }
  return true;
}

bool shape_ok(const graph::Node& n, std::string* why) {
  if (!n.input(0) || !n.input(0)->has_static_shape()) return decline(why, "needs a static input shape");
  return true;
}

// ---- builders ---------------------------------------------------------------------------------------------------

std::vector<uint32_t> conv_params(const graph::Node& n, bool transpose) {
  const Shape& x = n.input(0)->shape;
  const Shape& y = n.output()->shape;
  const Shape& w = n.input(1)->shape;
  std::array<int64_t, 2> st, dl;
  std::array<int64_t, 4> pads;
  int64_t group;
  graph::Activation act;
  if (transpose) {
    const auto& a = n.attr<graph::ConvTransposeAttrs>();
    st = a.strides, dl = a.dilations, pads = a.pads, group = a.group, act = a.act;
  } else {
    const auto& a = n.attr<graph::ConvAttrs>();
    st = a.strides, dl = a.dilations, pads = a.pads, group = a.group, act = a.act;
  }
  std::vector<uint32_t> p = {u32(x[0]),  u32(x[1]),    u32(x[2]),    u32(x[3]),  u32(y[1]),  u32(y[2]),
                             u32(y[3]),  u32(w[2]),    u32(w[3]),    u32(st[0]), u32(st[1]), u32(dl[0]),
                             u32(dl[1]), u32(pads[0]), u32(pads[1]), u32(group)};
  p.push_back(n.input(2) ? 1u : 0u);
  if (!transpose) p.push_back(n.input(3) ? 1u : 0u);
  p.push_back(static_cast<uint32_t>(act.kind));
  p.push_back(fbits(act.alpha));
  p.push_back(fbits(act.beta));
  p.push_back(u32(shape_numel(y)));
  return p;
}

Status build_conv(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvAttrs>();
  const Shape& x = n.input(0)->shape;
  const Shape& w = n.input(1)->shape;
  const Shape& y = n.output()->shape;
  if (a.group < 1 || x[1] % a.group || y[1] % a.group || w[1] * a.group != x[1]) {
    return invalid_argument(fmt::format("group {} does not divide input {} / output {} channels (weights {})", a.group,
                                        shape_str(x), shape_str(y), shape_str(w)));
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  ASSIGN_OR_RETURN(int wi, b.in(n.input(1)));
  int bi = -1, ri = -1;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(bi, b.in(n.input(2)));
  }
  if (n.input(3)) {
    ASSIGN_OR_RETURN(ri, b.in(n.input(3)));
  }
  const int yi = b.out(n.output());
  std::vector<uint32_t> p = conv_params(n, false);
  const int64_t k = w[1] * w[2] * w[3], m = y[1] / a.group;
  // Dense convolutions as an implicit GEMM (64x64 tiles); depthwise and thin grouped ones directly.
  if (k >= 8 && m >= 8) {
    p.pop_back();  // gemm_conv takes no element count
    Dispatch d;
    d.shader = Shader::kGemmConv;
    d.params = std::move(p);
    d.tensors = {xi, wi, bi, ri, yi};
    d.groups[0] = static_cast<uint32_t>((y[2] * y[3] + 63) / 64);
    d.groups[1] = static_cast<uint32_t>((m + 63) / 64);
    d.groups[2] = static_cast<uint32_t>(x[0] * a.group);
    if (shape_numel(y) > 0) b.add(std::move(d), n);
    return Status::ok();
  }
  b.add_1d(Shader::kConv, std::move(p), {xi, wi, bi, ri, yi}, static_cast<uint64_t>(shape_numel(y)), n);
  return Status::ok();
}

Status build_conv_transpose(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ConvTransposeAttrs>();
  const Shape& x = n.input(0)->shape;
  const Shape& w = n.input(1)->shape;
  const Shape& y = n.output()->shape;
  if (a.group < 1 || x[1] % a.group || w[0] != x[1] || w[1] * a.group != y[1]) {
    return invalid_argument(fmt::format("group {} does not fit input {} / output {} (weights {})", a.group,
                                        shape_str(x), shape_str(y), shape_str(w)));
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  ASSIGN_OR_RETURN(int wi, b.in(n.input(1)));
  int bi = -1;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(bi, b.in(n.input(2)));
  }
  const int yi = b.out(n.output());
  b.add_1d(Shader::kConvTranspose, conv_params(n, true), {xi, wi, bi, yi}, static_cast<uint64_t>(shape_numel(y)), n);
  return Status::ok();
}

Status build_unary(PlanBuilder& b, const graph::Node& n) {
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  uint32_t op = 50;  // sqrt
  float alpha = 0, beta = 0;
  if (n.op != OpKind::kSqrt) {
    const graph::Activation& act = n.attr<graph::ActAttrs>().act;
    op = static_cast<uint32_t>(act.kind);
    alpha = act.alpha;
    beta = act.beta;
  }
  const int64_t count = shape_numel(n.output()->shape);
  b.add_1d(Shader::kUnary, {u32(count), op, fbits(alpha), fbits(beta), 1, 1, 0}, {xi, yi}, static_cast<uint64_t>(count),
           n);
  return Status::ok();
}

Status build_batchnorm(PlanBuilder& b, const graph::Node& n) {
  const Shape& xs = n.input(0)->shape;
  const int64_t c = xs[1];
  int64_t inner = 1;
  for (size_t d = 2; d < xs.size(); ++d) inner *= xs[d];
  std::vector<float> table(static_cast<size_t>(2 * c));
  const float eps = n.attr<graph::BatchNormAttrs>().epsilon;
  for (size_t i = 1; i < 5; ++i) {
    if (n.input(i)->constant.numel() != c) {
      return invalid_argument(
          fmt::format("statistic {} has {} values for {} channels", i, n.input(i)->constant.numel(), c));
    }
  }
  const float* g = n.input(1)->constant.data<float>();
  const float* be = n.input(2)->constant.data<float>();
  const float* mean = n.input(3)->constant.data<float>();
  const float* var = n.input(4)->constant.data<float>();
  for (int64_t i = 0; i < c; ++i) {
    const double s = g[i] / std::sqrt(static_cast<double>(var[i]) + eps);
    table[static_cast<size_t>(i)] = static_cast<float>(s);
    table[static_cast<size_t>(c + i)] = static_cast<float>(be[i] - mean[i] * s);
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  const int64_t count = shape_numel(xs);
  // The folded scale and shift follow the parameter words (unary.comp, op 100).
  std::vector<uint32_t> p = {u32(count), 100, 0, 0, u32(c), u32(inner), 7};
  for (float v : table) p.push_back(fbits(v));
  b.add_1d(Shader::kUnary, std::move(p), {xi, yi}, static_cast<uint64_t>(count), n);
  return Status::ok();
}

Status build_binary(PlanBuilder& b, const graph::Node& n) {
  const Shape& ys = n.output()->shape;
  const size_t rank = std::max<size_t>(ys.size(), 1);
  auto bstrides = [&](const Shape& s) {
    std::vector<uint32_t> st(rank, 0);
    const std::vector<int64_t> own = strides_of(s);
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t d = rank - s.size() + k;
      const int64_t od = ys.empty() ? 1 : ys[d];
      st[d] = s[k] == 1 && od != 1 ? 0 : u32(own[k]);
    }
    return st;
  };
  const Shape& as = n.input(0)->shape;
  const Shape& bs = n.input(1)->shape;
  if (as.size() > rank || bs.size() > rank) return invalid_argument("operand of higher rank than the output");
  uint32_t op = 0;
  switch (n.op) {
    case OpKind::kAdd:
      op = 0;
      break;
    case OpKind::kSub:
      op = 1;
      break;
    case OpKind::kMul:
      op = 2;
      break;
    case OpKind::kDiv:
      op = 3;
      break;
    default:
      op = 4;
      break;
  }
  ASSIGN_OR_RETURN(int ai, b.in(n.input(0)));
  ASSIGN_OR_RETURN(int bi, b.in(n.input(1)));
  const int yi = b.out(n.output());
  const int64_t count = shape_numel(ys);
  std::vector<uint32_t> p(27, 0);
  p[0] = u32(count);
  p[1] = op;
  const std::vector<uint32_t> sa = bstrides(as), sb = bstrides(bs);
  const bool same = as == ys && bs == ys;
  p[2] = same ? 1 : u32(rank);
  for (size_t d = 0; d < rank; ++d) {
    p[3 + d] = same ? (d == 0 ? u32(count) : 1) : u32(ys.empty() ? 1 : ys[d]);
    p[11 + d] = same ? (d == 0 ? 1 : 0) : sa[d];
    p[19 + d] = same ? (d == 0 ? 1 : 0) : sb[d];
  }
  b.add_1d(Shader::kBinary, std::move(p), {ai, bi, yi}, static_cast<uint64_t>(count), n);
  return Status::ok();
}

Status build_pool(PlanBuilder& b, const graph::Node& n) {
  const Shape& xs = n.input(0)->shape;
  const Shape& ys = n.output()->shape;
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  if (n.op == OpKind::kGlobalAveragePool) {
    const int64_t rows = xs[0] * xs[1], cols = rows ? shape_numel(xs) / rows : 0;
    b.add_rows(Shader::kReduceRows, {u32(rows), u32(cols)}, {xi, yi}, static_cast<uint64_t>(rows), n);
    return Status::ok();
  }
  const auto& a = n.attr<graph::PoolAttrs>();
  const int64_t count = shape_numel(ys);
  std::vector<uint32_t> p = {u32(xs[0] * xs[1]),
                             u32(xs[2]),
                             u32(xs[3]),
                             u32(ys[2]),
                             u32(ys[3]),
                             u32(a.kernel[0]),
                             u32(a.kernel[1]),
                             u32(a.strides[0]),
                             u32(a.strides[1]),
                             u32(a.pads[0]),
                             u32(a.pads[1]),
                             u32(a.pads[2]),
                             u32(a.pads[3]),
                             n.op == OpKind::kMaxPool ? 1u : 0u,
                             a.count_include_pad ? 1u : 0u,
                             u32(count)};
  b.add_1d(Shader::kPool, std::move(p), {xi, yi}, static_cast<uint64_t>(count), n);
  return Status::ok();
}

Status build_resize(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ResizeAttrs>();
  const Shape& xs = n.input(0)->shape;
  const Shape& ys = n.output()->shape;
  float sh, sw;
  if (a.scales.size() == 4) {
    sh = a.scales[2];
    sw = a.scales[3];
  } else {
    sh = static_cast<float>(ys[2]) / static_cast<float>(xs[2]);
    sw = static_cast<float>(ys[3]) / static_cast<float>(xs[3]);
  }
  if (!(sh > 0.f) || !(sw > 0.f)) return invalid_argument("Resize with a non-positive scale");
  const common::ResizeAxis ay = common::resize_axis(a, sh, xs[2], ys[2]);
  const common::ResizeAxis ax = common::resize_axis(a, sw, xs[3], ys[3]);
  const bool linear = a.mode == graph::ResizeMode::kLinear;
  const int64_t count = shape_numel(ys);
  std::vector<uint32_t> p = {u32(xs[0] * xs[1]), u32(xs[2]),       u32(xs[3]), u32(ys[2]),
                             u32(ys[3]),         linear ? 1u : 0u, u32(count)};
  auto push = [&](const common::ResizeAxis& t) {
    for (int64_t v : t.i0) p.push_back(u32(v));
    if (!linear) return;
    for (int64_t v : t.i1) p.push_back(u32(v));
    for (float v : t.t) p.push_back(fbits(v));
  };
  push(ay);
  push(ax);
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  b.add_1d(Shader::kResize, std::move(p), {xi, yi}, static_cast<uint64_t>(count), n);
  return Status::ok();
}

Status build_matmul(PlanBuilder& b, const graph::Node& n) {
  Shape as = n.input(0)->shape, bs = n.input(1)->shape;
  const Shape& out_shape = n.output()->shape;
  // NumPy's vectors: a 1-D left operand is a row [1, K], a 1-D right one a column [K, 1] (the axis is dropped from
  // the output, which is contiguous either way).
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  Shape ys;
  {
    const size_t rank = std::max(as.size(), bs.size());
    for (size_t d = 0; d + 2 < rank; ++d) {
      const int64_t da = d + as.size() >= rank ? as[d + as.size() - rank] : 1;
      const int64_t db = d + bs.size() >= rank ? bs[d + bs.size() - rank] : 1;
      if (da != db && da != 1 && db != 1) return invalid_argument("batch axes do not broadcast");
      ys.push_back(std::max(da, db));
    }
    ys.push_back(as[as.size() - 2]);
    ys.push_back(bs.back());
  }
  if (shape_numel(ys) != shape_numel(out_shape)) {
    return invalid_argument(fmt::format("output {} for {} x {}", shape_str(out_shape), shape_str(as), shape_str(bs)));
  }
  const int64_t m = as[as.size() - 2], k = as.back(), nn = bs.back();
  if (bs[bs.size() - 2] != k)
    return invalid_argument(fmt::format("{} x {}: inner sizes differ", shape_str(as), shape_str(bs)));
  // Batch offsets: the output's batch index broadcast back to each operand's batch axes.
  const Shape yb(ys.begin(), ys.end() - 2);
  const int64_t batches = shape_numel(yb);
  auto offsets = [&](const Shape& s) {
    const Shape sb(s.begin(), s.end() - 2);
    const std::vector<int64_t> st = strides_of(sb);
    std::vector<int64_t> off(static_cast<size_t>(batches), 0);
    for (int64_t bi = 0; bi < batches; ++bi) {
      int64_t rem = bi, o = 0;
      for (int d = static_cast<int>(yb.size()) - 1; d >= 0; --d) {
        const int64_t idx = rem % yb[d];
        rem /= yb[d];
        const int sd = d - static_cast<int>(yb.size() - sb.size());
        if (sd >= 0 && sb[sd] != 1) o += idx * st[sd];
      }
      off[static_cast<size_t>(bi)] = o * s[s.size() - 2] * s.back();
    }
    return off;
  };
  const std::vector<int64_t> ao = offsets(as), bo = offsets(bs);
  if (batches > 65535) return unsupported("more than 65535 matrix products in one MatMul");
  std::vector<uint32_t> p = {u32(m), u32(nn), u32(k), u32(batches)};
  for (int64_t i = 0; i < batches; ++i) {
    p.push_back(u32(ao[static_cast<size_t>(i)]));
    p.push_back(u32(bo[static_cast<size_t>(i)]));
  }
  ASSIGN_OR_RETURN(int ai, b.in(n.input(0)));
  ASSIGN_OR_RETURN(int bi, b.in(n.input(1)));
  const int yi = b.out(n.output());
  Dispatch d;
  d.shader = Shader::kGemm;
  d.params = std::move(p);
  d.tensors = {ai, bi, -1, -1, yi};
  d.groups[0] = static_cast<uint32_t>((nn + 63) / 64);
  d.groups[1] = static_cast<uint32_t>((m + 63) / 64);
  d.groups[2] = static_cast<uint32_t>(batches);
  if (shape_numel(ys) > 0) b.add(std::move(d), n);
  return Status::ok();
}

Status build_softmax(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::SoftmaxAttrs>();
  const Shape& xs = n.input(0)->shape;
  const int64_t rank = std::max<int64_t>(static_cast<int64_t>(xs.size()), 1);
  int64_t axis;
  if (!normalize_axis(a.axis, rank, &axis)) return invalid_argument("axis out of range");
  int64_t outer = 1, len = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= xs[static_cast<size_t>(d)];
  const int64_t total = shape_numel(xs);
  if (total == 0) {
    b.out(n.output());
    return Status::ok();
  }
  if (a.flatten_trailing) {
    len = total / outer;
  } else {
    len = xs.empty() ? 1 : xs[static_cast<size_t>(axis)];
    inner = total / (outer * len);
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  if (inner == 1 && len >= 256) {  // long contiguous rows: a workgroup per row
    b.add_rows(Shader::kSoftmaxRows, {u32(outer), u32(len)}, {xi, yi}, static_cast<uint64_t>(outer), n);
    return Status::ok();
  }
  b.add_1d(Shader::kSoftmax, {u32(outer), u32(len), u32(inner)}, {xi, yi}, static_cast<uint64_t>(outer * inner), n);
  return Status::ok();
}

Status build_reduce_mean(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::ReduceAttrs>();
  const Shape& xs = n.input(0)->shape;
  const int64_t rank = static_cast<int64_t>(xs.size());
  std::vector<bool> red(xs.size(), a.axes.empty());
  for (int64_t ax : a.axes) {
    int64_t d;
    if (!normalize_axis(ax, rank, &d)) return invalid_argument("axis out of range");
    red[static_cast<size_t>(d)] = true;
  }
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  const int yi = b.out(n.output());
  const std::vector<int64_t> st = strides_of(xs);
  // Trailing axes only: one workgroup per row.
  size_t first_red = xs.size();
  while (first_red > 0 && red[first_red - 1]) --first_red;
  bool trailing = true;
  for (size_t d = 0; d < first_red; ++d) trailing = trailing && !red[d];
  const int64_t out_count = shape_numel(n.output()->shape);
  if (trailing) {
    int64_t cols = 1;
    for (size_t d = first_red; d < xs.size(); ++d) cols *= xs[d];
    b.add_rows(Shader::kReduceRows, {u32(out_count), u32(cols)}, {xi, yi}, static_cast<uint64_t>(out_count), n);
    return Status::ok();
  }
  std::vector<uint32_t> p(36, 0);
  uint32_t kr = 0, rr = 0;
  int64_t rcount = 1;
  for (size_t d = 0; d < xs.size(); ++d) {
    if (red[d]) {
      p[20 + rr] = u32(xs[d]);
      p[28 + rr] = u32(st[d]);
      ++rr;
      rcount *= xs[d];
    } else {
      p[4 + kr] = u32(xs[d]);
      p[12 + kr] = u32(st[d]);
      ++kr;
    }
  }
  if (kr == 0) {
    p[4] = 1;
    kr = 1;
  }
  p[0] = u32(out_count);
  p[1] = kr;
  p[2] = rr;
  p[3] = u32(rcount);
  b.add_1d(Shader::kReduce, std::move(p), {xi, yi}, static_cast<uint64_t>(out_count), n);
  return Status::ok();
}

// A constant broadcast over the trailing shape, expanded on the host.
Result<std::vector<float>> expand_trailing(const Tensor& t, const Shape& trailing) {
  const int64_t cols = shape_numel(trailing);
  const Shape& s = t.shape();
  if (s.size() > trailing.size()) return invalid_argument("scale/bias of higher rank than the normalised axes");
  std::vector<float> out(static_cast<size_t>(cols));
  const std::vector<int64_t> ts = strides_of(trailing);
  const std::vector<int64_t> ps = strides_of(s);
  for (int64_t i = 0; i < cols; ++i) {
    int64_t off = 0;
    for (size_t k = 0; k < s.size(); ++k) {
      const size_t d = trailing.size() - s.size() + k;
      const int64_t idx = (i / ts[d]) % trailing[d];
      if (s[k] != 1) {
        if (s[k] != trailing[d]) return invalid_argument("scale/bias does not broadcast to the normalised axes");
        off += idx * ps[k];
      }
    }
    out[static_cast<size_t>(i)] = t.data<float>()[off];
  }
  return out;
}

Status build_layernorm(PlanBuilder& b, const graph::Node& n) {
  const auto& a = n.attr<graph::LayerNormAttrs>();
  const Shape& xs = n.input(0)->shape;
  int64_t axis;
  if (!normalize_axis(a.axis, static_cast<int64_t>(xs.size()), &axis)) return invalid_argument("axis out of range");
  const Shape trailing(xs.begin() + axis, xs.end());
  const int64_t cols = shape_numel(trailing), rows = cols ? shape_numel(xs) / cols : 0;
  ASSIGN_OR_RETURN(int xi, b.in(n.input(0)));
  ASSIGN_OR_RETURN(std::vector<float> scale, expand_trailing(n.input(1)->constant, trailing));
  ASSIGN_OR_RETURN(int si, b.table(scale, n.name + ".scale"));
  int bi = -1;
  if (n.input(2)) {
    ASSIGN_OR_RETURN(std::vector<float> bias, expand_trailing(n.input(2)->constant, trailing));
    ASSIGN_OR_RETURN(bi, b.table(bias, n.name + ".bias"));
  }
  const int yi = b.out(n.output());
  b.add_rows(Shader::kLayerNorm, {u32(rows), u32(cols), fbits(a.epsilon), bi >= 0 ? 1u : 0u}, {xi, si, bi, yi},
             static_cast<uint64_t>(rows), n);
  return Status::ok();
}

using BuildFn = Status (*)(PlanBuilder&, const graph::Node&);

const common::OpTable<BuildFn>& op_table() {
  static const common::OpTable<BuildFn> table(
      "Vulkan",
      {
          {{OpKind::kConv}, build_conv, conv_ok},
          {{OpKind::kConvTranspose}, build_conv_transpose, conv_ok},
          {{OpKind::kBatchNorm}, build_batchnorm, batchnorm_ok},
          {{OpKind::kAdd, OpKind::kSub, OpKind::kMul, OpKind::kDiv, OpKind::kPow}, build_binary, floats},
          {{OpKind::kSqrt, OpKind::kRelu, OpKind::kSigmoid, OpKind::kHardSigmoid, OpKind::kHardSwish, OpKind::kClip},
           build_unary,
           floats},
          {{OpKind::kGlobalAveragePool, OpKind::kAveragePool, OpKind::kMaxPool}, build_pool, pool_ok},
          {{OpKind::kResize}, build_resize, resize_ok},
          {{OpKind::kConcat}, build_concat, layout_ok},
          {{OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}, build_view, layout_ok},
          {{OpKind::kTranspose}, build_transpose, layout_ok},
          {{OpKind::kSlice}, build_slice, layout_ok},
          {{OpKind::kCast}, build_cast, cast_ok},
          {{OpKind::kShape}, build_shape, shape_ok},
          {{OpKind::kMatMul}, build_matmul, matmul_ok},
          {{OpKind::kSoftmax}, build_softmax, floats},
          {{OpKind::kReduceMean}, build_reduce_mean, floats},
          {{OpKind::kLayerNorm}, build_layernorm, layernorm_ok},
      },
      common_ok);
  return table;
}

}  // namespace

bool op_supported(const graph::Node& n, bool f16_storage, std::string* why) {
  if (f16_storage && n.op == OpKind::kCast && n.input(0) && n.output() && n.input(0)->dtype != n.output()->dtype &&
      (n.input(0)->dtype == DType::kF32 || n.output()->dtype == DType::kF32)) {
    if (why) *why = "no fp16-storage kernel (a cast to or from f32, whose values are fp16 on the device)";
    return false;
  }
  return op_table().supports(n, why);
}

Status build_node(PlanBuilder& b, const graph::Node& n) {
  const auto* e = op_table().find(n.op);
  if (!e) return unsupported("no Vulkan kernel");
  return e->build(b, n);
}

}  // namespace steadyocr::vk

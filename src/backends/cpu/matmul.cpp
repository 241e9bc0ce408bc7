// MatMul on oneDNN (NumPy semantics: batch broadcast, 1-D promotion). A constant right-hand side of rank 2
// is packed once into oneDNN's chosen layout and the left side's batch folded into rows; its IR epilogue (bias
// add, activations, swish, a residual add) runs as post-ops.
#include <fmt/format.h>

#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/fusion.h"
#include "backends/cpu/ops.h"
#include "backends/cpu/weight_cache.h"

namespace steadyocr::cpu {
namespace {

Md dense(const Dims& d) {
  return plain_md(Shape(d.begin(), d.end()));
}

}  // namespace

Status build_matmul(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* x = n.input(0);
  const graph::Value* w = n.input(1);
  const graph::Value* y = n.output();
  if (!x || !w || !y) return invalid_argument("MatMul needs two inputs");
  if (x->dtype != DType::kF32 || w->dtype != DType::kF32) return unsupported("MatMul runs in f32 only");
  Shape as = x->shape, bs = w->shape;
  if (as.empty() || bs.empty()) return invalid_argument("MatMul inputs must have rank >= 1");
  if (as.size() == 1) as.insert(as.begin(), 1);
  if (bs.size() == 1) bs.push_back(1);
  const int64_t m = as[as.size() - 2], k = as.back(), nn = bs.back();
  if (bs[bs.size() - 2] != k) {
    return invalid_argument(
        fmt::format("MatMul shapes {} x {} do not agree", shape_str(x->shape), shape_str(w->shape)));
  }
  const bool packed = w->is_constant() && bs.size() == 2;
  Dims a_d, b_d, c_d;
  if (packed) {
    // Rows of every batch at once: [P, K] x [K, N].
    int64_t p = shape_numel(as) / k;
    a_d = {p, k};
    b_d = {k, nn};
    c_d = {p, nn};
  } else {
    size_t r = std::max(as.size(), bs.size());
    as.insert(as.begin(), r - as.size(), 1);
    bs.insert(bs.begin(), r - bs.size(), 1);
    a_d = Dims(as.begin(), as.end());
    b_d = Dims(bs.begin(), bs.end());
    c_d = a_d;
    c_d.back() = nn;
    for (size_t i = 0; i + 2 < r; ++i) {
      if (as[i] != bs[i] && as[i] != 1 && bs[i] != 1) {
        return invalid_argument(
            fmt::format("MatMul batch dims of {} and {} do not broadcast", shape_str(x->shape), shape_str(w->shape)));
      }
      c_d[i] = std::max(as[i], bs[i]);
    }
    c_d[r - 2] = m;
  }
  if (shape_numel(y->shape) != shape_numel(Shape(c_d.begin(), c_d.end()))) {
    return invalid_argument(fmt::format("MatMul output {} does not match its inputs", shape_str(y->shape)));
  }
  const int rank = static_cast<int>(c_d.size());

  Epilogue base;
  base.out = y;
  Epilogue full = base;
  RETURN_IF_ERROR(add_epilogue(full, n));

  dnnl::matmul::primitive_desc pd;
  DnnlArgs args;
  const Epilogue* used = nullptr;
  Status last;
  for (const Epilogue* e : {&full, &base}) {
    DnnlArgs try_args;
    auto po = make_post_ops(b, *e, rank, rank - 1, try_args);
    if (!po.is_ok()) {
      last = po.status();
      continue;
    }
    last = dnnl_try("matmul " + shape_str(x->shape) + " x " + shape_str(w->shape), [&] {
      auto attr = base_attr();
      attr.set_post_ops(po.value());
      dnnl::matmul::desc d(dense(a_d), packed ? Md(b_d, Dt::f32, Tag::any) : dense(b_d), dense(c_d));
      pd = dnnl::matmul::primitive_desc(d, attr, cpu_engine());
    });
    if (last.is_ok()) {
      used = e;
      args = std::move(try_args);
      break;
    }
  }
  if (!used) return last;
  if (used == &base && !n.epilogue.empty()) return b.expand_epilogue(n);

  ASSIGN_OR_RETURN(int src, b.plain(x));
  std::vector<int> reads{src};
  if (packed) {
    ASSIGN_OR_RETURN(dnnl::memory wm, b.weights().get(w->constant, dense(b_d), pd.weights_desc()));
    args.add_memory(DNNL_ARG_WEIGHTS, wm);
  } else {
    ASSIGN_OR_RETURN(int wb, b.plain(w));
    args.add(DNNL_ARG_WEIGHTS, wb, dense(b_d));
    reads.push_back(wb);
  }
  // The residual and the output are y-shaped plain buffers; oneDNN sees them as c_d (same bytes).
  const std::vector<int> inputs = reads;
  ASSIGN_OR_RETURN(int dst, fused_output(b, *used, n, plain_md(y->shape), inputs, &reads));
  args.add(DNNL_ARG_SRC, src, dense(a_d));
  args.add(DNNL_ARG_DST, dst, dense(c_d));
  std::string label = fmt::format("matmul {} x {}{} {}", shape_str(x->shape), shape_str(w->shape),
                                  packed ? " packed" : "", used->describe());
  b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), reads, {dst}, &n);
  b.set_home(used->out, dst);
  return Status::ok();
}

}  // namespace steadyocr::cpu

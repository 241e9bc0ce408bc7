// MatMul with NumPy semantics: 1-D operands are promoted (and the added axis dropped), leading batch
// axes broadcast. f32 with double accumulation.
#include <algorithm>

#include "backends/reference/kernels.h"
#include "core/parallel.h"

namespace steadyocr::reference {

Status matmul_kernel(const graph::Node& node, const Inputs& in, Outputs& out) {
  RETURN_IF_ERROR(require_input(node, in, 0, DType::kF32));
  RETURN_IF_ERROR(require_input(node, in, 1, DType::kF32));
  RETURN_IF_ERROR(require_output(node, out, DType::kF32));
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  Tensor& y = out[0];
  if (a.rank() == 0 || b.rank() == 0) {
    return invalid_argument(fmt::format("{}: MatMul needs operands of rank >= 1, got {} and {}", node.describe(),
                                        a.describe(), b.describe()));
  }
  Shape sa = a.shape(), sb = b.shape();
  const bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  const int64_t m = sa[sa.size() - 2], k = sa.back(), n = sb.back();
  if (sb[sb.size() - 2] != k) {
    return invalid_argument(
        fmt::format("{}: inner dimensions differ: {} x {}", node.describe(), a.describe(), b.describe()));
  }
  // Batch shape: broadcast of the leading axes.
  const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
  Shape batch(std::max(ba.size(), bb.size()), 1);
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t da = i + ba.size() >= batch.size() ? ba[i + ba.size() - batch.size()] : 1;
    const int64_t db = i + bb.size() >= batch.size() ? bb[i + bb.size() - batch.size()] : 1;
    if (da != db && da != 1 && db != 1) {
      return invalid_argument(
          fmt::format("{}: batch axes of {} and {} do not broadcast", node.describe(), a.describe(), b.describe()));
    }
    batch[i] = std::max(da, db);
  }
  Shape expect = batch;
  if (!a_vec) expect.push_back(m);
  if (!b_vec) expect.push_back(n);
  if (expect != y.shape()) {
    return invalid_argument(fmt::format("{}: {} x {} gives {} but the output value is {}", node.describe(),
                                        a.describe(), b.describe(), shape_str(expect), y.describe()));
  }
  std::vector<int64_t> stride_a, stride_b;
  broadcast_strides(ba, batch, &stride_a);
  broadcast_strides(bb, batch, &stride_b);
  const int64_t batches = shape_numel(batch);
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  float* py = y.data<float>();
  // One task per output row across all batches; each row accumulates A[i,:] x B in double.
  parallel_for(
      batches * m,
      [&](int64_t begin, int64_t end) {
        std::vector<double> acc(static_cast<size_t>(n));
        for (int64_t r = begin; r < end; ++r) {
          const int64_t bi = r / m, i = r % m;
          int64_t oa = 0, ob = 0, rem = bi;
          for (int d = static_cast<int>(batch.size()) - 1; d >= 0; --d) {
            const int64_t idx = rem % batch[d];
            rem /= batch[d];
            oa += idx * stride_a[d];
            ob += idx * stride_b[d];
          }
          const float* ar = pa + oa * m * k + i * k;
          const float* bm = pb + ob * k * n;
          std::fill(acc.begin(), acc.end(), 0.0);
          for (int64_t kk = 0; kk < k; ++kk) {
            const double av = ar[kk];
            const float* br = bm + kk * n;
            double* ac = acc.data();
#pragma omp simd
            for (int64_t j = 0; j < n; ++j) ac[j] += av * br[j];
          }
          float* yr = py + r * n;
          for (int64_t j = 0; j < n; ++j) yr[j] = static_cast<float>(acc[j]);
        }
      },
      parallel_grain(k * n));
  return Status::ok();
}

}  // namespace steadyocr::reference

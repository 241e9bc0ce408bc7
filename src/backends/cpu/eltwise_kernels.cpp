// Vectorised loops need -O3-style vectorisation and sqrt without errno; this file only holds such loops.
#pragma GCC optimize("O3", "no-math-errno")

#include "backends/cpu/eltwise_kernels.h"

#include <fmt/format.h>

#include <cmath>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

constexpr int64_t kTile = 4096;  // floats per tile: the tile and its operands stay in L1/L2

struct TileArgs {
  const EwStep* steps;
  size_t n_steps;
  const float* const* src;  // per operand, already offset to the tile
  const int64_t* srow;
  const int64_t* scol;
  float* out;
  int64_t rn, ln;
};

template <class F>
inline void bin_tile(float* __restrict o, const float* __restrict s, int64_t rn, int64_t ln, int64_t sr, int64_t sc,
                     F f) {
  if (sc == 1 && (rn == 1 || sr == ln)) {
    const int64_t n = rn * ln;
    for (int64_t i = 0; i < n; ++i) o[i] = f(o[i], s[i]);
  } else if (sc == 0 && (rn == 1 || sr == 0)) {
    const float v = s[0];
    const int64_t n = rn * ln;
    for (int64_t i = 0; i < n; ++i) o[i] = f(o[i], v);
  } else if (sc == 1 && sr == 0) {
    for (int64_t r = 0; r < rn; ++r) {
      float* __restrict orow = o + r * ln;
      for (int64_t i = 0; i < ln; ++i) orow[i] = f(orow[i], s[i]);
    }
  } else if (sc == 0) {
    for (int64_t r = 0; r < rn; ++r) {
      const float v = s[r * sr];
      float* __restrict orow = o + r * ln;
      for (int64_t i = 0; i < ln; ++i) orow[i] = f(orow[i], v);
    }
  } else {
    for (int64_t r = 0; r < rn; ++r) {
      for (int64_t i = 0; i < ln; ++i) o[r * ln + i] = f(o[r * ln + i], s[r * sr + i * sc]);
    }
  }
}

inline void load_tile(float* o, const float* s, int64_t rn, int64_t ln, int64_t sr, int64_t sc) {
  if (sc == 1 && (rn == 1 || sr == ln)) {
    if (o == s) return;  // in place
    const int64_t n = rn * ln;
    for (int64_t i = 0; i < n; ++i) o[i] = s[i];
  } else {
    bin_tile(o, s, rn, ln, sr, sc, [](float, float b) { return b; });
  }
}

template <class F>
inline void un_tile(float* __restrict o, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i) o[i] = f(o[i]);
}

SO_CPU_CLONES void tile_kernel(const TileArgs& t) {
  const int64_t rn = t.rn, ln = t.ln, n = rn * ln;
  float* o = t.out;
  load_tile(o, t.src[0], rn, ln, t.srow[0], t.scol[0]);
  for (size_t k = 0; k < t.n_steps; ++k) {
    const EwStep& st = t.steps[k];
    const float a = st.alpha, b = st.beta;
    if (ew_is_binary(st.op)) {
      const float* s = t.src[st.operand];
      const int64_t sr = t.srow[st.operand], sc = t.scol[st.operand];
      switch (st.op) {
        case EwOp::kAdd:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return x + y; });
          break;
        case EwOp::kSub:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return x - y; });
          break;
        case EwOp::kRSub:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return y - x; });
          break;
        case EwOp::kMul:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return x * y; });
          break;
        case EwOp::kDiv:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return x / y; });
          break;
        case EwOp::kRDiv:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return y / x; });
          break;
        case EwOp::kPow:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return std::pow(x, y); });
          break;
        case EwOp::kRPow:
          bin_tile(o, s, rn, ln, sr, sc, [](float x, float y) { return std::pow(y, x); });
          break;
        default:
          break;
      }
      continue;
    }
    switch (st.op) {
      case EwOp::kRelu:
        un_tile(o, n, [](float x) { return x > 0.f ? x : 0.f; });
        break;
      case EwOp::kSigmoid:
        un_tile(o, n, [](float x) { return vsigmoid(x); });
        break;
      case EwOp::kHardSigmoid:
        un_tile(o, n, [a, b](float x) { return vmin(vmax(a * x + b, 0.f), 1.f); });
        break;
      case EwOp::kHardSwish:
        un_tile(o, n, [](float x) { return x * vmin(vmax(x / 6.f + 0.5f, 0.f), 1.f); });
        break;
      case EwOp::kClip:
        un_tile(o, n, [a, b](float x) { return vmin(vmax(x, a), b); });
        break;
      case EwOp::kSqrt:
        un_tile(o, n, [](float x) { return std::sqrt(x); });
        break;
      case EwOp::kLinear:
        un_tile(o, n, [a, b](float x) { return a * x + b; });
        break;
      case EwOp::kSwish:
        un_tile(o, n, [a](float x) { return x * vsigmoid(a * x); });
        break;
      case EwOp::kSquare:
        un_tile(o, n, [](float x) { return x * x; });
        break;
      default:
        break;
    }
  }
}

}  // namespace

bool ew_is_binary(EwOp op) {
  return op <= EwOp::kRPow;
}

const char* ew_name(EwOp op) {
  static const char* kNames[] = {"add",  "sub",  "rsub",   "mul",     "div",         "rdiv",
                                 "pow",  "rpow", "relu",   "sigmoid", "hardsigmoid", "hardswish",
                                 "clip", "sqrt", "linear", "swish",   "square"};
  return kNames[static_cast<int>(op)];
}

EwProgram EwProgram::compile(const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides,
                             std::vector<EwStep> steps) {
  EwProgram p;
  p.steps_ = std::move(steps);
  const size_t n_ops = strides.size();
  // Dense output strides, then drop size-1 dims and merge dims that are contiguous for every operand.
  std::vector<int64_t> out_strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) out_strides[i] = out_strides[i + 1] * dims[i + 1];
  std::vector<int64_t> d;
  std::vector<std::vector<int64_t>> s(n_ops + 1);
  p.numel_ = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    p.numel_ *= dims[i];
    if (dims[i] == 1) continue;
    d.push_back(dims[i]);
    for (size_t k = 0; k < n_ops; ++k) s[k].push_back(strides[k][i]);
    s[n_ops].push_back(out_strides[i]);
  }
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) {
    bool merge = true;
    for (size_t k = 0; k <= n_ops && merge; ++k) merge = s[k][i] == s[k][i + 1] * d[i + 1];
    if (!merge) continue;
    d[i] *= d[i + 1];
    for (size_t k = 0; k <= n_ops; ++k) {
      s[k][i] = s[k][i + 1];
      s[k].erase(s[k].begin() + i + 1);
    }
    d.erase(d.begin() + i + 1);
  }
  const size_t r = d.size();
  p.cols_ = r >= 1 ? d[r - 1] : 1;
  p.rows_ = r >= 2 ? d[r - 2] : 1;
  p.srow_.assign(n_ops, 0);
  p.scol_.assign(n_ops, 0);
  for (size_t k = 0; k < n_ops; ++k) {
    if (r >= 1) p.scol_[k] = s[k][r - 1];
    if (r >= 2) p.srow_[k] = s[k][r - 2];
  }
  size_t n_outer = r >= 2 ? r - 2 : 0;
  p.outer_dims_.assign(d.begin(), d.begin() + n_outer);
  p.outer_strides_.resize(n_ops + 1);
  for (size_t k = 0; k <= n_ops; ++k) p.outer_strides_[k].assign(s[k].begin(), s[k].begin() + n_outer);
  if (p.cols_ >= kTile) {
    p.col_chunk_ = kTile;
    p.row_chunk_ = 1;
  } else {
    p.col_chunk_ = p.cols_;
    p.row_chunk_ = std::max<int64_t>(1, std::min(p.rows_, kTile / p.cols_));
  }
  return p;
}

void EwProgram::run_tile(const std::vector<const float*>& operands, float* out, int64_t outer, int64_t r0, int64_t rn,
                         int64_t l0, int64_t ln) const {
  const size_t n_ops = operands.size();
  const float* src[16];
  int64_t out_off = 0;
  int64_t off[16] = {0};
  for (int j = static_cast<int>(outer_dims_.size()) - 1; j >= 0; --j) {
    int64_t idx = outer % outer_dims_[j];
    outer /= outer_dims_[j];
    for (size_t k = 0; k < n_ops; ++k) off[k] += idx * outer_strides_[k][j];
    out_off += idx * outer_strides_[n_ops][j];
  }
  for (size_t k = 0; k < n_ops; ++k) src[k] = operands[k] + off[k] + r0 * srow_[k] + l0 * scol_[k];
  TileArgs t{steps_.data(), steps_.size(), src, srow_.data(), scol_.data(), out + out_off + r0 * cols_ + l0, rn, ln};
  tile_kernel(t);
}

void EwProgram::run(const std::vector<const float*>& operands, float* out) const {
  if (numel_ == 0) return;
  int64_t n_outer = 1;
  for (int64_t d : outer_dims_) n_outer *= d;
  const int64_t nrc = (rows_ + row_chunk_ - 1) / row_chunk_;
  const int64_t ncc = (cols_ + col_chunk_ - 1) / col_chunk_;
  const int64_t items = n_outer * nrc * ncc;
  parallel_chunks(
      items,
      [&](int64_t begin, int64_t end) {
        for (int64_t it = begin; it < end; ++it) {
          int64_t cc = it % ncc, rest = it / ncc;
          int64_t rc = rest % nrc, o = rest / nrc;
          int64_t r0 = rc * row_chunk_, l0 = cc * col_chunk_;
          run_tile(operands, out, o, r0, std::min(row_chunk_, rows_ - r0), l0, std::min(col_chunk_, cols_ - l0));
        }
      },
      /*grain=*/std::max<int64_t>(1, (int64_t{32} << 10) / (row_chunk_ * col_chunk_)));  // fork only above ~32K floats
}

std::string EwProgram::describe() const {
  std::string s = "load";
  for (const auto& st : steps_) s += std::string("+") + ew_name(st.op);
  return s;
}

}  // namespace steadyocr::cpu

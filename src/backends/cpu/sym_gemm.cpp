// Vectorised loops need -O3-style vectorisation and sqrt without errno; this file holds such loops.
#pragma GCC optimize("O3", "no-math-errno")

#include "backends/cpu/sym_gemm.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "backends/cpu/dnnl_util.h"
#include "backends/cpu/vec_math.h"

namespace steadyocr::cpu {
namespace {

using Op = RowEpilogue::Op;

SO_CPU_CLONES void apply_rows(const RowEpilogue::Stage* stages, size_t n_stages, const std::vector<float>* channels,
                              float* c, int64_t rows, int64_t cols, int64_t ld, const float* residual, int64_t ld_res,
                              int64_t col0) {
  for (int64_t r = 0; r < rows; ++r) {
    float* __restrict y = c + r * ld;
    for (size_t s = 0; s < n_stages; ++s) {
      const RowEpilogue::Stage& st = stages[s];
      const float a = st.alpha, b = st.beta;
      const float* __restrict ch = st.channel >= 0 ? channels[st.channel].data() + col0 : nullptr;
      switch (st.op) {
        case Op::kChannelAdd:
          for (int64_t j = 0; j < cols; ++j) y[j] += ch[j];
          break;
        case Op::kChannelSub:
          for (int64_t j = 0; j < cols; ++j) y[j] -= ch[j];
          break;
        case Op::kChannelMul:
          for (int64_t j = 0; j < cols; ++j) y[j] *= ch[j];
          break;
        case Op::kChannelDiv:
          for (int64_t j = 0; j < cols; ++j) y[j] /= ch[j];
          break;
        case Op::kResidual: {
          const float* __restrict res = residual + r * ld_res;
          for (int64_t j = 0; j < cols; ++j) y[j] += res[j];
          break;
        }
        case Op::kRelu:
          for (int64_t j = 0; j < cols; ++j) y[j] = vmax(y[j], 0.f);
          break;
        case Op::kSigmoid:
          for (int64_t j = 0; j < cols; ++j) y[j] = vsigmoid(y[j]);
          break;
        case Op::kHardSwish:
          for (int64_t j = 0; j < cols; ++j) y[j] = y[j] * vmin(vmax(y[j] * (1.f / 6.f) + 0.5f, 0.f), 1.f);
          break;
        case Op::kClip:
          for (int64_t j = 0; j < cols; ++j) y[j] = vmin(vmax(y[j], a), b);
          break;
        case Op::kLinear:
          for (int64_t j = 0; j < cols; ++j) y[j] = a * y[j] + b;
          break;
        case Op::kSqrt:
          for (int64_t j = 0; j < cols; ++j) y[j] = std::sqrt(y[j]);
          break;
        case Op::kSwish:
          for (int64_t j = 0; j < cols; ++j) y[j] = y[j] * vsigmoid(a * y[j]);
          break;
        case Op::kSquare:
          for (int64_t j = 0; j < cols; ++j) y[j] = y[j] * y[j];
          break;
      }
    }
  }
}

// Rows per chunk: A's and C's rows of a chunk within ~512 KiB (half an L2), a multiple of 16, at least 32 (sgemm packs
// B for every call: fewer rows would spend the call on packing), and the rows split across the team.
int64_t chunk_rows(int64_t m, int64_t k, int64_t n, int threads) {
  int64_t rows = (131072 / std::max<int64_t>(k + n, 1)) / 16 * 16;
  rows = std::clamp<int64_t>(rows, 32, 2048);
  const int64_t per_thread = (m + threads - 1) / std::max(threads, 1);
  return std::max<int64_t>(16, std::min(rows, (per_thread + 15) / 16 * 16));
}

}  // namespace

Result<RowEpilogue> RowEpilogue::make(const std::vector<float>* bias, int64_t cols, const Epilogue& e) {
  RowEpilogue r;
  auto channel = [&](std::vector<float> v) {
    r.channels_.push_back(std::move(v));
    return static_cast<int>(r.channels_.size()) - 1;
  };
  if (bias) {
    if (static_cast<int64_t>(bias->size()) != cols) return invalid_argument("bias length differs from the channels");
    r.stages_.push_back({Op::kChannelAdd, 0.f, 0.f, channel(*bias)});
  }
  for (const PostOp& p : e.ops) {
    Stage st;
    st.alpha = p.alpha;
    st.beta = p.beta;
    switch (p.kind) {
      case PostOp::kSum:
        st.op = Op::kResidual;
        break;
      case PostOp::kBinary: {
        if (cols < 0 || p.channel.numel() != cols) {
          return unsupported(fmt::format("a per-channel operand of {} values on {} channels", p.channel.numel(), cols));
        }
        switch (p.alg) {
          case dnnl::algorithm::binary_add:
            st.op = Op::kChannelAdd;
            break;
          case dnnl::algorithm::binary_sub:
            st.op = Op::kChannelSub;
            break;
          case dnnl::algorithm::binary_mul:
            st.op = Op::kChannelMul;
            break;
          case dnnl::algorithm::binary_div:
            st.op = Op::kChannelDiv;
            break;
          default:
            return unsupported("a per-channel post-op other than add/sub/mul/div");
        }
        st.channel = channel(p.channel.to_floats());
        break;
      }
      case PostOp::kEltwise:
        switch (p.alg) {
          case dnnl::algorithm::eltwise_relu:
            if (p.alpha != 0.f) return unsupported("leaky relu");
            st.op = Op::kRelu;
            break;
          case dnnl::algorithm::eltwise_logistic:
            st.op = Op::kSigmoid;
            break;
          case dnnl::algorithm::eltwise_hardswish:
            st.op = Op::kHardSwish;
            break;
          case dnnl::algorithm::eltwise_clip:
            st.op = Op::kClip;
            break;
          case dnnl::algorithm::eltwise_linear:
            st.op = Op::kLinear;
            break;
          case dnnl::algorithm::eltwise_sqrt:
            st.op = Op::kSqrt;
            break;
          case dnnl::algorithm::eltwise_swish:
            st.op = Op::kSwish;
            break;
          case dnnl::algorithm::eltwise_square:
            st.op = Op::kSquare;
            break;
          default:
            return unsupported(fmt::format("the post-op {}", p.label));
        }
        break;
    }
    r.stages_.push_back(st);
  }
  return r;
}

void RowEpilogue::apply(float* c, int64_t rows, int64_t cols, int64_t ld, const float* residual, int64_t ld_res,
                        int64_t col0) const {
  if (stages_.empty() || rows <= 0) return;
  apply_rows(stages_.data(), stages_.size(), channels_.data(), c, rows, cols, ld, residual, ld_res, col0);
}

bool RowEpilogue::has_residual() const {
  return std::any_of(stages_.begin(), stages_.end(), [](const Stage& s) { return s.op == Op::kResidual; });
}

std::string RowEpilogue::describe() const {
  static const char* kNames[] = {"add[c]",    "sub[c]", "mul[c]", "div[c]", "residual", "relu",  "sigmoid",
                                 "hardswish", "clip",   "linear", "sqrt",   "swish",    "square"};
  std::string s;
  for (const Stage& st : stages_) s += std::string("+") + kNames[static_cast<int>(st.op)];
  return s;
}

Status sgemm_serial(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb,
                    bool b_transposed, float* c, int64_t ldc) {
  const dnnl_status_t s = dnnl_sgemm('N', b_transposed ? 'T' : 'N', m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);
  if (s != dnnl_success) {
    return internal_error(
        fmt::format("oneDNN sgemm [{}x{}] x [{}x{}] failed (status {})", m, k, k, n, static_cast<int>(s)));
  }
  return Status::ok();
}

Status gemm_rows(const GemmArgs& g) {
  if (g.m <= 0 || g.n <= 0) return Status::ok();
  const int64_t ldb = g.b_transposed ? g.k : g.n;
  const int team = omp_in_parallel() ? 1 : omp_get_max_threads();
  const int64_t mc = chunk_rows(g.m, g.k, g.n, team);
  const int64_t chunks = (g.m + mc - 1) / mc;
  const int threads = static_cast<int>(std::min<int64_t>(team, chunks));
  // A product too small to share: one call on this thread (a team costs more than it saves).
  if (g.m * g.n * g.k < (int64_t{1} << 18) && !g.produce) {
    RETURN_IF_ERROR(sgemm_serial(g.m, g.n, g.k, g.a, g.lda, g.b, ldb, g.b_transposed, g.c, g.ldc));
    if (g.epilogue) g.epilogue->apply(g.c, g.m, g.n, g.ldc, g.residual, g.ldr);
    return Status::ok();
  }
  if (chunks < threads && !g.produce) {
    // Few rows: one product across the team (oneDNN parallelises it), then the epilogue.
    const dnnl_status_t s =
        dnnl_sgemm('N', g.b_transposed ? 'T' : 'N', g.m, g.n, g.k, 1.f, g.a, g.lda, g.b, ldb, 0.f, g.c, g.ldc);
    if (s != dnnl_success) return internal_error(fmt::format("oneDNN sgemm failed (status {})", static_cast<int>(s)));
    if (g.epilogue && !g.epilogue->empty()) {
#pragma omp parallel for num_threads(threads) schedule(static) if (threads > 1)
      for (int64_t r = 0; r < g.m; r += 64) {
        const int64_t rows = std::min<int64_t>(64, g.m - r);
        g.epilogue->apply(g.c + r * g.ldc, rows, g.n, g.ldc, g.residual ? g.residual + r * g.ldr : nullptr, g.ldr);
      }
    }
    return Status::ok();
  }
  Status first_error;
  bool failed = false;
#pragma omp parallel num_threads(threads) if (threads > 1)
  {
    std::vector<float> gathered(g.produce ? static_cast<size_t>(mc * g.k) : 0);
#pragma omp for schedule(dynamic)
    for (int64_t ch = 0; ch < chunks; ++ch) {
      const int64_t r0 = ch * mc, rows = std::min(mc, g.m - r0);
      const float* a = g.a ? g.a + r0 * g.lda : nullptr;
      int64_t lda = g.lda;
      if (g.produce) {
        g.produce(r0, rows, gathered.data());
        a = gathered.data();
        lda = g.k;
      }
      float* c = g.c + r0 * g.ldc;
      const dnnl_status_t s =
          dnnl_sgemm('N', g.b_transposed ? 'T' : 'N', rows, g.n, g.k, 1.f, a, lda, g.b, ldb, 0.f, c, g.ldc);
      if (s != dnnl_success) {
#pragma omp critical
        {
          if (!failed)
            first_error = internal_error(fmt::format("oneDNN sgemm failed (status {})", static_cast<int>(s)));
          failed = true;
        }
        continue;
      }
      if (g.epilogue) g.epilogue->apply(c, rows, g.n, g.ldc, g.residual ? g.residual + r0 * g.ldr : nullptr, g.ldr);
    }
  }
  return failed ? first_error : Status::ok();
}

}  // namespace steadyocr::cpu

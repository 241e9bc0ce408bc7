// Vectorised loops need -O3-style vectorisation and sqrt without errno; this file holds such loops.
#pragma GCC optimize("O3", "no-math-errno")

#include "backends/cpu/sym_gemm.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <mutex>

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
        const bool one = p.channel.numel() == 1;  // one value for every channel (fusion.cpp push_linear)
        if (cols < 0 || (!one && p.channel.numel() != cols)) {
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
        st.channel = channel(one ? std::vector<float>(static_cast<size_t>(cols), p.channel.to_floats()[0])
                                 : p.channel.to_floats());
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
  // Dense rows through stages that ignore the channel: one long row.
  if (ld == cols && (!residual || ld_res == cols) &&
      std::all_of(stages_.begin(), stages_.end(), [](const Stage& s) { return s.channel < 0; })) {
    cols *= rows;
    rows = 1;
  }
  apply_rows(stages_.data(), stages_.size(), channels_.data(), c, rows, cols, ld, residual, ld_res, col0);
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

// ---- ChunkGemm -------------------------------------------------------------------------------------------------

struct ChunkGemm::Prim {
  std::once_flag once;
  Status status;
  dnnl::matmul matmul;
  dnnl::memory weights, bias;
  std::vector<std::pair<int, dnnl::memory>> binaries;  // per-channel post-op operands
  Md a_md, c_md, scratch_md;
};

namespace {

// Rows per chunk: A's and C's rows within ~512 KiB (L2 is 1-2 MiB a core; 1 and 2 MiB measured slower on the
// 2-core machine), a power of two from 32 to 1024.
int64_t chunk_rows_for(int64_t k, int64_t n) {
  int64_t rows = 32;
  while (rows < 1024 && 2 * rows * (k + n) * static_cast<int64_t>(sizeof(float)) <= (int64_t{512} << 10)) rows *= 2;
  // Weights beyond half an L2 are read again for every chunk: at least 256 rows share each reading.
  if (k * n * static_cast<int64_t>(sizeof(float)) > (int64_t{512} << 10)) rows = std::max<int64_t>(rows, 256);
  return rows;
}

}  // namespace

ChunkGemm::ChunkGemm(int64_t k, int64_t n, Tensor weights, std::vector<float> bias, Epilogue e)
    : k_(k),
      n_(n),
      mc_(chunk_rows_for(k, n)),
      w_(std::move(weights)),
      bias_(std::move(bias)),
      e_(std::move(e)),
      prim_(std::make_unique<Prim>()) {
  for (const PostOp& p : e_.ops) has_sum_ = has_sum_ || p.kind == PostOp::kSum;
}

ChunkGemm::~ChunkGemm() = default;
ChunkGemm::ChunkGemm(ChunkGemm&&) noexcept = default;

Status ChunkGemm::init() const {
  Prim& p = *prim_;
  std::call_once(p.once, [&] {
    p.status = dnnl_try("making the matmul " + describe(), [&] {
      dnnl::engine& eng = cpu_engine();
      p.a_md = Md({mc_, k_}, Dt::f32, Tag::ab);
      p.c_md = Md({mc_, n_}, Dt::f32, Tag::ab);
      const Md w_any({k_, n_}, Dt::f32, Tag::any);
      const Md bias_md = bias_.empty() ? Md() : Md({1, n_}, Dt::f32, Tag::ab);
      dnnl::post_ops po;
      int idx = 0;
      for (const PostOp& op : e_.ops) {
        switch (op.kind) {
          case PostOp::kEltwise:
            po.append_eltwise(1.f, op.alg, op.alpha, op.beta);
            break;
          case PostOp::kSum:
            po.append_sum(1.f);
            break;
          case PostOp::kBinary: {
            const Md md({1, op.channel.numel() == 1 ? 1 : n_}, Dt::f32, Tag::ab);
            po.append_binary(op.alg, md);
            p.binaries.push_back({DNNL_ARG_ATTR_MULTIPLE_POST_OP(idx) | DNNL_ARG_SRC_1,
                                  dnnl::memory(md, eng, const_cast<void*>(op.channel.raw()))});
            break;
          }
        }
        ++idx;
      }
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // per thread: chunks run concurrently
      const dnnl::matmul::desc d(p.a_md, w_any, bias_md, p.c_md);
      const dnnl::matmul::primitive_desc pd(d, attr, eng);
      p.matmul = dnnl::matmul(pd);
      p.scratch_md = pd.scratchpad_desc();
      p.weights = dnnl::memory(pd.weights_desc(), eng);
      dnnl::memory plain(Md({k_, n_}, Dt::f32, Tag::ab), eng, const_cast<void*>(w_.raw()));
      dnnl::stream s(eng);
      dnnl::reorder(plain, p.weights).execute(s, plain, p.weights);
      s.wait();
      if (!bias_.empty()) p.bias = dnnl::memory(bias_md, eng, const_cast<float*>(bias_.data()));
    });
  });
  return p.status;
}

Status ChunkGemm::run(const GemmArgs& g) const {
  if (g.m <= 0) return Status::ok();
  RETURN_IF_ERROR(init());
  const Prim& p = *prim_;
  const int64_t chunks = (g.m + mc_ - 1) / mc_;
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(std::min<int64_t>(omp_get_max_threads(), chunks));
  Status first_error;
  bool failed = false;
  std::atomic<int64_t> next{0};
  // One thread's share: its stream, scratchpad and memories (chunks only move their data handles), then chunks
  // taken in turn. Kept by the thread across runs: buffers grown once, never cleared (a zeroed scratchpad per run cost
  // more than the product of a small layer).
  auto work = [&] {
    thread_local std::vector<uint8_t> scratch;
    thread_local std::vector<float> a_pad, c_pad;  // a shorter chunk, or rows gathered by g.produce
    try {
      if (scratch.size() < p.scratch_md.get_size()) scratch.resize(p.scratch_md.get_size());
      dnnl::engine& eng = cpu_engine();
      dnnl::stream stream(eng);
      dnnl::memory a(p.a_md, eng, nullptr), c(p.c_md, eng, nullptr), sp(p.scratch_md, eng, scratch.data());
      std::unordered_map<int, dnnl::memory> args = {
          {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, p.weights}, {DNNL_ARG_DST, c}, {DNNL_ARG_SCRATCHPAD, sp}};
      if (!bias_.empty()) args[DNNL_ARG_BIAS] = p.bias;
      for (const auto& [arg, mem] : p.binaries) args[arg] = mem;
      for (int64_t ch = next++; ch < chunks; ch = next++) {
        const int64_t r0 = ch * mc_, rows = std::min(mc_, g.m - r0);
        const bool full = rows == mc_;
        float* dst = g.c ? g.c + r0 * g.ldc : nullptr;
        const bool direct = full && g.c && !g.consume && g.ldc == n_;
        if (!direct) {
          if (c_pad.size() < static_cast<size_t>(mc_ * n_)) c_pad.resize(static_cast<size_t>(mc_ * n_));
          dst = c_pad.data();
        }
        const int64_t ldd = direct ? g.ldc : n_;
        if (has_sum_) {  // oneDNN's sum post-op adds what the destination holds: the residual's rows
          for (int64_t r = 0; r < rows; ++r) {
            std::memcpy(dst + r * ldd, g.residual + (r0 + r) * g.ldr, static_cast<size_t>(n_) * sizeof(float));
          }
        }
        // A's rows: in place when whole and dense, else copied (gathered, or the last chunk padded with zeros).
        const float* src = g.a ? g.a + r0 * g.lda : nullptr;
        if (g.produce || !full || g.lda != k_) {
          if (a_pad.size() < static_cast<size_t>(mc_ * k_)) a_pad.resize(static_cast<size_t>(mc_ * k_));
          if (g.produce) {
            g.produce(r0, rows, a_pad.data());
          } else {
            for (int64_t r = 0; r < rows; ++r) {
              std::memcpy(&a_pad[r * k_], src + r * g.lda, static_cast<size_t>(k_) * sizeof(float));
            }
          }
          if (!full) std::memset(&a_pad[rows * k_], 0, static_cast<size_t>((mc_ - rows) * k_) * sizeof(float));
          src = a_pad.data();
        }
        a.set_data_handle(const_cast<float*>(src));
        c.set_data_handle(dst);
        p.matmul.execute(stream, args);
        if (g.consume) {
          g.consume(r0, rows, dst);
        } else if (!direct) {
          for (int64_t r = 0; r < rows; ++r) {
            std::memcpy(g.c + (r0 + r) * g.ldc, dst + r * n_, static_cast<size_t>(n_) * sizeof(float));
          }
        }
      }
    } catch (const dnnl::error& e) {
#pragma omp critical
      {
        if (!failed) first_error = dnnl_error(e, "running the matmul " + describe());
        failed = true;
      }
      next = chunks;  // the others stop at their next chunk
    }
  };
  // One chunk (or one thread): no parallel region of our own, so oneDNN spreads the chunk over the team itself (inside
  // even an inactive region of ours it would make a nested team per call).
  if (threads <= 1) {
    work();
  } else {
#pragma omp parallel num_threads(threads)
    work();
  }
  return failed ? first_error : Status::ok();
}

std::string ChunkGemm::describe() const {
  return fmt::format("[{}x{}]x[{}x{}]{}{}", mc_, k_, k_, n_, bias_.empty() ? "" : "+bias", e_.describe());
}

}  // namespace steadyocr::cpu

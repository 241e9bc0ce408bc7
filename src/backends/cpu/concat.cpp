// Concat: f32 on oneDNN's concat primitive, reading each input in its producer's layout (no reorders before
// it); other dtypes as plain block copies.
#include <fmt/format.h>

#include <cstring>

#include "backends/cpu/cpu_parallel.h"
#include "backends/cpu/dnnl_op.h"
#include "backends/cpu/ops.h"

namespace steadyocr::cpu {
namespace {

class ConcatCopyOp : public CpuOp {
 public:
  ConcatCopyOp(std::vector<int> ins, std::vector<int64_t> blocks, int out, int64_t outer, size_t elem)
      : ins_(std::move(ins)), blocks_(std::move(blocks)), out_(out), outer_(outer), elem_(elem) {}
  Status run(RunContext& ctx) override {
    int64_t row = 0;
    for (int64_t bl : blocks_) row += bl;
    auto* out = static_cast<uint8_t*>(ctx.ptr(out_));
    int64_t col = 0;
    for (size_t i = 0; i < ins_.size(); ++i) {
      const auto* in = static_cast<const uint8_t*>(ctx.ptr(ins_[i]));
      for (int64_t o = 0; o < outer_; ++o) {
        std::memcpy(out + (o * row + col) * elem_, in + o * blocks_[i] * elem_, blocks_[i] * elem_);
      }
      col += blocks_[i];
    }
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("concat copy x{}", ins_.size()); }

 private:
  std::vector<int> ins_;
  std::vector<int64_t> blocks_;
  int out_;
  int64_t outer_;
  size_t elem_;
};

// Channel concat of rank-4 inputs in channels-last or channel-blocked layouts into a channels-last output:
// per pixel, each input contributes runs of up to one block of contiguous channels. (oneDNN 2.6 falls back
// to its reference concat when blocked inputs do not fill whole blocks, e.g. the det head's 4 x 24 channels.)
class ChannelConcatOp : public CpuOp {
 public:
  struct Input {
    int buf;
    int64_t channels, block;  // block 0: channels-last
  };
  ChannelConcatOp(std::vector<Input> ins, int out, int64_t n, int64_t hw, int64_t total)
      : ins_(std::move(ins)), out_(out), n_(n), hw_(hw), total_(total) {}
  Status run(RunContext& ctx) override {
    std::vector<const float*> src;
    for (const Input& in : ins_) src.push_back(ctx.f32(in.buf));
    float* out = ctx.f32(out_);
    parallel_chunks(
        n_ * hw_,
        [&](int64_t b, int64_t e) {
          for (int64_t p = b; p < e; ++p) {
            const int64_t n = p / hw_, q = p % hw_;
            float* o = out + p * total_;
            for (size_t i = 0; i < ins_.size(); ++i) {
              const Input& in = ins_[i];
              if (in.block == 0) {
                std::memcpy(o, src[i] + p * in.channels, static_cast<size_t>(in.channels) * sizeof(float));
              } else {
                const int64_t cb = (in.channels + in.block - 1) / in.block;
                for (int64_t k = 0; k < cb; ++k) {
                  const int64_t run = std::min(in.block, in.channels - k * in.block);
                  std::memcpy(o + k * in.block, src[i] + ((n * cb + k) * hw_ + q) * in.block,
                              static_cast<size_t>(run) * sizeof(float));
                }
              }
              o += in.channels;
            }
          }
        },
        256);
    return Status::ok();
  }
  std::string describe() const override { return fmt::format("channel concat x{} -> nhwc", ins_.size()); }

 private:
  std::vector<Input> ins_;
  int out_;
  int64_t n_, hw_, total_;
};

}  // namespace

Status build_concat(PlanBuilder& b, const graph::Node& n) {
  const graph::Value* y = n.output();
  if (!y || n.inputs.empty()) return invalid_argument("Concat needs inputs");
  const int64_t rank = static_cast<int64_t>(y->shape.size());
  int64_t axis = n.attr<graph::AxisAttrs>().axis;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) return invalid_argument("Concat axis out of range");
  std::vector<const graph::Value*> ins;
  for (const graph::Value* v : n.inputs) {
    if (!v) continue;
    if (v->dtype != y->dtype || v->shape.size() != y->shape.size()) {
      return invalid_argument("Concat inputs differ in dtype or rank");
    }
    if (shape_numel(v->shape) > 0) ins.push_back(v);
  }
  if (ins.empty() || shape_numel(y->shape) == 0) {
    int out = b.new_buffer(y->dtype, y->shape, y->dtype == DType::kF32 ? plain_md(y->shape) : Md(), y->name);
    b.set_home(y, out);
    return Status::ok();
  }
  if (y->dtype == DType::kF32 && rank == 4 && axis == 1) {
    // Blocked inputs that do not fill whole blocks: our channel concat into channels-last.
    bool ragged = false;
    for (const graph::Value* v : ins) {
      ASSIGN_OR_RETURN(int h, b.home(v));
      const LayoutKind k = layout_kind(b.buffer(h).md);
      ragged = ragged || (k.kind == LayoutKind::kChannelBlocked && v->shape[1] % k.block != 0);
    }
    if (ragged) {
      std::vector<ChannelConcatOp::Input> cins;
      std::vector<int> bufs;
      for (const graph::Value* v : ins) {
        ASSIGN_OR_RETURN(int h, b.home(v));
        Md md = b.buffer(h).md;
        LayoutKind k = layout_kind(md);
        if (k.kind != LayoutKind::kChannelBlocked && k.kind != LayoutKind::kChannelsLast) {
          md = Md(to_dims(v->shape), Dt::f32, Tag::acdb);
          k.kind = LayoutKind::kChannelsLast;
        }
        ASSIGN_OR_RETURN(int buf, b.in_layout(v, md));
        cins.push_back({buf, v->shape[1], k.kind == LayoutKind::kChannelBlocked ? k.block : 0});
        bufs.push_back(buf);
      }
      int out = b.new_buffer(DType::kF32, y->shape, Md(to_dims(y->shape), Dt::f32, Tag::acdb), y->name);
      b.add_step(
          std::make_unique<ChannelConcatOp>(std::move(cins), out, y->shape[0], y->shape[2] * y->shape[3], y->shape[1]),
          bufs, {out}, &n);
      b.set_home(y, out);
      return Status::ok();
    }
  }
  if (y->dtype == DType::kF32) {
    std::vector<Md> mds;
    std::vector<int> bufs;
    for (const graph::Value* v : ins) {
      ASSIGN_OR_RETURN(int h, b.home(v));
      Md md = b.buffer(h).md;
      if (layout_kind(md).kind == LayoutKind::kOther) md = plain_md(v->shape);
      ASSIGN_OR_RETURN(int buf, b.in_layout(v, md));
      mds.push_back(md);
      bufs.push_back(buf);
    }
    // Channel-blocked inputs whose channel counts fill whole blocks concatenate into the same layout (plain
    // block copies); otherwise channels-last (one strided copy per input); other cases plain.
    Md dst = plain_md(y->shape);
    const LayoutKind k0 = layout_kind(mds[0]);
    if (rank == 4 && axis == 1 && k0.kind == LayoutKind::kChannelBlocked) {
      bool aligned = true;
      for (const graph::Value* v : ins) aligned = aligned && v->shape[1] % k0.block == 0;
      dst = aligned ? same_layout(mds[0], to_dims(y->shape)) : Md(to_dims(y->shape), Dt::f32, Tag::acdb);
    } else if (rank == 4 && k0.kind == LayoutKind::kChannelsLast) {
      dst = Md(to_dims(y->shape), Dt::f32, Tag::acdb);
    }
    dnnl::concat::primitive_desc pd;
    RETURN_IF_ERROR(dnnl_try("concat into " + shape_str(y->shape), [&] {
      pd = dnnl::concat::primitive_desc(dst, static_cast<int>(axis), mds, cpu_engine(), base_attr());
    }));
    int out = b.new_buffer(DType::kF32, y->shape, pd.dst_desc(), y->name);
    DnnlArgs args;
    for (size_t i = 0; i < bufs.size(); ++i) args.add(DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i), bufs[i], mds[i]);
    args.add(DNNL_ARG_DST, out, pd.dst_desc());
    std::string label = fmt::format("concat x{} axis {} -> {}", bufs.size(), axis, md_str(pd.dst_desc()));
    b.add_step(std::make_unique<DnnlOp>(label, pd, std::move(args)), bufs, {out}, &n);
    b.set_home(y, out);
    return Status::ok();
  }
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= y->shape[d];
  std::vector<int> bufs;
  std::vector<int64_t> blocks;
  for (const graph::Value* v : ins) {
    ASSIGN_OR_RETURN(int buf, b.plain(v));
    bufs.push_back(buf);
    blocks.push_back(shape_numel(v->shape) / outer);
  }
  int out = b.new_buffer(y->dtype, y->shape, Md(), y->name);
  b.add_step(std::make_unique<ConcatCopyOp>(bufs, blocks, out, outer, dtype_size(y->dtype)), bufs, {out}, &n);
  b.set_home(y, out);
  return Status::ok();
}

}  // namespace steadyocr::cpu

#include "backends/cpu/dnnl_util.h"

#include <fmt/format.h>

#include <cstring>
#include <mutex>

namespace steadyocr::cpu {

dnnl::engine& cpu_engine() {
  static dnnl::engine* eng = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *eng;
}

Dims to_dims(const Shape& s) {
  if (s.empty()) return {1};
  return Dims(s.begin(), s.end());
}

Tag plain_tag(int rank) {
  switch (rank) {
    case 0:
    case 1:
      return Tag::a;
    case 2:
      return Tag::ab;
    case 3:
      return Tag::abc;
    case 4:
      return Tag::abcd;
    case 5:
      return Tag::abcde;
    case 6:
      return Tag::abcdef;
    default:
      return Tag::undef;
  }
}

Md plain_md(const Shape& s) {
  Dims d = to_dims(s);
  if (d.size() <= 6) return Md(d, Dt::f32, plain_tag(static_cast<int>(d.size())));
  Dims strides(d.size(), 1);
  for (int i = static_cast<int>(d.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * d[i + 1];
  return Md(d, Dt::f32, strides);
}

bool is_plain(const Md& md) {
  if (md.data_type() != Dt::f32) return false;
  Dims d = md.dims();
  return md == plain_md(Shape(d.begin(), d.end()));
}

LayoutKind layout_kind(const Md& md) {
  LayoutKind k;
  if (md.data_type() != Dt::f32 || md.data.format_kind != dnnl_blocked) return k;
  if (is_plain(md)) {
    k.kind = LayoutKind::kPlain;
    return k;
  }
  Dims d = md.dims();
  if (d.size() != 4) return k;
  if (md == Md(d, Dt::f32, Tag::acdb)) {
    k.kind = LayoutKind::kChannelsLast;
    return k;
  }
  for (auto [tag, b] : {std::pair{Tag::aBcd16b, 16}, {Tag::aBcd8b, 8}, {Tag::aBcd4b, 4}}) {
    if (md == Md(d, Dt::f32, tag)) {
      k.kind = LayoutKind::kChannelBlocked;
      k.block = b;
      return k;
    }
  }
  return k;
}

Md same_layout(const Md& like, const Dims& dims) {
  LayoutKind k = layout_kind(like);
  switch (k.kind) {
    case LayoutKind::kPlain:
      return plain_md(Shape(dims.begin(), dims.end()));
    case LayoutKind::kChannelsLast:
      if (dims.size() != 4) return Md();
      return Md(dims, Dt::f32, Tag::acdb);
    case LayoutKind::kChannelBlocked:
      if (dims.size() != 4) return Md();
      return Md(dims, Dt::f32, k.block == 16 ? Tag::aBcd16b : k.block == 8 ? Tag::aBcd8b : Tag::aBcd4b);
    default:
      return Md();
  }
}

Tag conv_blocked_tag() {
  static const Tag tag = [] {
    dnnl::cpu_isa isa = dnnl::cpu_isa::all;
    try {
      isa = dnnl::get_effective_cpu_isa();
    } catch (const dnnl::error&) {
    }
    switch (isa) {
      case dnnl::cpu_isa::avx512_core:
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
        return Tag::aBcd16b;
      default:
        return Tag::aBcd8b;
    }
  }();
  return tag;
}

bool has_padding(const Md& md) {
  const auto& d = md.data;
  for (int i = 0; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i]) return true;
  }
  return false;
}

std::string md_str(const Md& md) {
  Dims d = md.dims();
  std::string dims;
  for (size_t i = 0; i < d.size(); ++i) dims += (i ? "," : "") + std::to_string(d[i]);
  LayoutKind k = layout_kind(md);
  std::string fmt;
  switch (k.kind) {
    case LayoutKind::kPlain:
      fmt = "plain";
      break;
    case LayoutKind::kChannelsLast:
      fmt = "nhwc";
      break;
    case LayoutKind::kChannelBlocked:
      fmt = fmt::format("nChw{}c", k.block);
      break;
    default:
      fmt = "blocked";
  }
  return fmt + "[" + dims + "]";
}

Status dnnl_error(const dnnl::error& e, const std::string& what) {
  StatusCode code = e.status == dnnl_unimplemented   ? StatusCode::kUnsupported
                    : e.status == dnnl_out_of_memory ? StatusCode::kOutOfMemory
                                                     : StatusCode::kInternal;
  return Status(code, fmt::format("oneDNN: {}: {} (status {})", what, e.what(), static_cast<int>(e.status)));
}

}  // namespace steadyocr::cpu

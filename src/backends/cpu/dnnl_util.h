// Internal to the oneDNN CPU backend: the process-wide engine, memory-descriptor helpers and the mapping of
// oneDNN exceptions to Status (exceptions never leave this backend).
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::cpu {

using Md = dnnl::memory::desc;
using Dims = dnnl::memory::dims;
using Tag = dnnl::memory::format_tag;
using Dt = dnnl::memory::data_type;

// The one CPU engine of the process (created on first use).
dnnl::engine& cpu_engine();

// oneDNN dims for a tensor shape; a rank-0 shape becomes {1}.
Dims to_dims(const Shape& s);
// Dense row-major f32 descriptor of `s`.
Md plain_md(const Shape& s);
// The row-major tag for a rank (1..6).
Tag plain_tag(int rank);
// True when `md` is dense row-major f32 (the layout our own kernels and the caller's tensors use).
bool is_plain(const Md& md);

// A layout our own elementwise kernels understand: plain, channels-last (rank 4) or channel-blocked
// (rank 4, channels in blocks of 4/8/16: oneDNN's nChw{4,8,16}c).
struct LayoutKind {
  enum Kind { kOther, kPlain, kChannelsLast, kChannelBlocked } kind = kOther;
  int block = 0;  // channel block for kChannelBlocked
};
LayoutKind layout_kind(const Md& md);
// A descriptor of `dims` in the same recognised layout as `like`; an empty desc when `like` is kOther.
Md same_layout(const Md& like, const Dims& dims);
// True when the layout leaves padding (channel blocks not filled), which must stay zero for oneDNN.
bool has_padding(const Md& md);

// The channel-blocked tag our convolutions use (nChw16c with AVX-512, nChw8c below): measured faster than the
// channels-last brgemm kernels oneDNN 2.6 picks by default for these models (depthwise ~35%, 1x1 ~10%).
Tag conv_blocked_tag();

// "nChw16c[1,96,240,184]"-style description for logs and the profiler.
std::string md_str(const Md& md);

// Converts a oneDNN exception into a Status naming what we were doing.
Status dnnl_error(const dnnl::error& e, const std::string& what);

// Runs `fn` (which may throw dnnl::error) and maps exceptions to a Status.
template <typename F>
Status dnnl_try(const std::string& what, F&& fn) {
  try {
    fn();
  } catch (const dnnl::error& e) {
    return dnnl_error(e, what);
  } catch (const std::exception& e) {
    return internal_error(what + ": " + e.what());
  }
  return Status::ok();
}

// 64-bit content hash (for the weight cache).

}  // namespace steadyocr::cpu

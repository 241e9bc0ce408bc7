// The ABI tag both sides of the plugin boundary compute: C++ objects (Backend, Graph, Tensor) cross it only when
// the compiler, the C++ standard library ABI, the steadyocr version and the IR's op table agree.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "graph/ir.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr {

inline std::string plugin_abi_tag() {
  std::string compiler;
#if defined(__clang__)
  compiler = "clang-" + std::to_string(__clang_major__);
#elif defined(__GNUC__)
  compiler = "gcc-" + std::to_string(__GNUC__);
#else
  compiler = "unknown";
#endif
#if defined(_GLIBCXX_USE_CXX11_ABI)
  compiler += " cxx11abi=" + std::to_string(_GLIBCXX_USE_CXX11_ABI);
#endif
  // The IR's op table (names in order): Graph objects cross with their OpKind values, so a plugin built from sources
  // with an op added or moved would read nodes as other ops (same release number or not).
  uint64_t ops = 1469598103934665603ull;  // FNV-1a
  for (int i = 0; i < static_cast<int>(graph::OpKind::kCount); ++i) {
    for (const char* c = graph::op_name(static_cast<graph::OpKind>(i)); *c; ++c) {
      ops = (ops ^ static_cast<unsigned char>(*c)) * 1099511628211ull;
    }
    ops = (ops ^ 0xffu) * 1099511628211ull;
  }
  char ir[24];
  std::snprintf(ir, sizeof(ir), " ir-%016llx", static_cast<unsigned long long>(ops));
  return compiler + " c++" + std::to_string(__cplusplus) + " steadyocr-" STEADYOCR_VERSION + ir;
}

}  // namespace steadyocr

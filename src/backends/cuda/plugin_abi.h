// The ABI tag both sides of the plugin boundary compute: C++ objects (Backend, Graph, Tensor) cross it only when
// the compiler, the C++ standard library ABI and the steadyocr version agree.
#pragma once

#include <string>

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
  return compiler + " c++" + std::to_string(__cplusplus) + " steadyocr-" STEADYOCR_VERSION;
}

}  // namespace steadyocr

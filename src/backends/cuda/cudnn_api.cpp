#include "backends/cuda/cudnn_api.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>

namespace steadyocr::cuda {
namespace {

#define SO_STR2(x) #x
#define SO_STR(x) SO_STR2(x)

CudnnApi g_api;
CudnnLoad g_load;
std::once_flag g_once;

std::string version_text(size_t v) {
  return fmt::format("{}.{}.{}", v / 10000, (v % 10000) / 100, v % 100);
}

void load_once() {
  CudnnLoad& l = g_load;
  l.soname = "libcudnn.so." SO_STR(CUDNN_MAJOR);
  void* h = ::dlopen(l.soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    l.finding = "L2_CUDNN_MISSING";
    l.error = fmt::format(
        "{} could not be loaded ({}): install cuDNN {} for CUDA {} or add its folder to "
        "LD_LIBRARY_PATH",
        l.soname, e ? e : "no dlerror text", CUDNN_MAJOR, CUDART_VERSION / 1000);
    return;
  }
  std::string missing;
#define SO_CUDNN_LOOKUP(f)                                    \
  g_api.f = reinterpret_cast<decltype(&::f)>(::dlsym(h, #f)); \
  if (!g_api.f) missing += (missing.empty() ? "" : ", ") + std::string(#f);
  SO_CUDNN_FUNCTIONS(SO_CUDNN_LOOKUP)
#undef SO_CUDNN_LOOKUP
  Dl_info info;
  if (g_api.cudnnGetVersion && ::dladdr(reinterpret_cast<const void*>(g_api.cudnnGetVersion), &info) &&
      info.dli_fname) {
    l.path = info.dli_fname;
  }
  if (!missing.empty()) {
    // Every function exists since cuDNN 8; a library without them is not the cuDNN it claims to be.
    l.finding = "L2_CUDNN_WRONG_MAJOR";
    l.error = fmt::format("{} ({}) lacks {}: install cuDNN {}.x for CUDA {}", l.soname, l.path, missing, CUDNN_MAJOR,
                          CUDART_VERSION / 1000);
    return;  // never dlclose: it may have started threads
  }
  l.version = g_api.cudnnGetVersion();
  l.cudart = g_api.cudnnGetCudartVersion();
  if (l.version / 10000 != CUDNN_MAJOR) {
    l.finding = "L2_CUDNN_WRONG_MAJOR";
    l.error = fmt::format("{} is cuDNN {}, the plugin was compiled against cuDNN {}.x: install cuDNN {}.x", l.path,
                          version_text(l.version), CUDNN_MAJOR, CUDNN_MAJOR);
    return;
  }
  if (l.cudart / 1000 != CUDART_VERSION / 1000) {
    l.finding = "L2_CUDNN_CUDA_MISMATCH";
    l.error = fmt::format(
        "{} (cuDNN {}) is the build for CUDA {}, this plugin runs CUDA {}: install the CUDA {} build "
        "of cuDNN {} (cudnn{}-cuda-{}) and put it first on the loader path",
        l.path, version_text(l.version), l.cudart / 1000, CUDART_VERSION / 1000, CUDART_VERSION / 1000, CUDNN_MAJOR,
        CUDNN_MAJOR, CUDART_VERSION / 1000);
    return;
  }
  l.usable = true;
}

}  // namespace

const CudnnLoad& cudnn_load() {
  std::call_once(g_once, load_once);
  return g_load;
}

const CudnnApi& dnn() {
  if (!cudnn_load().usable) std::abort();  // a caller skipped the check: a programming error, not a user's
  return g_api;
}

std::string cudnn_description() {
  const CudnnLoad& l = cudnn_load();
  if (!l.usable) return "not loaded: " + l.error;
  return fmt::format("{} ({}, built for CUDA {}.{})", version_text(l.version), l.path, l.cudart / 1000,
                     (l.cudart % 1000) / 10);
}

}  // namespace steadyocr::cuda

#include "doctor/libraries.h"

#include <fmt/format.h>

#include "doctor/dynlib.h"

namespace steadyocr::doctor {

namespace {
using SizeFn = size_t (*)();
using CublasPropertyFn = int (*)(int, int*);

// Other majors of a library, found without loading them (loading a wrong-major cuDNN pulls its own deps).
std::vector<std::string> other_majors(const std::string& stem, int major) {
  std::vector<std::string> out;
  for (const auto& f : find_library_files(stem + ".so.")) {
    std::string tail = f.substr(f.rfind(".so.") + 4);
    if (tail.rfind(std::to_string(major), 0) == 0 &&
        (tail.size() == std::to_string(major).size() || tail[std::to_string(major).size()] == '.'))
      continue;
    out.push_back(f + " -> " + resolve_path(f));
  }
  return out;
}
}  // namespace

CudnnFacts probe_cudnn(int major) {
  CudnnFacts f;
  f.soname = "libcudnn.so." + std::to_string(major);
  LoadedLib lib = open_library(f.soname);
  if (!lib.ok()) {
    f.dlopen_error = lib.error;
    f.other_majors = other_majors("libcudnn", major);
    return f;
  }
  f.loaded = true;
  f.path = lib.path;
  f.realpath = lib.realpath;
  if (auto v = reinterpret_cast<SizeFn>(lib.symbol("cudnnGetVersion")))
    f.version = cudnn_version(static_cast<int>(v()));
  if (auto v = reinterpret_cast<SizeFn>(lib.symbol("cudnnGetCudartVersion")))
    f.cudart = cuda_version(static_cast<int>(v()));
  if (major >= 9) {
    std::string folder = dirname_of(f.path);
    for (const char* part : {"graph", "ops", "cnn", "engines_precompiled", "engines_runtime_compiled", "heuristic"}) {
      CudnnSublibrary s;
      s.soname = fmt::format("libcudnn_{}.so.{}", part, major);
      if (!folder.empty() && path_exists(folder + "/" + s.soname)) {
        s.path = folder + "/" + s.soname;
        s.same_folder = true;
      } else {
        for (const auto& d : library_search_dirs()) {
          if (path_exists(d + "/" + s.soname)) {
            s.path = d + "/" + s.soname;
            break;
          }
        }
      }
      f.sublibraries.push_back(s);
    }
  }
  return f;
}

CublasFacts probe_cublas(int major) {
  CublasFacts f;
  f.soname = "libcublas.so." + std::to_string(major);
  LoadedLib lib = open_library(f.soname);
  if (!lib.ok()) {
    f.dlopen_error = lib.error;
    f.other_majors = other_majors("libcublas", major);
    return f;
  }
  f.loaded = true;
  f.path = lib.path;
  f.realpath = lib.realpath;
  if (auto prop = reinterpret_cast<CublasPropertyFn>(lib.symbol("cublasGetProperty"))) {
    int v[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) prop(i, &v[i]);  // MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL
    f.version = {v[0], v[1], v[2]};
  }
  LoadedLib lt = open_library("libcublasLt.so." + std::to_string(major));
  f.lt_loaded = lt.ok();
  f.lt_path = lt.ok() ? lt.realpath : "";
  f.lt_error = lt.error;
  return f;
}

nlohmann::json to_json(const CudnnFacts& f) {
  nlohmann::json j = {{"soname", f.soname}, {"loaded", f.loaded}, {"path", f.path}, {"realpath", f.realpath}};
  if (!f.loaded) j["dlopen_error"] = f.dlopen_error;
  if (f.version.known()) j["version"] = f.version.str();
  if (f.cudart.known()) j["built_for_cuda"] = f.cudart.major_minor();
  if (!f.other_majors.empty()) j["other_majors"] = f.other_majors;
  nlohmann::json subs = nlohmann::json::object();
  for (const auto& s : f.sublibraries) subs[s.soname] = s.path.empty() ? "missing" : s.path;
  if (!f.sublibraries.empty()) j["sublibraries"] = subs;
  return j;
}

nlohmann::json to_json(const CublasFacts& f) {
  nlohmann::json j = {{"soname", f.soname}, {"loaded", f.loaded}, {"path", f.path}, {"realpath", f.realpath}};
  if (!f.loaded) j["dlopen_error"] = f.dlopen_error;
  if (f.version.known()) j["version"] = f.version.str();
  j["cublaslt"] = f.lt_loaded ? f.lt_path : "missing: " + f.lt_error;
  if (!f.other_majors.empty()) j["other_majors"] = f.other_majors;
  return j;
}

}  // namespace steadyocr::doctor

// Probes for cuDNN and cuBLAS: which file the loader picks, its version, and what else is installed.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "doctor/versions.h"

namespace steadyocr::doctor {

struct CudnnSublibrary {
  std::string soname;
  std::string path;  // where it was found; empty when missing
  bool same_folder = false;
};

struct CudnnFacts {
  std::string soname;  // libcudnn.so.9
  bool loaded = false;
  std::string path, realpath, dlopen_error;
  Version version;
  Version cudart;                         // the CUDA runtime this cuDNN was built for (cudnnGetCudartVersion)
  std::vector<std::string> other_majors;  // "libcudnn.so.8 -> /usr/lib/.../libcudnn.so.8.9.7"
  std::vector<CudnnSublibrary> sublibraries;
};

struct CublasFacts {
  std::string soname;  // libcublas.so.13
  bool loaded = false;
  std::string path, realpath, dlopen_error;
  Version version;
  bool lt_loaded = false;
  std::string lt_path, lt_error;
  std::vector<std::string> other_majors;
};

// Loads libcudnn.so.<major> (the same soname the plugin links, so after the plugin loaded this returns
// the very library it uses) and lists its sub-libraries.
CudnnFacts probe_cudnn(int major);
CublasFacts probe_cublas(int major);

nlohmann::json to_json(const CudnnFacts& f);
nlohmann::json to_json(const CublasFacts& f);

}  // namespace steadyocr::doctor

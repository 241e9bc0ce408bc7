// Library version numbers in the encodings CUDA, cuDNN and cuBLAS use, and their comparison.
#pragma once

#include <string>

namespace steadyocr::doctor {

struct Version {
  int major = 0, minor = 0, patch = 0;

  bool known() const { return major > 0; }
  std::string str() const;              // "9.19.0"
  std::string major_minor() const;      // "9.19"
  int compare(const Version& o) const;  // <0, 0, >0
};

// CUDA driver/runtime: 13000 -> 13.0.
Version cuda_version(int encoded);
// cuDNN: 91900 -> 9.19.0 (cuDNN 9 encoding), 8907 -> 8.9.7 (cuDNN 8 encoding).
Version cudnn_version(int encoded);
// cuBLAS: 130100 -> 13.1.0.
Version cublas_version(int encoded);

}  // namespace steadyocr::doctor

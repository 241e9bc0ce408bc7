#include "doctor/versions.h"

#include <fmt/format.h>

namespace steadyocr::doctor {

std::string Version::str() const {
  return fmt::format("{}.{}.{}", major, minor, patch);
}
std::string Version::major_minor() const {
  return fmt::format("{}.{}", major, minor);
}

int Version::compare(const Version& o) const {
  if (major != o.major) return major < o.major ? -1 : 1;
  if (minor != o.minor) return minor < o.minor ? -1 : 1;
  if (patch != o.patch) return patch < o.patch ? -1 : 1;
  return 0;
}

Version cuda_version(int v) {
  if (v <= 0) return {};
  return {v / 1000, (v % 1000) / 10, 0};
}

Version cudnn_version(int v) {
  if (v <= 0) return {};
  if (v < 10000) return {v / 1000, (v % 1000) / 100, v % 100};  // cuDNN <= 8: major*1000 + minor*100 + patch
  return {v / 10000, (v % 10000) / 100, v % 100};               // cuDNN 9: major*10000 + minor*100 + patch
}

Version cublas_version(int v) {
  if (v <= 0) return {};
  return {v / 10000, (v % 10000) / 100, v % 100};
}

}  // namespace steadyocr::doctor

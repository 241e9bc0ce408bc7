/* The outcome of a call into a backend plugin (the CUDA plugins, backends/cuda/plugin_api.h, and the Vulkan one,
 * backends/vulkan/plugin_api.h): a plain C struct, so that it crosses the dlopen boundary of either. */
#ifndef STEADYOCR_BACKENDS_COMMON_PLUGIN_STATUS_H_
#define STEADYOCR_BACKENDS_COMMON_PLUGIN_STATUS_H_

#ifdef __cplusplus
extern "C" {
#endif

typedef struct SoPluginStatus {
  int code;           /* steadyocr::StatusCode: 0 = OK, kDeviceFault = the device context is lost (sticky), ... */
  char finding[64];   /* the doctor's code for the cause (src/doctor/knowledge_base.json), "" when none applies */
  char message[2048]; /* what failed and what to do */
} SoPluginStatus;

/* Where a prepared graph's last run spent its time, in milliseconds (steadyocr::RunProfile in backends/backend.h). */
typedef struct SoRunProfile {
  int measured; /* 1: the fields below were measured on that run */
  double acquire_ms, staging_ms, upload_ms, compute_ms, download_ms, sync_ms;
} SoRunProfile;

#ifdef __cplusplus
}

#include <algorithm>
#include <cstring>
#include <string>

namespace steadyocr::common {

// Copies `s` into a fixed C buffer of a plugin struct, cut to fit and NUL-terminated.
inline void copy_text(char* dst, size_t len, const std::string& s) {
  if (!dst || len == 0) return;
  const size_t n = std::min(len - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// Fills a call's outcome; returns `code` (0 = OK).
inline int fill_plugin_status(SoPluginStatus* out, int code, const std::string& finding, const std::string& message) {
  if (!out) return code;
  out->code = code;
  copy_text(out->finding, sizeof(out->finding), code == 0 ? "" : finding);
  copy_text(out->message, sizeof(out->message), code == 0 ? "" : message);
  return code;
}

}  // namespace steadyocr::common
#endif

#endif /* STEADYOCR_BACKENDS_COMMON_PLUGIN_STATUS_H_ */

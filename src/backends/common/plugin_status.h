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

#ifdef __cplusplus
}
#endif

#endif /* STEADYOCR_BACKENDS_COMMON_PLUGIN_STATUS_H_ */

/* The C entry point of libsteadyocr_vulkan.so, loaded with dlopen by runtime/vulkan_plugin (the main binary never
 * links Vulkan; the plugin itself loads the Vulkan loader, libvulkan.so.1, at run time, so it loads and reports even
 * where Vulkan is missing). Same rules as the CUDA plugin (backends/cuda/plugin_api.h): the host calls
 * steadyocr_vulkan_init(STEADYOCR_VULKAN_API_VERSION) and refuses a table of another version or C++ ABI tag; C++
 * objects (Graph, Node, Tensor, DeviceInfo) cross by pointer only; no function throws; the plugin reads no
 * environment (everything arrives as arguments). */
#ifndef STEADYOCR_BACKENDS_VULKAN_PLUGIN_API_H_
#define STEADYOCR_BACKENDS_VULKAN_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#include "backends/common/plugin_status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define STEADYOCR_VULKAN_API_VERSION 2u /* 2: prepare_symbolic, last_plan_ms */
#define STEADYOCR_VULKAN_INIT_SYMBOL "steadyocr_vulkan_init"

/* What the loader and the instance report. Every field is filled as far as the calls succeed; `finding` and `error`
 * name the first step that failed (the doctor's code, src/doctor/knowledge_base.json). */
typedef struct SoVkRuntimeInfo {
  int loader_found;          /* libvulkan.so.1 opened and vkGetInstanceProcAddr found */
  char loader_path[512];     /* the file that provided vkGetInstanceProcAddr (dladdr) */
  uint32_t instance_version; /* vkEnumerateInstanceVersion, VK_MAKE_API_VERSION packed */
  int instance_created;
  int device_count; /* physical devices enumerated */
  int usable_count; /* of which with a compute queue and Vulkan 1.1 */
  char finding[64];
  char error[1024];
} SoVkRuntimeInfo;

typedef struct SoVkDeviceInfo {
  char name[256];        /* "NVIDIA H200", "llvmpipe (LLVM 15.0.6, 256 bits)" */
  char driver_name[128]; /* VkPhysicalDeviceDriverProperties: "NVIDIA", "llvmpipe" */
  char driver_info[256]; /* "580.95.05", "Mesa 22.3.6 (LLVM 15.0.6)" */
  uint32_t api_version, driver_version, vendor_id, device_id;
  int type;                  /* VkPhysicalDeviceType: 1 integrated, 2 discrete, 3 virtual, 4 cpu */
  char uuid[40];             /* deviceUUID, 8-4-4-4-12 hex (CUDA's cudaDeviceProp::uuid for the same card) */
  char pci_bus_id[32];       /* "0000:19:00.0" with VK_EXT_pci_bus_info, else "" */
  size_t device_local_bytes; /* the largest device-local heap */
  int compute_queue_family;  /* -1 when none */
  int shader_fp16;           /* shaderFloat16 */
  int storage_fp16;          /* storageBuffer16BitAccess */
  uint32_t max_workgroup_invocations;
  uint32_t subgroup_size;
} SoVkDeviceInfo;

/* What a backend is created with. */
typedef struct SoVkBackendConfig {
  uint32_t struct_size;       /* sizeof(SoVkBackendConfig) as the host compiled it */
  const char* precision;      /* "fp32" | "fp16" (fp16 storage, fp32 arithmetic) */
  int device;                 /* index among the usable physical devices */
  size_t memory_budget_bytes; /* 0 = no budget: plans beyond it are refused with the figure */
  int debug_sync;             /* submit and wait after every dispatch, checking each */
} SoVkBackendConfig;

typedef struct SteadyocrVulkanApi {
  uint32_t api_version;     /* first field: STEADYOCR_VULKAN_API_VERSION of the plugin */
  const char* abi_tag;      /* compiler + C++ ABI + steadyocr version */
  char shader_compiler[64]; /* what compiled the embedded SPIR-V ("glslc shaderc v2023.2") */

  /* Loads the loader and makes an instance once; returns 0 when at least one device is usable. */
  int (*query_runtime)(SoVkRuntimeInfo* out);
  int (*query_device)(int device, SoVkDeviceInfo* out, SoPluginStatus* status);

  int (*create_backend)(const SoVkBackendConfig* config, void** backend, char* name, size_t name_len, void* device_info,
                        SoPluginStatus* status);
  void (*destroy_backend)(void* backend);
  int (*supports)(void* backend, const void* node);
  int (*prepare)(void* backend, const void* graph, void** prepared, SoPluginStatus* status);
  int (*run)(void* prepared, const void* inputs, void* outputs, SoPluginStatus* status);
  size_t (*workspace_bytes)(void* prepared);
  void (*destroy_prepared)(void* prepared);

  /* One plan for every input shape of a graph specialised on symbols (Backend::prepare_symbolic); an
   * UNSUPPORTED status where it declines (the host then plans per shape). */
  int (*prepare_symbolic)(void* backend, const void* graph, void** prepared, SoPluginStatus* status);
  /* Host milliseconds the last run of `prepared` spent planning for its input shape (PreparedGraph::last_plan_ms). */
  double (*last_plan_ms)(void* prepared);

  /* Doctor checks by name ("chain": loader, instance, devices, queue, memory, a small shader against the host);
   * result is JSON text {"status":"pass|fail|could_not_run","code":"...","steps":[...]}. 0 when it ran. */
  int (*run_check)(const char* name, const char* args_json, char* result_json, size_t result_len);
} SteadyocrVulkanApi;

typedef const SteadyocrVulkanApi* (*steadyocr_vulkan_init_fn)(uint32_t host_api_version);

#ifdef __cplusplus
}
#endif

#endif /* STEADYOCR_BACKENDS_VULKAN_PLUGIN_API_H_ */

// Vulkan, loaded at run time: the plugin links no libvulkan, so it loads and reports a missing or broken Vulkan
// stack (no loader, no driver, no device) as a finding instead of failing to load. Compiled against Debian's
// vulkan.h (the API's types, VK_NO_PROTOTYPES); every function is reached through the table below, filled from
// vkGetInstanceProcAddr of libvulkan.so.1.
#pragma once

#define VK_NO_PROTOTYPES
#include <vulkan/vulkan.h>

#include <string>

namespace steadyocr::vk {

// Functions before an instance exists.
// clang-format off
#define SO_VK_GLOBAL_FUNCTIONS(X) \
  X(vkCreateInstance) \
  X(vkEnumerateInstanceVersion) \
  X(vkEnumerateInstanceExtensionProperties)

// Functions of an instance and of its devices (reached through vkGetInstanceProcAddr: one instance per process).
#define SO_VK_INSTANCE_FUNCTIONS(X) \
  X(vkDestroyInstance) \
  X(vkEnumeratePhysicalDevices) \
  X(vkGetPhysicalDeviceProperties) \
  X(vkGetPhysicalDeviceProperties2) \
  X(vkGetPhysicalDeviceFeatures2) \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkGetPhysicalDeviceMemoryProperties) \
  X(vkEnumerateDeviceExtensionProperties) \
  X(vkCreateDevice) \
  X(vkDestroyDevice) \
  X(vkGetDeviceQueue) \
  X(vkCreateBuffer) \
  X(vkDestroyBuffer) \
  X(vkGetBufferMemoryRequirements) \
  X(vkAllocateMemory) \
  X(vkFreeMemory) \
  X(vkBindBufferMemory) \
  X(vkMapMemory) \
  X(vkUnmapMemory) \
  X(vkCreateShaderModule) \
  X(vkDestroyShaderModule) \
  X(vkCreateDescriptorSetLayout) \
  X(vkDestroyDescriptorSetLayout) \
  X(vkCreatePipelineLayout) \
  X(vkDestroyPipelineLayout) \
  X(vkCreateComputePipelines) \
  X(vkDestroyPipeline) \
  X(vkCreateDescriptorPool) \
  X(vkDestroyDescriptorPool) \
  X(vkAllocateDescriptorSets) \
  X(vkUpdateDescriptorSets) \
  X(vkCreateCommandPool) \
  X(vkDestroyCommandPool) \
  X(vkAllocateCommandBuffers) \
  X(vkFreeCommandBuffers) \
  X(vkBeginCommandBuffer) \
  X(vkEndCommandBuffer) \
  X(vkCmdBindPipeline) \
  X(vkCmdBindDescriptorSets) \
  X(vkCmdDispatch) \
  X(vkCmdPipelineBarrier) \
  X(vkCmdCopyBuffer) \
  X(vkCreateFence) \
  X(vkDestroyFence) \
  X(vkWaitForFences) \
  X(vkResetFences) \
  X(vkQueueSubmit) \
  X(vkDeviceWaitIdle)
// clang-format on

struct VkApi {
  PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define SO_VK_FIELD(f) PFN_##f f = nullptr;
  SO_VK_GLOBAL_FUNCTIONS(SO_VK_FIELD)
  SO_VK_INSTANCE_FUNCTIONS(SO_VK_FIELD)
#undef SO_VK_FIELD
};

// The loader, opened once per process.
struct LoaderLoad {
  bool usable = false;
  std::string path;     // the file that provides vkGetInstanceProcAddr
  std::string finding;  // L2_VULKAN_LOADER_MISSING when not usable
  std::string error;
};
const LoaderLoad& loader_load();
// The table; the global functions are valid once loader_load().usable, the others once load_instance_functions ran.
VkApi& vkapi();
// Fills the instance functions from `instance`; returns the names that are missing ("" when none).
std::string load_instance_functions(VkInstance instance);

// "VK_ERROR_OUT_OF_DEVICE_MEMORY" for messages.
const char* result_name(VkResult r);
// "1.3.230"
std::string version_text(uint32_t v);

}  // namespace steadyocr::vk

#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <mutex>

namespace steadyocr::vk {
namespace {

VkApi g_api;
LoaderLoad g_load;
std::once_flag g_once;

void load_once() {
  LoaderLoad& l = g_load;
  void* h = nullptr;
  std::string errors;
  for (const char* name : {"libvulkan.so.1", "libvulkan.so"}) {
    h = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (h) break;
    const char* e = ::dlerror();
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", e ? e : name);
  }
  if (!h) {
    l.finding = "L2_VULKAN_LOADER_MISSING";
    l.error = fmt::format(
        "the Vulkan loader libvulkan.so.1 could not be loaded ({}): install it (Debian/Ubuntu: the libvulkan1 "
        "package) or add its folder to LD_LIBRARY_PATH",
        errors);
    return;
  }
  g_api.vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(::dlsym(h, "vkGetInstanceProcAddr"));
  if (!g_api.vkGetInstanceProcAddr) {
    l.finding = "L2_VULKAN_LOADER_MISSING";
    l.error = "libvulkan.so.1 has no vkGetInstanceProcAddr: it is not a Vulkan loader; reinstall libvulkan1";
    return;
  }
  Dl_info info;
  if (::dladdr(reinterpret_cast<const void*>(g_api.vkGetInstanceProcAddr), &info) && info.dli_fname) {
    l.path = info.dli_fname;
  }
#define SO_VK_GLOBAL(f) g_api.f = reinterpret_cast<PFN_##f>(g_api.vkGetInstanceProcAddr(VK_NULL_HANDLE, #f));
  SO_VK_GLOBAL_FUNCTIONS(SO_VK_GLOBAL)
#undef SO_VK_GLOBAL
  if (!g_api.vkCreateInstance) {
    l.finding = "L2_VULKAN_LOADER_MISSING";
    l.error = fmt::format("{} gives no vkCreateInstance: reinstall the Vulkan loader (libvulkan1)", l.path);
    return;
  }
  l.usable = true;  // never dlclose: drivers may have started threads
}

}  // namespace

const LoaderLoad& loader_load() {
  std::call_once(g_once, load_once);
  return g_load;
}

VkApi& vkapi() {
  return g_api;
}

std::string load_instance_functions(VkInstance instance) {
  std::string missing;
#define SO_VK_INST(f)                                                             \
  g_api.f = reinterpret_cast<PFN_##f>(g_api.vkGetInstanceProcAddr(instance, #f)); \
  if (!g_api.f) missing += (missing.empty() ? "" : ", ") + std::string(#f);
  SO_VK_INSTANCE_FUNCTIONS(SO_VK_INST)
#undef SO_VK_INST
  return missing;
}

const char* result_name(VkResult r) {
  switch (r) {
#define SO_VK_CASE(x) \
  case x:             \
    return #x;
    SO_VK_CASE(VK_SUCCESS)
    SO_VK_CASE(VK_NOT_READY)
    SO_VK_CASE(VK_TIMEOUT)
    SO_VK_CASE(VK_INCOMPLETE)
    SO_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    SO_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    SO_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    SO_VK_CASE(VK_ERROR_DEVICE_LOST)
    SO_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    SO_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    SO_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    SO_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    SO_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    SO_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    SO_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    SO_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    SO_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    SO_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef SO_VK_CASE
    default:
      return "VK_ERROR_UNKNOWN";
  }
}

std::string version_text(uint32_t v) {
  return fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(v), VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

}  // namespace steadyocr::vk

#include "backends/vulkan/device.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "core/log.h"

namespace steadyocr::vk {
namespace {

template <size_t N>
void copy_text(char (&dst)[N], const std::string& s) {
  std::snprintf(dst, N, "%s", s.c_str());
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  if (vkapi().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  if (vkapi().vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data()) != VK_SUCCESS) return false;
  for (const auto& e : ext) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

std::string uuid_text(const uint8_t* u) {
  std::string s;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    s += fmt::format("{:02x}", u[i]);
  }
  return s;
}

SoVkDeviceInfo describe(VkPhysicalDevice pd, uint32_t instance_version) {
  const VkApi& a = vkapi();
  SoVkDeviceInfo d{};
  VkPhysicalDeviceProperties props{};
  a.vkGetPhysicalDeviceProperties(pd, &props);
  copy_text(d.name, props.deviceName);
  d.api_version = props.apiVersion;
  d.driver_version = props.driverVersion;
  d.vendor_id = props.vendorID;
  d.device_id = props.deviceID;
  d.type = static_cast<int>(props.deviceType);
  d.max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;

  const bool v12 = VK_API_VERSION_MINOR(props.apiVersion) >= 2 && VK_API_VERSION_MINOR(instance_version) >= 2;
  const bool driver_props = v12 || has_extension(pd, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  const bool pci = has_extension(pd, VK_EXT_PCI_BUS_INFO_EXTENSION_NAME);
  VkPhysicalDeviceIDProperties id{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties sub{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties drv{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDevicePCIBusInfoPropertiesEXT bus{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PCI_BUS_INFO_PROPERTIES_EXT};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &id;
  id.pNext = &sub;
  void** tail = &sub.pNext;
  if (driver_props) {
    *tail = &drv;
    tail = &drv.pNext;
  }
  if (pci) *tail = &bus;
  a.vkGetPhysicalDeviceProperties2(pd, &p2);
  copy_text(d.uuid, uuid_text(id.deviceUUID));
  d.subgroup_size = sub.subgroupSize;
  if (driver_props) {
    copy_text(d.driver_name, drv.driverName);
    copy_text(d.driver_info, drv.driverInfo);
  }
  if (pci) {
    copy_text(d.pci_bus_id,
              fmt::format("{:04x}:{:02x}:{:02x}.{}", bus.pciDomain, bus.pciBus, bus.pciDevice, bus.pciFunction));
  }

  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceShaderFloat16Int8Features f16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &s16;
  if (v12 || has_extension(pd, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME)) s16.pNext = &f16;
  a.vkGetPhysicalDeviceFeatures2(pd, &f2);
  d.storage_fp16 = s16.storageBuffer16BitAccess;
  d.shader_fp16 = f16.shaderFloat16;

  VkPhysicalDeviceMemoryProperties mem{};
  a.vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (uint32_t h = 0; h < mem.memoryHeapCount; ++h) {
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) {
      d.device_local_bytes = std::max<size_t>(d.device_local_bytes, mem.memoryHeaps[h].size);
    }
  }
  uint32_t nq = 0;
  a.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  a.vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
  d.compute_queue_family = -1;
  // A compute queue, preferring one without graphics (a dedicated compute family).
  for (int pass = 0; pass < 2 && d.compute_queue_family < 0; ++pass) {
    for (uint32_t q = 0; q < nq; ++q) {
      const bool compute = qf[q].queueFlags & VK_QUEUE_COMPUTE_BIT;
      const bool graphics = qf[q].queueFlags & VK_QUEUE_GRAPHICS_BIT;
      if (compute && (pass == 1 || !graphics)) {
        d.compute_queue_family = static_cast<int>(q);
        break;
      }
    }
  }
  return d;
}

InstanceState g_state;
std::once_flag g_once;

void make_instance() {
  InstanceState& st = g_state;
  SoVkRuntimeInfo& info = st.info;
  const LoaderLoad& l = loader_load();
  if (!l.usable) {
    copy_text(info.finding, l.finding);
    copy_text(info.error, l.error);
    return;
  }
  info.loader_found = 1;
  copy_text(info.loader_path, l.path);
  const VkApi& a = vkapi();
  uint32_t version = VK_API_VERSION_1_0;
  if (a.vkEnumerateInstanceVersion) a.vkEnumerateInstanceVersion(&version);
  info.instance_version = version;
  if (VK_API_VERSION_MINOR(version) < 1 && VK_API_VERSION_MAJOR(version) == 1) {
    copy_text(info.finding, "L2_VULKAN_TOO_OLD");
    copy_text(info.error, fmt::format("the Vulkan loader {} offers Vulkan {}; steadyocr needs 1.1: update libvulkan1",
                                      l.path, version_text(version)));
    return;
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "steadyocr";
  app.pEngineName = "steadyocr";
  app.apiVersion = VK_API_VERSION_MINOR(version) >= 2 ? VK_API_VERSION_1_2 : VK_API_VERSION_1_1;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  VkResult r = a.vkCreateInstance(&ci, nullptr, &st.instance);
  if (r != VK_SUCCESS) {
    st.instance = VK_NULL_HANDLE;
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER) {
      copy_text(info.finding, "L2_VULKAN_NO_DRIVER");
      copy_text(info.error,
                "vkCreateInstance: VK_ERROR_INCOMPATIBLE_DRIVER: the Vulkan loader found no driver (ICD): install "
                "the GPU's Vulkan driver (NVIDIA: the driver's Vulkan ICD, nvidia_icd.json; on a CPU: "
                "mesa-vulkan-drivers) or point VK_DRIVER_FILES at its ICD file");
    } else {
      copy_text(info.finding, "L2_VULKAN_NO_DRIVER");
      copy_text(info.error, fmt::format("vkCreateInstance failed: {}", result_name(r)));
    }
    return;
  }
  info.instance_created = 1;
  if (std::string missing = load_instance_functions(st.instance); !missing.empty()) {
    copy_text(info.finding, "L2_VULKAN_TOO_OLD");
    copy_text(info.error, fmt::format("the Vulkan loader {} lacks {}: update libvulkan1", l.path, missing));
    return;
  }
  uint32_t n = 0;
  r = a.vkEnumeratePhysicalDevices(st.instance, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  if (r == VK_SUCCESS && n) r = a.vkEnumeratePhysicalDevices(st.instance, &n, pds.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    copy_text(info.finding, "L1_VULKAN_NO_DEVICE");
    copy_text(info.error, fmt::format("vkEnumeratePhysicalDevices failed: {}", result_name(r)));
    return;
  }
  info.device_count = static_cast<int>(n);
  std::string refused;
  for (VkPhysicalDevice pd : pds) {
    SoVkDeviceInfo d = describe(pd, version);
    if (d.compute_queue_family < 0) {
      refused += fmt::format("{}{}: no compute queue", refused.empty() ? "" : "; ", d.name);
      continue;
    }
    if (VK_API_VERSION_MAJOR(d.api_version) == 1 && VK_API_VERSION_MINOR(d.api_version) < 1) {
      refused +=
          fmt::format("{}{}: Vulkan {} (1.1 needed)", refused.empty() ? "" : "; ", d.name, version_text(d.api_version));
      continue;
    }
    st.usable.push_back(pd);
    st.devices.push_back(d);
  }
  info.usable_count = static_cast<int>(st.usable.size());
  if (n == 0) {
    copy_text(info.finding, "L1_VULKAN_NO_DEVICE");
    copy_text(info.error,
              "the Vulkan driver lists no device: in a container, expose the GPU and its Vulkan ICD (NVIDIA: "
              "NVIDIA_DRIVER_CAPABILITIES must include graphics or all); check `vulkaninfo --summary`");
  } else if (st.usable.empty()) {
    copy_text(info.finding, "L3_VULKAN_NO_COMPUTE_QUEUE");
    copy_text(info.error, fmt::format("no Vulkan device can run compute shaders: {}", refused));
  }
}

}  // namespace

const InstanceState& instance_state() {
  std::call_once(g_once, make_instance);
  return g_state;
}

Status vk_status(StatusCode code, const std::string& finding, const std::string& message) {
  if (finding.empty()) return Status(code, message);
  return Status(code, message, {finding, message, ""});
}

Status vk_error(VkResult r, const std::string& what) {
  const std::string m = fmt::format("{} failed: {}", what, result_name(r));
  if (r == VK_ERROR_DEVICE_LOST) return vk_status(StatusCode::kDeviceFault, "L3_VULKAN_DEVICE_LOST", m);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    return Status(StatusCode::kOutOfMemory, m);
  }
  return Status(StatusCode::kDeviceError, m);
}

DeviceBuffer::DeviceBuffer(std::shared_ptr<Device> device, VkBuffer buffer, VkDeviceMemory memory, size_t bytes,
                           void* map, Memory kind)
    : device_(std::move(device)), buffer_(buffer), memory_(memory), bytes_(bytes), map_(map), kind_(kind) {}

DeviceBuffer::~DeviceBuffer() {
  device_->recycle({buffer_, memory_, bytes_, map_}, kind_);
}

void Device::free_now(const Free& f) {
  const VkApi& a = vkapi();
  if (f.map) a.vkUnmapMemory(device_, f.memory);
  a.vkDestroyBuffer(device_, f.buffer, nullptr);
  a.vkFreeMemory(device_, f.memory, nullptr);
  in_use_ -= f.bytes;
}

void Device::recycle(const Free& f, Memory kind) {
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    if (!lost_ && pooled_bytes_ + f.bytes <= kPoolBytes) {
      pool_[static_cast<size_t>(kind)].emplace(f.bytes, f);
      pooled_bytes_ += f.bytes;
      return;
    }
  }
  free_now(f);
}

void Device::drop_pool() {
  std::vector<Free> all;
  {
    std::lock_guard<std::mutex> lock(pool_mu_);
    for (auto& p : pool_) {
      for (auto& [bytes, f] : p) all.push_back(f);
      p.clear();
    }
    pooled_bytes_ = 0;
  }
  for (const Free& f : all) free_now(f);
}

size_t Device::bytes_pooled() const {
  std::lock_guard<std::mutex> lock(pool_mu_);
  return pooled_bytes_;
}

Result<std::shared_ptr<Device>> Device::create(int index, size_t memory_budget_bytes) {
  const InstanceState& st = instance_state();
  if (st.usable.empty()) {
    return vk_status(StatusCode::kUnavailable, st.info.finding, st.info.error);
  }
  if (index < 0 || index >= static_cast<int>(st.usable.size())) {
    return vk_status(StatusCode::kUnavailable, "L1_VULKAN_NO_DEVICE",
                     fmt::format("Vulkan device {} does not exist ({} usable)", index, st.usable.size()));
  }
  const VkApi& a = vkapi();
  std::shared_ptr<Device> d(new Device());
  d->info_ = st.devices[index];
  d->physical_ = st.usable[index];
  d->family_ = static_cast<uint32_t>(d->info_.compute_queue_family);
  d->budget_ = memory_budget_bytes;
  // A GPU finishes any plan in well under a second; a CPU device (lavapipe) shares the cores with its callers.
  d->hang_seconds_ = d->info_.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 600.0 : 60.0;
  if (const char* env = std::getenv("STEADYOCR_VULKAN_HANG_S"); env && *env) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end && *end == '\0' && v > 0) {
      d->hang_seconds_ = v;
    } else {
      log::warn("vulkan", "ignoring STEADYOCR_VULKAN_HANG_S='{}' (want seconds > 0); the hang limit stays {:.0f} s",
                env, d->hang_seconds_);
    }
  }
  a.vkGetPhysicalDeviceMemoryProperties(d->physical_, &d->memory_);
  VkPhysicalDeviceProperties props{};
  a.vkGetPhysicalDeviceProperties(d->physical_, &props);
  d->storage_alignment_ = std::max<size_t>(256, props.limits.minStorageBufferOffsetAlignment);
  d->max_range_ = props.limits.maxStorageBufferRange;

  const float priority = 1.f;
  VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  q.queueFamilyIndex = d->family_;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  // 16-bit storage where offered: the fp16 shaders (vulkan-fp16) keep their tensors in it.
  VkPhysicalDevice16BitStorageFeatures s16{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  s16.storageBuffer16BitAccess = d->info_.storage_fp16 ? VK_TRUE : VK_FALSE;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &s16;
  VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  ci.pNext = &f2;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &q;
  VkResult r = a.vkCreateDevice(d->physical_, &ci, nullptr, &d->device_);
  if (r != VK_SUCCESS) {
    d->device_ = VK_NULL_HANDLE;
    return vk_status(StatusCode::kUnavailable, "L3_VULKAN_DEVICE_FAILED",
                     fmt::format("vkCreateDevice on {} failed: {}", d->info_.name, result_name(r)));
  }
  a.vkGetDeviceQueue(d->device_, d->family_, 0, &d->queue_);

  std::array<VkDescriptorSetLayoutBinding, kBindings> b{};
  for (uint32_t i = 0; i < kBindings; ++i) {
    b[i].binding = i;
    b[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    b[i].descriptorCount = 1;
    b[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo lci{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  lci.bindingCount = kBindings;
  lci.pBindings = b.data();
  if ((r = a.vkCreateDescriptorSetLayout(d->device_, &lci, nullptr, &d->set_layout_)) != VK_SUCCESS) {
    return vk_error(r, "vkCreateDescriptorSetLayout");
  }
  VkPipelineLayoutCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pci.setLayoutCount = 1;
  pci.pSetLayouts = &d->set_layout_;
  if ((r = a.vkCreatePipelineLayout(d->device_, &pci, nullptr, &d->pipeline_layout_)) != VK_SUCCESS) {
    return vk_error(r, "vkCreatePipelineLayout");
  }
  return d;
}

Device::~Device() {
  const VkApi& a = vkapi();
  if (!device_) return;
  a.vkDeviceWaitIdle(device_);
  drop_pool();
  for (const auto& both : pipelines_) {
    for (VkPipeline p : both) {
      if (p) a.vkDestroyPipeline(device_, p, nullptr);
    }
  }
  if (pipeline_layout_) a.vkDestroyPipelineLayout(device_, pipeline_layout_, nullptr);
  if (set_layout_) a.vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  a.vkDestroyDevice(device_, nullptr);
}

int Device::memory_type(uint32_t bits, Memory kind) const {
  auto find = [&](VkMemoryPropertyFlags want) {
    for (uint32_t i = 0; i < memory_.memoryTypeCount; ++i) {
      if ((bits & (1u << i)) && (memory_.memoryTypes[i].propertyFlags & want) == want) return static_cast<int>(i);
    }
    return -1;
  };
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  switch (kind) {
    case Memory::kDevice:
      return find(VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    case Memory::kHostReadback: {
      int t = find(host | VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
      return t >= 0 ? t : find(host);
    }
    case Memory::kHostUpload:
    default:
      return find(host);
  }
}

Result<std::unique_ptr<DeviceBuffer>> Device::allocate(size_t bytes, Memory kind, const std::string& what) {
  if (lost_) return vk_status(StatusCode::kDeviceFault, "L3_VULKAN_DEVICE_LOST", "the Vulkan device was lost");
  bytes = (std::max<size_t>(bytes, 4) + 3) / 4 * 4;  // whole words (byte tensors are written four at a time)
  {
    // A free buffer of the kind, at least as large and at most twice as large: no driver call.
    std::lock_guard<std::mutex> lock(pool_mu_);
    auto& pool = pool_[static_cast<size_t>(kind)];
    auto it = pool.lower_bound(bytes);
    if (it != pool.end() && it->first <= 2 * bytes) {
      const Free f = it->second;
      pool.erase(it);
      pooled_bytes_ -= f.bytes;
      return std::make_unique<DeviceBuffer>(shared_from_this(), f.buffer, f.memory, f.bytes, f.map, kind);
    }
  }
  if (budget_ && in_use_.load() + bytes > budget_ && bytes_pooled() > 0) drop_pool();  // free buffers first
  if (budget_ && in_use_.load() + bytes > budget_) {
    return Status(StatusCode::kResourceExhausted,
                  fmt::format("{}: {:.1f} MiB more would pass the Vulkan memory budget ({:.1f} of {:.1f} MiB in use); "
                              "raise --gpu-mem",
                              what, bytes / 1048576.0, in_use_.load() / 1048576.0, budget_ / 1048576.0));
  }
  const VkApi& a = vkapi();
  VkBufferCreateInfo bi{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bi.size = bytes;
  bi.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buf = VK_NULL_HANDLE;
  VkResult r = a.vkCreateBuffer(device_, &bi, nullptr, &buf);
  if (r != VK_SUCCESS) return vk_error(r, fmt::format("vkCreateBuffer ({}, {} bytes)", what, bytes));
  VkMemoryRequirements req{};
  a.vkGetBufferMemoryRequirements(device_, buf, &req);
  int type = memory_type(req.memoryTypeBits, kind);
  if (type < 0 && kind == Memory::kDevice) type = memory_type(req.memoryTypeBits, Memory::kHostUpload);
  if (type < 0) {
    a.vkDestroyBuffer(device_, buf, nullptr);
    return Status(StatusCode::kDeviceError, fmt::format("{}: no memory type fits the buffer", what));
  }
  VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  ai.allocationSize = req.size;
  ai.memoryTypeIndex = static_cast<uint32_t>(type);
  VkDeviceMemory mem = VK_NULL_HANDLE;
  r = a.vkAllocateMemory(device_, &ai, nullptr, &mem);
  if (r != VK_SUCCESS) {
    a.vkDestroyBuffer(device_, buf, nullptr);
    return vk_error(r, fmt::format("vkAllocateMemory ({}, {:.1f} MiB)", what, req.size / 1048576.0));
  }
  r = a.vkBindBufferMemory(device_, buf, mem, 0);
  void* map = nullptr;
  if (r == VK_SUCCESS && kind != Memory::kDevice) r = a.vkMapMemory(device_, mem, 0, VK_WHOLE_SIZE, 0, &map);
  if (r != VK_SUCCESS) {
    a.vkDestroyBuffer(device_, buf, nullptr);
    a.vkFreeMemory(device_, mem, nullptr);
    return vk_error(r, fmt::format("binding/mapping memory ({})", what));
  }
  in_use_ += req.size;
  return std::make_unique<DeviceBuffer>(shared_from_this(), buf, mem, req.size, map, kind);
}

Result<VkPipeline> Device::pipeline(Shader s, bool f16) {
  std::lock_guard<std::mutex> lock(pipelines_mu_);
  VkPipeline& p = pipelines_[static_cast<size_t>(s)][f16 ? 1 : 0];
  if (p) return p;
  const VkApi& a = vkapi();
  const ShaderCode& code = shader_code(s, f16);
  VkShaderModuleCreateInfo mi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  mi.codeSize = code.bytes;
  mi.pCode = code.words;
  VkShaderModule module = VK_NULL_HANDLE;
  VkResult r = a.vkCreateShaderModule(device_, &mi, nullptr, &module);
  if (r != VK_SUCCESS) return vk_error(r, fmt::format("vkCreateShaderModule ({})", code.name));
  VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = pipeline_layout_;
  r = a.vkCreateComputePipelines(device_, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
  a.vkDestroyShaderModule(device_, module, nullptr);
  if (r != VK_SUCCESS) {
    p = VK_NULL_HANDLE;
    return vk_error(r, fmt::format("vkCreateComputePipelines ({})", code.name));
  }
  return p;
}

namespace {
int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

double Device::hang_seconds() const {
  return hang_seconds_;
}

Status Device::submit_and_wait(VkCommandBuffer cb, VkFence fence, const char* what) {
  if (lost_) return vk_status(StatusCode::kDeviceFault, "L3_VULKAN_DEVICE_LOST", "the Vulkan device was lost");
  const VkApi& a = vkapi();
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.commandBufferCount = 1;
  si.pCommandBuffers = &cb;
  VkResult r;
  const int64_t submitted = steady_ns();
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    r = a.vkQueueSubmit(queue_, 1, &si, fence);
  }
  const auto hang_ns = static_cast<int64_t>(hang_seconds() * 1e9);
  const auto slice_ns = static_cast<uint64_t>(std::clamp<int64_t>(hang_ns / 10, 10'000'000, 1'000'000'000));
  while (r == VK_SUCCESS) {
    r = a.vkWaitForFences(device_, 1, &fence, VK_TRUE, slice_ns);
    if (r != VK_TIMEOUT) break;
    r = VK_SUCCESS;  // waited a slice more: hung only when the whole queue stands still
    const int64_t idle = steady_ns() - std::max(submitted, last_progress_ns_.load());
    if (idle > hang_ns) {
      {
        std::lock_guard<std::mutex> lock(pending_mu_);
        pending_.insert(fence);
      }
      log::error("vulkan", "{}: the queue completed nothing for {:.0f} s; the device is treated as lost", what,
                 idle / 1e9);
      r = VK_ERROR_DEVICE_LOST;
      break;
    }
  }
  if (r == VK_SUCCESS) {
    last_progress_ns_ = steady_ns();
    r = a.vkResetFences(device_, 1, &fence);
  }
  if (r == VK_ERROR_DEVICE_LOST) lost_ = true;
  if (r != VK_SUCCESS) return vk_error(r, what);
  return Status::ok();
}

bool Device::settle(VkFence fence, const char* what) {
  {
    std::lock_guard<std::mutex> lock(pending_mu_);
    if (!pending_.count(fence)) return true;  // completed, or failed with the device itself
  }
  const VkApi& a = vkapi();
  const VkResult r = a.vkWaitForFences(device_, 1, &fence, VK_TRUE, static_cast<uint64_t>(hang_seconds() * 1e9));
  if (r == VK_TIMEOUT) {
    log::error("vulkan", "{}: a submission declared hung is still running; its buffers are leaked, not freed", what);
    return false;
  }
  std::lock_guard<std::mutex> lock(pending_mu_);
  pending_.erase(fence);
  return true;
}

}  // namespace steadyocr::vk

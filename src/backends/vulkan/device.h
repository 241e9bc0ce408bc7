// The Vulkan instance (one per process) and a device: its logical device, compute queue, memory (one allocator
// for every buffer, counted against the backend's budget), the one descriptor set layout and pipeline layout every
// shader shares, and the compute pipelines, made once per shader and cached.
#pragma once

#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends/vulkan/plugin_api.h"
#include "backends/vulkan/shaders.h"
#include "backends/vulkan/vk_api.h"
#include "core/status.h"

namespace steadyocr::vk {

// The process's instance and the devices it sees, made on first use (thread-safe); later calls return the same.
struct InstanceState {
  SoVkRuntimeInfo info{};
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> usable;  // with a compute queue and Vulkan 1.1
  std::vector<SoVkDeviceInfo> devices;   // one per usable device
};
const InstanceState& instance_state();

// A Status carrying the doctor's code for the cause.
Status vk_status(StatusCode code, const std::string& finding, const std::string& message);
// A failed Vulkan call: VK_ERROR_DEVICE_LOST is a device fault (sticky), out-of-memory kOutOfMemory, others
// kDeviceError; the message names the call.
Status vk_error(VkResult r, const std::string& what);

class Device;

enum class Memory : uint8_t { kDevice, kHostUpload, kHostReadback };

// A buffer and its memory; on destruction handed back to the device's pool of free buffers (reused by the next
// plan of a similar size) or freed (and uncounted).
class DeviceBuffer {
 public:
  DeviceBuffer(std::shared_ptr<Device> device, VkBuffer buffer, VkDeviceMemory memory, size_t bytes, void* map,
               Memory kind);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  VkBuffer buffer() const { return buffer_; }
  size_t bytes() const { return bytes_; }
  void* map() const { return map_; }  // host-visible buffers only

 private:
  std::shared_ptr<Device> device_;
  VkBuffer buffer_;
  VkDeviceMemory memory_;
  size_t bytes_;
  void* map_;
  Memory kind_;
};

// Keeps an object alive for good: what a submission declared hung may still use is leaked rather than freed.
template <typename T>
void leak(T&& object) {
  static_cast<void>(new std::decay_t<T>(std::forward<T>(object)));
}

class Device : public std::enable_shared_from_this<Device> {
 public:
  static Result<std::shared_ptr<Device>> create(int index, size_t memory_budget_bytes);
  ~Device();

  VkDevice handle() const { return device_; }
  const SoVkDeviceInfo& info() const { return info_; }
  size_t storage_alignment() const { return storage_alignment_; }
  // The largest storage buffer a shader may bind (maxStorageBufferRange: 128 MiB on some drivers).
  size_t max_binding_bytes() const { return max_range_; }

  Result<std::unique_ptr<DeviceBuffer>> allocate(size_t bytes, Memory kind, const std::string& what);
  // Device memory held: buffers in use plus the free ones kept for reuse.
  size_t bytes_in_use() const { return in_use_.load(); }
  size_t bytes_pooled() const;
  size_t budget() const { return budget_; }

  // The cached pipeline of a shader (made on first use); f16: its fp16-storage form.
  Result<VkPipeline> pipeline(Shader s, bool f16 = false);
  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout pipeline_layout() const { return pipeline_layout_; }

  // Submits one command buffer and waits for it (the queue is shared: submissions are serialised). It is declared
  // hung, and the device lost, only when the queue completes nothing for hang_seconds(): other threads' submissions
  // finishing ahead of it are progress (a CPU device such as lavapipe, with every core busy, is slow, not hung).
  Status submit_and_wait(VkCommandBuffer cb, VkFence fence, const char* what);
  // Before a fence (and the command buffer and memory its submission uses) is destroyed: true when nothing of it can
  // still be running. A submission declared hung is waited for once more; false when it is still running then, and
  // the caller leaks its objects (logged) rather than free memory the device may still write.
  bool settle(VkFence fence, const char* what);
  double hang_seconds() const;
  uint32_t queue_family() const { return family_; }
  // Sticky once the device reported VK_ERROR_DEVICE_LOST: every later call fails fast.
  bool lost() const { return lost_.load(); }

  static constexpr uint32_t kBindings = 6;  // binding 0: parameters; 1-5: tensors

 private:
  friend class DeviceBuffer;
  Device() = default;
  struct Free {
    VkBuffer buffer;
    VkDeviceMemory memory;
    size_t bytes;
    void* map;
  };
  // A buffer coming back: kept for reuse while the pool holds less than kPoolBytes, else freed.
  void recycle(const Free& f, Memory kind);
  void free_now(const Free& f);
  void drop_pool();
  static constexpr size_t kPoolBytes = size_t{512} << 20;
  int memory_type(uint32_t bits, Memory kind) const;

  SoVkDeviceInfo info_{};
  VkPhysicalDevice physical_ = VK_NULL_HANDLE;
  VkDevice device_ = VK_NULL_HANDLE;
  VkQueue queue_ = VK_NULL_HANDLE;
  uint32_t family_ = 0;
  VkPhysicalDeviceMemoryProperties memory_{};
  size_t storage_alignment_ = 256;
  size_t max_range_ = size_t{1} << 27;
  size_t budget_ = 0;
  std::atomic<size_t> in_use_{0};
  std::atomic<bool> lost_{false};
  double hang_seconds_ = 60.0;                // STEADYOCR_VULKAN_HANG_S, else 60 (a GPU) or 600 (a CPU device)
  std::atomic<int64_t> last_progress_ns_{0};  // when a submission last completed (steady clock)
  std::mutex pending_mu_;
  std::set<VkFence> pending_;  // fences of submissions declared hung, still running
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout pipeline_layout_ = VK_NULL_HANDLE;
  std::mutex pipelines_mu_;
  std::array<std::array<VkPipeline, 2>, static_cast<size_t>(Shader::kCount)> pipelines_{};
  std::mutex queue_mu_;
  mutable std::mutex pool_mu_;
  std::multimap<size_t, Free> pool_[3];  // per Memory kind, by size
  size_t pooled_bytes_ = 0;
};

}  // namespace steadyocr::vk

// The Vulkan backend ("vulkan"): fp32 compute shaders on any Vulkan 1.1 device with a compute queue.
#pragma once

#include <memory>

#include "backends/backend.h"
#include "backends/vulkan/plugin_api.h"

namespace steadyocr::vk {

Result<std::unique_ptr<Backend>> make_vulkan_backend(const SoVkBackendConfig& config);
// The doctor's chain check (plugin_api.h run_check "chain") as JSON text.
std::string chain_check_json();

}  // namespace steadyocr::vk

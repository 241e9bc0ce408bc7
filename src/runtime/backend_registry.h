// Creates backends by name. "reference" and "cpu" (oneDNN) are linked in; "cuda*" come from the
// plugin library loaded at run time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"

namespace steadyocr::runtime {

// Names that can be created in this build on this machine, best first (e.g. {"cuda-fp32", "cuda-fp16", ..., "vulkan",
// "cpu", "reference"}; the cuda ones only when the plugin loads and a device is present, the vulkan ones where a Vulkan
// device is usable: after "cpu" when that device is a CPU implementation such as lavapipe).
std::vector<std::string> available_backends();
// Creates a backend; a name that is unknown or unavailable is an error that says why.
Result<std::shared_ptr<Backend>> create_backend(const std::string& name);

struct BackendOptions {
  size_t gpu_memory_budget_bytes = 0;  // --gpu-mem; 0 = no budget (CUDA backends only)
  int device = 0;                      // CUDA device index
};
// Same, with options for device backends.
Result<std::shared_ptr<Backend>> create_backend(const std::string& name, const BackendOptions& options);

// The backends that run the nodes backend `name` declines, in order (ARCHITECTURE.md: cuda -> cpu -> reference):
// cpu (when built) and reference below a CUDA backend, reference below cpu, none below reference.
std::vector<std::shared_ptr<Backend>> fallback_chain(const std::string& name);

}  // namespace steadyocr::runtime

// Fault injection for tests (docs/FAULTS.md): real device faults at chosen runs of chosen models.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace steadyocr::cuda::faults {

enum class Kind { kNone, kOom, kIllegalAddress, kHang, kNoKernelImage, kCudnnNotSupported, kCudnnNoAlgo };

const char* kind_name(Kind k);

// Replaces the active rules with `spec` ("" clears them and releases a hanging kernel).
Status set_spec(const std::string& spec);
// Counts one run of a model with `role` ("det", "rec", "cls", ...) and returns the fault to inject into it.
Kind on_run(const std::string& role);
// Counts one convolution planned through cuDNN in a model with `role` and says whether cuDNN is to "have no
// algorithm" for it (the kind cudnn_no_algo, counted here only: never at a run).
bool on_conv_plan(const std::string& role);
// Device address of the host flag a hang kernel waits on, and how long it waits at most.
Result<const volatile int*> hang_flag();
uint64_t hang_timeout_ms();

}  // namespace steadyocr::cuda::faults

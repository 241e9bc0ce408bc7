// The doctor's checks inside the CUDA plugin (layers 3-4), reached through the plugin table's run_check.
// Plain declarations only: the host (doctor) includes this header for the names below without CUDA.
#pragma once

#include <stddef.h>

// A NUL-terminated JSON object follows this marker in the plugin file's read-only data, so the doctor
// can read what the plugin was built against even when the plugin cannot be loaded.
#define STEADYOCR_PLUGIN_BUILD_MARKER "steadyocr-plugin-build-info:"

// Comma-separated faults the checks inject, for tests without broken hardware: no_kernel_image,
// illegal_address, cudnn_not_supported, numeric_mismatch, stream_hang, memory_growth, budget_unavailable.
// The doctor reads this variable and passes its value as the checks' "faults" argument.
#define STEADYOCR_DOCTOR_FAULT_ENV "STEADYOCR_DOCTOR_FAULT"

// Runs the named check (kernel_image, cudnn_conv, fp16, streams, memory, mem_info, budget) with JSON
// args ({"device":0,"faults":"stream_hang",...}) and writes {"status":"pass|fail|skipped","code":"...","summary":"...",
// "evidence":{...}} into result_json. Returns 0 when the check ran (pass or fail), nonzero when it could
// not run (unknown check, bad args, result buffer too small). Never throws.
extern "C" int so_run_check(const char* name, const char* args_json, char* result_json, size_t result_len);

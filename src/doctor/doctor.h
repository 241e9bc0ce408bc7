// `steadyocr doctor`: runs the layers in order, stops the chain at the first layer that fails, and
// reports every check with its code, evidence and remediation (text table or versioned JSON). The Vulkan chain runs
// beside the layers (doctor/vulkan_chain.h).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "doctor/layers.h"
#include "doctor/report.h"

namespace steadyocr::doctor {

constexpr int kDoctorSchemaVersion = 1;

struct DoctorOptions {
  int level = 4;              // highest layer to run (1-4)
  bool keep_going = false;    // judge layers 1-2 even after a failure below them (never layers 3-4)
  bool vulkan = true;         // run the Vulkan chain (apart from the layers; --no-vulkan turns it off)
  DeviceCheckOptions device;  // check_timeout_ms and executable serve the Vulkan chain's child too
};

// Runs layers 1..level; a layer runs only when every layer below it passed (warnings allowed). Then the Vulkan chain,
// whatever the layers found; it never changes the verdict or the exit status.
DoctorReport run_doctor(const DoctorOptions& options);
// Only the environment report (probes of layers 1-2, no checks judged, no device work).
nlohmann::json environment_only();

// The documented JSON form (docs/DOCTOR.md), schema "steadyocr-doctor" version kDoctorSchemaVersion.
nlohmann::json report_to_json(const DoctorReport& report);
// The human form: one table row per check, then each finding in full, then the verdict.
std::string render_report_text(const DoctorReport& report);

}  // namespace steadyocr::doctor

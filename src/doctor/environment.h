// The machine-readable environment report ("baseline" for bug reports): GPU, driver, CUDA, cuDNN,
// cuBLAS, glibc, kernel, CPU, and what our build was made for.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "doctor/layers.h"

namespace steadyocr::doctor {

// Builds the report from facts already gathered (either may be null when that layer was not probed).
nlohmann::json environment_report(const Layer1Facts* l1, const Layer2Facts* l2);
// The report as aligned "key: value" lines.
std::string render_environment_text(const nlohmann::json& env);

}  // namespace steadyocr::doctor

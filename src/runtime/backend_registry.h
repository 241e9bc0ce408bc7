// Creates backends by name. "reference" and "cpu" (oneDNN) are linked in; "cuda*" come from the
// plugin library loaded at run time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"

namespace steadyocr::runtime {

// Names that can be created in this build on this machine, best first (e.g. {"cpu", "reference"}).
std::vector<std::string> available_backends();
// Creates a backend; a name that is unknown or unavailable is an error that says why.
Result<std::shared_ptr<Backend>> create_backend(const std::string& name);

}  // namespace steadyocr::runtime

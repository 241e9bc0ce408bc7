#include "runtime/backend_registry.h"

#include "backends/reference/reference_backend.h"
#ifdef STEADYOCR_HAVE_ONEDNN
#include "backends/cpu/cpu_backend.h"
#endif

namespace steadyocr::runtime {

std::vector<std::string> available_backends() {
  std::vector<std::string> names;
#ifdef STEADYOCR_HAVE_ONEDNN
  names.push_back("cpu");
#endif
  names.push_back("reference");
  return names;
}

Result<std::shared_ptr<Backend>> create_backend(const std::string& name) {
  if (name == "reference") return std::shared_ptr<Backend>(make_reference_backend());
#ifdef STEADYOCR_HAVE_ONEDNN
  if (name == "cpu") return std::shared_ptr<Backend>(make_cpu_backend());
#else
  if (name == "cpu") {
    return unavailable("backend 'cpu' (oneDNN) is not in this build: install libdnnl-dev and rebuild");
  }
#endif
  std::string known;
  for (auto& n : available_backends()) known += (known.empty() ? "" : ", ") + n;
  return invalid_argument("unknown backend '" + name + "' (available here: " + known + ")");
}

}  // namespace steadyocr::runtime

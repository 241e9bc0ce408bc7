// What the CUDA and Vulkan plugins' tables (backends/cuda/plugin.cpp, backends/vulkan/plugin.cpp) do alike with the
// Backend and PreparedGraph objects they hand out as opaque pointers: each plugin wraps the Status calls in its own
// `guarded` (its finding codes and wording); the plain entries catch everything, as no table function may throw.
#pragma once

#include <memory>
#include <vector>

#include "backends/backend.h"
#include "core/status.h"

namespace steadyocr::plugin_entries {

// Backend::prepare or prepare_symbolic of `backend` on `graph` (a const graph::Graph*), into *prepared.
inline Status prepare(bool symbolic, void* backend, const void* graph, void** prepared) {
  if (!backend || !graph || !prepared) return invalid_argument("prepare: null argument");
  *prepared = nullptr;
  auto* b = static_cast<Backend*>(backend);
  const auto& g = *static_cast<const graph::Graph*>(graph);
  ASSIGN_OR_RETURN(std::unique_ptr<PreparedGraph> p, symbolic ? b->prepare_symbolic(g) : b->prepare(g));
  *prepared = p.release();
  return Status::ok();
}

// PreparedGraph::run: inputs a const std::vector<Tensor>*, outputs a std::vector<Tensor>*.
inline Status run(void* prepared, const void* inputs, void* outputs) {
  if (!prepared || !inputs || !outputs) return invalid_argument("run: null argument");
  return static_cast<PreparedGraph*>(prepared)->run(*static_cast<const std::vector<Tensor>*>(inputs),
                                                    static_cast<std::vector<Tensor>*>(outputs));
}

inline size_t workspace_bytes(void* prepared) noexcept {
  try {
    return prepared ? static_cast<PreparedGraph*>(prepared)->workspace_bytes() : 0;
  } catch (...) {
    return 0;
  }
}

inline double last_plan_ms(void* prepared) noexcept {
  try {
    return prepared ? static_cast<PreparedGraph*>(prepared)->last_plan_ms() : 0;
  } catch (...) {
    return 0;
  }
}

inline int runs_concurrently(void* prepared) noexcept {
  try {
    return prepared && static_cast<PreparedGraph*>(prepared)->concurrent() ? 1 : 0;
  } catch (...) {
    return 0;
  }
}

inline void destroy_prepared(void* prepared) noexcept {
  try {
    delete static_cast<PreparedGraph*>(prepared);
  } catch (...) {
  }
}

}  // namespace steadyocr::plugin_entries

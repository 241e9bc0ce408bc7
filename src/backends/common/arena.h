// The liveness arena planner every backend shares: a plan's intermediate buffers, each with its size and the
// first and last step that touches it, get offsets in one arena so that buffers alive at the same time never
// overlap. The planner sees sizes, never Values or shapes: a backend computes each buffer's bytes for the shape
// it plans (later: the profile's largest shape, with sizes as functions of the symbolic input dims) and passes
// them in.
#pragma once

#include <climits>
#include <cstddef>
#include <vector>

namespace steadyocr::common {

struct ArenaBuffer {
  size_t bytes = 0;
  int first = INT_MAX;  // first step that touches it
  int last = -1;        // last step that touches it; -1: never touched (not placed)

  // Extends the live range to step `step`.
  void touch(int step);
  // Alive for the whole run (graph inputs and outputs, workspaces): overlaps every other buffer.
  void whole_run();
  bool used() const { return last >= 0; }
};

struct ArenaOptions {
  size_t alignment = 64;  // every offset and every size rounded up to this
  bool reuse = true;      // false: every buffer its own bytes (all values readable after a run)
};

struct ArenaLayout {
  std::vector<size_t> offsets;  // per buffer; 0 for buffers never touched
  size_t bytes = 0;             // the arena's size (a multiple of the alignment)
};

// Greedy placement, largest first (ties by index): each buffer takes the lowest aligned offset that is free
// during its whole live range.
ArenaLayout plan_arena(const std::vector<ArenaBuffer>& buffers, const ArenaOptions& options = {});

}  // namespace steadyocr::common

// Runs a command as a child process under a deadline, capturing its output. The doctor runs every GPU
// check this way: a hang becomes a finding (the child is killed), and a crash or a sticky CUDA fault in
// one check cannot take the doctor down or poison the next check's context.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace steadyocr::doctor {

struct ChildResult {
  bool started = false;
  std::string start_error;
  bool timed_out = false;  // killed by the deadline
  int exit_code = -1;      // when it exited normally
  int signal = 0;          // when a signal ended it (SIGKILL after a timeout included)
  std::string out, err;    // captured stdout / stderr (each capped at 1 MiB)
  double elapsed_ms = 0;
};

// Starts argv[0] (a path) with argv, the current environment plus `extra_env` (overriding), in its own
// process group; kills that group when `timeout_ms` passes.
ChildResult run_child(const std::vector<std::string>& argv, int timeout_ms,
                      const std::vector<std::pair<std::string, std::string>>& extra_env = {});

// This executable's path (/proc/self/exe), for re-running the doctor as a child.
std::string self_executable();

// The last non-empty line of a child's stdout: its answer (what comes before is stray output from libraries).
std::string last_output_line(const std::string& out);

}  // namespace steadyocr::doctor

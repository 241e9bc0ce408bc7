// The direct children of a process as Linux's /proc shows them: pid, state and CPU time from /proc/PID/stat. Used by
// `bench` (its workers' CPU time) and the server tests (the workers a server started).
#pragma once

#include <sys/types.h>

#include <vector>

namespace steadyocr {

struct ChildProcess {
  pid_t pid = 0;
  char state = '?';     // R, S, D, Z, ...
  double cpu_ms = 0.0;  // user + system time so far
};

// The processes whose parent is `parent`, read from /proc; empty where /proc cannot be read. A child that ends while
// /proc is read may be missing.
std::vector<ChildProcess> child_processes(pid_t parent);

}  // namespace steadyocr

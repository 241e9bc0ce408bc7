// Names for the process's threads, as `top -H`, `ps -L`, perf, gdb and /proc/PID/task/TID/comm show them: so-http
// (a connection), so-listen (the accept loop), so-engine (runs OCR for the server; with GCC's libgomp, the build's
// OpenMP, the threads of the parallel regions it starts inherit the name), so-ready (the readiness probe), so-reprobe
// (the ladder's re-probe), so-reader (a worker pipe's reader). An operator can then see which threads take the cores
// and pin or renice them (scripts/serve_load.sh pins so-engine).
#pragma once

#include <string>
#include <string_view>

namespace steadyocr {

// Names the calling thread; Linux keeps 15 bytes, so a longer name is cut there. Best effort: a failure is ignored
// (the name is for people, nothing depends on it).
void name_this_thread(std::string_view name);
// The calling thread's name as the kernel holds it (empty when it cannot be read).
std::string this_thread_name();

}  // namespace steadyocr

// Co-tenancy: parallel regions sized to the cores other processes leave free. On a machine where another process
// keeps a core busy, a team of as many threads as cores waits at every barrier for the thread that lost its core
// (2-core machine beside one busy loop: --threads 2 slower than --threads 1). The share is sampled from the kernel's
// count of runnable tasks (/proc/loadavg) less this process's own running threads, at most every 25 ms; a core
// counts as taken only when the last three samples agree, so a short-lived process does not shrink the team.
// Every change is logged and counted (steadyocr_cpu_threads, steadyocr_cpu_thread_changes_total).
// STEADYOCR_SHARE_CORES=off (read by the front door: set_enabled) keeps --threads as given; `serve` keeps it unless
// STEADYOCR_SHARE_CORES=on (cli/cmd_serve.cpp says why).
#pragma once

#include <string>
#include <string_view>

namespace steadyocr::cpu_share {

// What one sample read: runnable tasks on the machine (the 4th field of /proc/loadavg, "R/T"), and this process's
// tasks in state R.
struct Sample {
  int runnable = 0;
  int own_running = 0;
};

// Parses /proc/loadavg's text; false when it does not have the "R/T" field.
bool parse_loadavg(std::string_view text, int* runnable);
// The cores other processes keep busy: runnable tasks less this process's own running ones (never below 0).
int busy_elsewhere(const Sample& s);
// The threads a parallel region may use: `wanted` while no core is busy elsewhere (even beyond `cores`: that is the
// user's choice), else at most the cores in this process's affinity less those busy elsewhere, at least 1.
int threads_for(int wanted, int cores, int busy);

// On by default; off keeps every parallel region at --threads.
void set_enabled(bool on);

// Whether sampling applies here: the process may run on every online CPU (the machine-wide runnable count says
// nothing about the cores of a cpuset), more than one thread is wanted, and it is enabled.
// `why` names the reason when it does not.
bool applies(int wanted, std::string* why);

// The threads a parallel region should use now, for `wanted` (--threads): wanted itself where sampling does not
// apply. Cheap: a clock read between samples.
int threads_now(int wanted);

// Forgets the samples (tests).
void reset_for_testing();

}  // namespace steadyocr::cpu_share

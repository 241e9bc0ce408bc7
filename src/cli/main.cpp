// steadyocr: OCR on a runtime that says what runs where and why.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/rung.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

using namespace steadyocr;

namespace {

// libgomp (oneDNN's and our OpenMP runtime) reads its environment once, when it is loaded, and by default a waiting
// thread spins 300,000 times before it sleeps. On cores that another process keeps busy, the spinning threads of a
// parallel region took the cores from the threads that have work (--threads 2 ~4x slower than --threads 1 on the
// 2-core machine beside one busy process), so the binary used to re-execute itself with GOMP_SPINCOUNT=1000. Parallel
// regions now shrink to the cores other processes leave free (core/cpu_share.h), which ends those waits; the
// re-execution cost about 140 ms per process (the second load of ~150 shared libraries) and the bounded spin 8 % idle
// (docs/BENCHMARKS.md, 2026-12-05). `serve` still bounds it: there the cores are shared with the process's own request
// threads, which the sampling does not count as competition, and a busy server must refuse in milliseconds (the
// spinning threads pushed SERVER_BUSY answers from under 5 ms to 5.6 ms median on 2 cores); its workers inherit the
// setting. STEADYOCR_OMP_SPIN=bound asks for it everywhere, =keep nowhere.
constexpr const char* kGompSpinCount = "1000";

void bound_openmp_spin(int argc, char** argv) {
  if (std::getenv("GOMP_SPINCOUNT") || std::getenv("OMP_WAIT_POLICY")) return;
  const char* spin = std::getenv("STEADYOCR_OMP_SPIN");
  bool serve = false;
  for (int i = 1; i < argc; ++i) serve = serve || std::strcmp(argv[i], "serve") == 0;
  const bool bound = spin ? std::strcmp(spin, "bound") == 0 : serve;
  if (!bound) return;
  ::setenv("GOMP_SPINCOUNT", kGompSpinCount, 1);
  // The resolved path, not /proc/self/exe itself: the kernel names a process after the file it executes, and a
  // server that `ps`, `top` and `pkill steadyocr` know as "exe" is hard to find.
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) self[n] = '\0';
  ::execv(n > 0 ? self : "/proc/self/exe", argv);
  std::fprintf(stderr,
               "steadyocr: WARN could not re-execute itself with GOMP_SPINCOUNT=%s (%s): OpenMP threads spin-wait "
               "(slow on busy cores); set GOMP_SPINCOUNT=%s in the environment to avoid this\n",
               kGompSpinCount, std::strerror(errno), kGompSpinCount);
  ::unsetenv("GOMP_SPINCOUNT");
}

}  // namespace

int main(int argc, char** argv) {
  bound_openmp_spin(argc, argv);
  // The engine starts GPU workers as `steadyocr __worker CONFIG_JSON` (not a user command).
  if (argc == 3 && std::string(argv[1]) == "__worker") return engine::worker_main(argv[2]);
  CLI::App app{"steadyocr " STEADYOCR_VERSION " - GPU-robust OCR (PP-OCR det -> cls -> rec) on CUDA and CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STEADYOCR_VERSION);
  std::vector<cli::Command> commands;
  commands.push_back(cli::add_ocr_command(app));
  commands.push_back(cli::add_run_model_command(app));
  commands.push_back(cli::add_doctor_command(app));
  commands.push_back(cli::add_bench_command(app));
  commands.push_back(cli::add_serve_command(app));
  return cli::run_commands(app, commands, argc, argv);
}

// Subcommands whose implementation has not landed yet say so plainly.
#include <cstdio>

#include "cli/commands.h"

namespace steadyocr::cli {
namespace {
Command not_yet(CLI::App& root, const char* name, const char* what) {
  Command c;
  c.app = root.add_subcommand(name, what);
  c.app->allow_extras();
  c.run = [name] {
    std::fprintf(stderr, "steadyocr %s: not available in this build yet\n", name);
    return kExitUsage;
  };
  return c;
}
}  // namespace

Command add_bench_command(CLI::App& root) {
  return not_yet(root, "bench", "Per-stage timings and images/s");
}

}  // namespace steadyocr::cli

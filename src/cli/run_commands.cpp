#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/log.h"

namespace steadyocr::cli {

int run_commands(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv) {
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug|info|warn|error|off")->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  log::Level lvl;
  if (!log::parse_level(log_level, &lvl)) {
    std::fprintf(stderr, "error: --log-level must be one of debug|info|warn|error|off (got '%s')\n", log_level.c_str());
    return kExitUsage;
  }
  log::set_level(lvl);  // worker processes get it through the engine options
  for (const auto& c : commands) {
    if (c.app && c.app->parsed()) return c.run();
  }
  return kExitUsage;
}

}  // namespace steadyocr::cli

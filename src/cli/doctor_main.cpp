// steadyocr-doctor: the `doctor` subcommand alone (no OCR pipeline linked), for GPU images and startup probes.
#include <cstdio>
#include <string>

#include "cli/commands.h"
#include "core/log.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

using namespace steadyocr;

int main(int argc, char** argv) {
  CLI::App app{"steadyocr-doctor " STEADYOCR_VERSION " - the GPU pre-flight of steadyocr (same as `steadyocr doctor`)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STEADYOCR_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug|info|warn|error|off")->capture_default_str();
  cli::Command doctor = cli::add_doctor_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : cli::kExitUsage;
  }
  log::Level lvl;
  if (!log::parse_level(log_level, &lvl)) {
    std::fprintf(stderr, "error: --log-level must be one of debug|info|warn|error|off (got '%s')\n", log_level.c_str());
    return cli::kExitUsage;
  }
  log::set_level(lvl);
  return doctor.run();
}

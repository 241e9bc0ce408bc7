// steadyocr: OCR on a runtime that says what runs where and why.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/log.h"
#include "engine/rung.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

using namespace steadyocr;

int main(int argc, char** argv) {
  // The engine starts GPU workers as `steadyocr __worker CONFIG_JSON` (not a user command).
  if (argc == 3 && std::string(argv[1]) == "__worker") return engine::worker_main(argv[2]);
  CLI::App app{"steadyocr " STEADYOCR_VERSION " - GPU-robust OCR (PP-OCR det -> cls -> rec) on CUDA and CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STEADYOCR_VERSION);
  std::string log_level = "info";
  app.add_option("--log-level", log_level, "debug|info|warn|error|off")->capture_default_str();

  std::vector<cli::Command> commands;
  commands.push_back(cli::add_ocr_command(app));
  commands.push_back(cli::add_run_model_command(app));
  commands.push_back(cli::add_doctor_command(app));
  commands.push_back(cli::add_bench_command(app));
  commands.push_back(cli::add_serve_command(app));

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
  log::set_level(lvl);  // worker processes get it through the engine options
  for (auto& c : commands) {
    if (c.app && c.app->parsed()) return c.run();
  }
  return cli::kExitUsage;
}

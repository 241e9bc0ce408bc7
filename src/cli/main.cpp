// steadyocr: OCR on a runtime that says what runs where and why.
#include <string>
#include <vector>

#include "cli/commands.h"
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
  std::vector<cli::Command> commands;
  commands.push_back(cli::add_ocr_command(app));
  commands.push_back(cli::add_run_model_command(app));
  commands.push_back(cli::add_doctor_command(app));
  commands.push_back(cli::add_bench_command(app));
  commands.push_back(cli::add_serve_command(app));
  return cli::run_commands(app, commands, argc, argv);
}

// steadyocr-doctor: the `doctor` subcommand alone (no OCR pipeline linked), for GPU images and startup probes.

#include "cli/commands.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

using namespace steadyocr;

int main(int argc, char** argv) {
  CLI::App app{"steadyocr-doctor " STEADYOCR_VERSION " - the GPU pre-flight of steadyocr (same as `steadyocr doctor`)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", STEADYOCR_VERSION);
  return cli::run_commands(app, {cli::add_doctor_command(app)}, argc, argv);
}

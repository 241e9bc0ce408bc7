// Each subcommand registers itself on the CLI11 app and returns the exit status when it ran.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <vector>

namespace steadyocr::cli {

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;  // the job ran but some inputs failed (each named on stderr)
constexpr int kExitUsage = 2;   // bad flags or arguments

// A registered subcommand: `run` is called when the user picked it.
struct Command {
  CLI::App* app = nullptr;
  std::function<int()> run;
};

// Adds --log-level, parses argv, sets the log level and runs the subcommand the user picked; the exit status of
// both binaries (steadyocr, steadyocr-doctor).
int run_commands(CLI::App& app, const std::vector<Command>& commands, int argc, char** argv);

Command add_run_model_command(CLI::App& root);
Command add_ocr_command(CLI::App& root);
Command add_doctor_command(CLI::App& root);
Command add_bench_command(CLI::App& root);
Command add_serve_command(CLI::App& root);

}  // namespace steadyocr::cli

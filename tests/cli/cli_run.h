// Running the steadyocr binary from the CLI tests: stdout, stderr and the exit status of one command.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace steadyocr::testing {

struct CliRun {
  int code = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

inline std::string steadyocr_binary() {
  return std::string(STEADYOCR_BINARY_DIR) + "/steadyocr";
}

// Runs `ENV steadyocr ARGS` through the shell (ENV: variable assignments, may be empty).
inline CliRun run_steadyocr(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  const std::string base =
      ::testing::TempDir() + "/cli_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  const std::string cmd = env + " " + steadyocr_binary() + " " + args + " >" + base + ".out 2>" + base + ".err";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(base + ".out"), slurp(base + ".err")};
}

}  // namespace steadyocr::testing

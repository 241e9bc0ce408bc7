#include "core/proc_children.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace steadyocr {

std::vector<ChildProcess> child_processes(pid_t parent) {
  std::vector<ChildProcess> out;
  const double tick_ms = 1000.0 / static_cast<double>(std::max(1L, ::sysconf(_SC_CLK_TCK)));
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](unsigned char c) { return std::isdigit(c); }))
      continue;
    std::ifstream f(entry.path() / "stat");
    const std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    // pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime ...; the
    // command name may hold spaces and parentheses, so the fields are read after its last ')'.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string state, skip;
    long ppid = 0;
    if (!(fields >> state >> ppid) || ppid != static_cast<long>(parent)) continue;
    for (int i = 0; i < 9; ++i) fields >> skip;  // pgrp .. cmajflt
    double utime = 0, stime = 0;
    fields >> utime >> stime;
    ChildProcess c;
    c.pid = static_cast<pid_t>(std::stol(name));
    c.state = state.empty() ? '?' : state[0];
    c.cpu_ms = (utime + stime) * tick_ms;
    out.push_back(c);
  }
  return out;
}

}  // namespace steadyocr

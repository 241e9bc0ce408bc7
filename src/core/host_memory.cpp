#include "core/host_memory.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace steadyocr::host_memory {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

bool parse_int(std::string_view s, int64_t* out) {
  s = trim(s);
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// The process's cgroup path of a hierarchy from /proc/self/cgroup: "0::" for v2's unified one, ":memory:" for v1's
// memory controller ("" when absent).
std::string cgroup_path(std::string_view which) {
  std::istringstream lines(read_text("/proc/self/cgroup"));
  for (std::string line; std::getline(lines, line);) {
    if (which == "0::" ? line.rfind("0::", 0) == 0 : line.find(which) != std::string::npos) {
      return line.substr(line.find(which) + which.size());
    }
  }
  return {};
}

}  // namespace

int64_t parse_meminfo_available(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemAvailable:";
  const size_t at = meminfo.find(kKey);
  if (at == std::string_view::npos) return -1;
  std::string_view rest = meminfo.substr(at + kKey.size());
  rest = rest.substr(0, rest.find('\n'));
  rest = trim(rest);
  const size_t unit = rest.find(' ');
  int64_t kb = 0;
  if (!parse_int(rest.substr(0, unit), &kb) || kb < 0) return -1;
  if (unit != std::string_view::npos && trim(rest.substr(unit)) != "kB") return -1;
  return kb * 1024;
}

int64_t cgroup_room(std::string_view limit_text, std::string_view usage_text) {
  if (trim(limit_text) == "max") return -1;
  int64_t limit = 0, usage = 0;
  if (!parse_int(limit_text, &limit) || !parse_int(usage_text, &usage)) return -1;
  if (limit <= 0 || limit >= (int64_t{1} << 60)) return -1;  // cgroup v1 writes "no limit" as a value near 2^63
  return std::max<int64_t>(0, limit - usage);
}

int64_t available_bytes() {
  int64_t best = parse_meminfo_available(read_text("/proc/meminfo"));
  int64_t room = -1;
  if (const std::string v2 = cgroup_path("0::"); !v2.empty()) {
    room = cgroup_room(read_text("/sys/fs/cgroup" + v2 + "/memory.max"),
                       read_text("/sys/fs/cgroup" + v2 + "/memory.current"));
  }
  // v1: the group's own directory, or the mount's root where a container sees only its own group.
  for (const std::string& dir :
       {"/sys/fs/cgroup/memory" + cgroup_path(":memory:"), std::string("/sys/fs/cgroup/memory")}) {
    if (room >= 0) break;
    room = cgroup_room(read_text(dir + "/memory.limit_in_bytes"), read_text(dir + "/memory.usage_in_bytes"));
  }
  if (room >= 0) best = best < 0 ? room : std::min(best, room);
  return best;
}

}  // namespace steadyocr::host_memory

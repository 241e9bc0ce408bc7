#include "runtime/plugin_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstring>

namespace steadyocr::runtime {

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool is_dir(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::vector<std::string> plugin_dirs() {
  std::vector<std::string> dirs;
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return dirs;
  std::string p(buf, static_cast<size_t>(n));
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return dirs;
  const std::string dir = p.substr(0, slash);
  dirs.push_back(dir);
  slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    dirs.push_back(dir.substr(0, slash));
    dirs.push_back(dir.substr(0, slash) + "/lib/steadyocr");
  }
  return dirs;
}

Status status_from_plugin(const SoPluginStatus& status) {
  if (status.code == 0) return Status::ok();
  StatusCode code = StatusCode::kInternal;
  if (status.code > 0 && status.code <= static_cast<int>(StatusCode::kInternal)) {
    code = static_cast<StatusCode>(status.code);
  }
  std::string message(status.message, strnlen(status.message, sizeof(status.message)));
  std::string finding(status.finding, strnlen(status.finding, sizeof(status.finding)));
  if (message.empty()) message = "the plugin gave no reason";
  if (finding.empty()) return Status(code, std::move(message));
  return Status(code, message, {finding, message, ""});  // the fix comes from the knowledge base (doctor/)
}

}  // namespace steadyocr::runtime

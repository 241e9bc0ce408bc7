#include "doctor/dynlib.h"

#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>

#include <climits>
#include <cstdlib>
#include <set>
#include <sstream>

namespace steadyocr::doctor {

void* LoadedLib::symbol(const char* name) const {
  return handle ? dlsym(handle, name) : nullptr;
}

std::string resolve_path(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  return path;
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string dirname_of(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

LoadedLib open_library(const std::string& name_or_path) {
  LoadedLib lib;
  lib.requested = name_or_path;
  dlerror();
  lib.handle = dlopen(name_or_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib.handle) {
    const char* e = dlerror();
    lib.error = e ? e : "dlopen failed without a message";
    return lib;
  }
  struct link_map* lm = nullptr;
  if (dlinfo(lib.handle, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && lm->l_name[0]) {
    lib.path = lm->l_name;
  } else {
    lib.path = name_or_path;
  }
  lib.realpath = resolve_path(lib.path);
  return lib;
}

std::string file_of_address(const void* address) {
  Dl_info info;
  if (!address || dladdr(address, &info) == 0 || !info.dli_fname) return "";
  return resolve_path(info.dli_fname);
}

std::string missing_library_from_dlerror(const std::string& error) {
  static const std::string kMarker = ": cannot open shared object file";
  size_t pos = error.find(kMarker);
  if (pos == std::string::npos) return "";
  size_t start = error.rfind(' ', pos);
  start = start == std::string::npos ? 0 : start + 1;
  return error.substr(start, pos - start);
}

std::string rejected_library_from_dlerror(const std::string& error) {
  if (error.find("cannot open shared object file") != std::string::npos) return "";
  // "<file>.so[.N]: <reason>": the last file named before a reason is the one the loader refused.
  size_t colon = error.rfind(": ");
  while (colon != std::string::npos && colon > 0) {
    size_t start = error.rfind(' ', colon - 1);
    start = start == std::string::npos ? 0 : start + 1;
    std::string file = error.substr(start, colon - start);
    if (file.find(".so") != std::string::npos) return file;
    colon = colon > 0 ? error.rfind(": ", colon - 1) : std::string::npos;
  }
  return "";
}

std::string undefined_symbol_from_dlerror(const std::string& error) {
  static const std::string kMarker = "undefined symbol: ";
  size_t pos = error.find(kMarker);
  if (pos == std::string::npos) return "";
  pos += kMarker.size();
  size_t end = error.find_first_of(" ,\n", pos);
  return error.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
}

std::vector<std::string> library_search_dirs() {
  std::vector<std::string> dirs;
  std::set<std::string> seen;
  auto add = [&](const std::string& d) {
    if (!d.empty() && seen.insert(d).second) dirs.push_back(d);
  };
  if (const char* ld = std::getenv("LD_LIBRARY_PATH")) {
    std::stringstream ss(ld);
    std::string d;
    while (std::getline(ss, d, ':')) add(d);
  }
  for (const char* d : {"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu",
                        "/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/wsl/lib", "/usr/local/cuda/lib64",
                        "/usr/local/cuda/lib64/stubs", "/usr/local/cuda/compat"})
    add(d);
  return dirs;
}

std::vector<std::string> find_library_files(const std::string& prefix) {
  std::vector<std::string> found;
  for (const auto& d : library_search_dirs()) {
    DIR* dir = opendir(d.c_str());
    if (!dir) continue;
    while (struct dirent* e = readdir(dir)) {
      std::string name = e->d_name;
      if (name.rfind(prefix, 0) == 0) found.push_back(d + "/" + name);
    }
    closedir(dir);
  }
  return found;
}

}  // namespace steadyocr::doctor

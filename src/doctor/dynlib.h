// dlopen helpers that keep the evidence: which file the loader picked, what it said when it failed.
// Libraries opened here are never closed (a driver library must not be unloaded while in use).
#pragma once

#include <string>
#include <vector>

namespace steadyocr::doctor {

struct LoadedLib {
  void* handle = nullptr;
  std::string requested;  // the name or path given to dlopen
  std::string path;       // the file the loader opened (link map name)
  std::string realpath;   // `path` with symlinks resolved
  std::string error;      // dlerror() text when handle is null

  bool ok() const { return handle != nullptr; }
  // dlsym; null when absent or not loaded.
  void* symbol(const char* name) const;
};

// dlopen(name, RTLD_NOW | RTLD_LOCAL) and records the evidence.
LoadedLib open_library(const std::string& name_or_path);
// The shared object that holds `address` (dladdr), symlinks resolved; empty when unknown.
std::string file_of_address(const void* address);
// realpath(3), or the input when it cannot be resolved.
std::string resolve_path(const std::string& path);
bool path_exists(const std::string& path);
// Directory part of a path ("" for a bare name).
std::string dirname_of(const std::string& path);

// From a dlerror text, the library the loader could not find ("libcudnn.so.9: cannot open shared object
// file ..." -> "libcudnn.so.9"); empty when the error is of another kind.
std::string missing_library_from_dlerror(const std::string& error);
// From a dlerror text of another kind ("/x/libcudnn.so.9: file too short", "...: invalid ELF header"), the
// library the loader rejected; or "".
std::string rejected_library_from_dlerror(const std::string& error);
// From a dlerror text, the undefined symbol ("... undefined symbol: cudnnFoo" -> "cudnnFoo"); or "".
std::string undefined_symbol_from_dlerror(const std::string& error);

// Files named like `prefix`* in the usual driver/library folders and the LD_LIBRARY_PATH entries,
// to say where we looked and what exists (e.g. only a stub).
std::vector<std::string> find_library_files(const std::string& prefix);
// The folders find_library_files looks in, in order.
std::vector<std::string> library_search_dirs();

}  // namespace steadyocr::doctor

// Finds and loads the CUDA backend plugin (libsteadyocr_cuda13.so) and keeps every piece of evidence: where
// we looked, the dlopen error, what the file says it was built against, the architectures in its fatbinary.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "backends/cuda/plugin_api.h"

namespace steadyocr::doctor {

// SASS and PTX architectures found in a file's CUDA fatbinaries (e.g. sass {80,86,89,90}, ptx {90}).
struct FatbinArchs {
  std::vector<int> sass;
  std::vector<int> ptx;
  int fatbins = 0;  // fatbinary containers seen
};
// Scans a file's bytes for fatbinary containers (magic 0xBA55ED50) and lists their entries.
FatbinArchs scan_fatbin_archs(const std::string& path);
FatbinArchs scan_fatbin_bytes(const unsigned char* data, size_t size);
// "80,86,89,90" -> {80,86,89,90}
std::vector<int> parse_arch_list(const std::string& text);
std::string arch_list_str(const std::vector<int>& archs);  // "sm_80, sm_86" style without prefix: "80,86"

struct PluginBuild {
  bool known = false;
  std::string source;  // "get_build_info" | "file marker" | "assumed"
  int cuda_runtime_version = 0, cudnn_version = 0, cublas_version = 0;
  std::string sass_archs, ptx_archs, compiler;
};

struct PluginFacts {
  std::vector<std::string> looked_in;
  bool found = false;
  std::string path;
  bool loaded = false;
  std::string dlopen_error, missing_library, rejected_library, undefined_symbol;
  bool api_ok = false;
  std::string api_problem;
  uint32_t api_version = 0;
  std::string abi_tag;
  const SteadyocrPluginApi* api = nullptr;
  PluginBuild build;
  FatbinArchs fatbin;
  bool runtime_queried = false;
  int runtime_rc = -1;
  SoPluginRuntimeInfo runtime{};
};

// Where the plugin is looked for: the runtime's own search order (runtime/cuda_plugin.h), so the doctor
// examines the very file the engine would load.
std::vector<std::string> plugin_candidates();
// Locates, scans and loads the plugin; queries build info (no device work). Safe to call repeatedly.
PluginFacts probe_plugin();
// Calls the plugin's query_runtime (starts the CUDA runtime in this process).
void query_plugin_runtime(PluginFacts& facts);
// Reads the build marker (STEADYOCR_PLUGIN_BUILD_MARKER + JSON) from the plugin file without loading it.
PluginBuild read_build_marker(const std::string& path);

// Every CUDA plugin file (one per CUDA major, runtime/cuda_plugin.h): where it is, what it was built with (read from
// the file, not loaded), and its cuBLAS. The doctor's per-plugin report (layer 2, check "plugins").
struct PluginFileFacts {
  std::string file;  // "libsteadyocr_cuda11.so"
  int cuda_major = 0;
  int min_driver_cuda = 0;  // the driver's CUDA version it needs, e.g. 11000
  std::string min_driver;   // "R450.80.02 (CUDA 11.0)"
  std::string path;         // "" when not installed
  bool loadable = false;    // dlopen of the file succeeded (its libraries found; no CUDA call made)
  std::string load_error;   // the dlopen text when not
  PluginBuild build;
  std::string cublas_soname, cublas_path, cublas_error;
};
std::vector<PluginFileFacts> probe_plugin_files();

nlohmann::json to_json(const PluginFacts& f);
nlohmann::json to_json(const PluginFileFacts& f);

}  // namespace steadyocr::doctor

#include "doctor/plugin_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>

#include "backends/cuda/diagnostics.h"
#include "doctor/dynlib.h"
#include "runtime/cuda_plugin.h"

namespace steadyocr::doctor {

namespace {

// A read-only mapping of a whole file, unmapped on scope exit.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st;
    if (::fstat(fd, &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const unsigned char*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    ::close(fd);
  }
  ~MappedFile() {
    if (data_) ::munmap(const_cast<unsigned char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const unsigned char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const unsigned char* data_ = nullptr;
  size_t size_ = 0;
};

template <typename T>
T load_le(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

std::vector<int> parse_arch_list(const std::string& text) {
  // "80,86,89,90", CMake's "80;86" or "sm_80 sm_86": every run of digits is one architecture.
  std::vector<int> out;
  std::string digits;
  for (char c : text + ",") {
    if (c >= '0' && c <= '9') {
      digits += c;
    } else if (!digits.empty()) {
      out.push_back(std::atoi(digits.c_str()));
      digits.clear();
    }
  }
  return out;
}

std::string arch_list_str(const std::vector<int>& archs) {
  std::string s;
  for (int a : archs) s += (s.empty() ? "" : ",") + std::to_string(a);
  return s.empty() ? "(none)" : s;
}

FatbinArchs scan_fatbin_bytes(const unsigned char* data, size_t size) {
  // Container: u32 magic 0xBA55ED50, u16 version (1), u16 header size (16), u64 size of the entries.
  // Entry: u16 kind (1 PTX, 2 ELF/SASS), u16 version, u32 header size, u64 payload size, ..., u32 arch at +28.
  FatbinArchs out;
  std::set<int> sass, ptx;
  static const unsigned char kMagic[4] = {0x50, 0xED, 0x55, 0xBA};
  if (!data || size < 16) return out;
  const unsigned char* p = data;
  const unsigned char* end = data + size;
  while (true) {
    p = static_cast<const unsigned char*>(memmem(p, static_cast<size_t>(end - p), kMagic, 4));
    if (!p || end - p < 16) break;
    uint16_t version = load_le<uint16_t>(p + 4), header = load_le<uint16_t>(p + 6);
    uint64_t entries = load_le<uint64_t>(p + 8);
    if (version != 1 || header < 16 || entries > static_cast<uint64_t>(end - p) - header) {
      p += 4;
      continue;
    }
    ++out.fatbins;
    const unsigned char* e = p + header;
    const unsigned char* e_end = e + entries;
    while (e_end - e >= 32) {
      uint16_t kind = load_le<uint16_t>(e);
      uint32_t ehs = load_le<uint32_t>(e + 4);
      uint64_t payload = load_le<uint64_t>(e + 8);
      uint32_t arch = load_le<uint32_t>(e + 28);
      if (ehs < 32 || ehs > 4096 || payload > static_cast<uint64_t>(e_end - e) - ehs) break;
      if (arch > 0 && arch < 1000) {
        if (kind == 2) sass.insert(static_cast<int>(arch));
        if (kind == 1) ptx.insert(static_cast<int>(arch));
      }
      e += ehs + payload;
    }
    p = e_end;
  }
  out.sass.assign(sass.begin(), sass.end());
  out.ptx.assign(ptx.begin(), ptx.end());
  return out;
}

FatbinArchs scan_fatbin_archs(const std::string& path) {
  MappedFile f(path);
  return scan_fatbin_bytes(f.data(), f.size());
}

PluginBuild read_build_marker(const std::string& path) {
  PluginBuild b;
  MappedFile f(path);
  if (!f.data()) return b;
  static const std::string kMarker = STEADYOCR_PLUGIN_BUILD_MARKER;
  const void* hit = memmem(f.data(), f.size(), kMarker.data(), kMarker.size());
  if (!hit) return b;
  const char* json_start = static_cast<const char*>(hit) + kMarker.size();
  const char* end = reinterpret_cast<const char*>(f.data()) + f.size();
  const char* nul = static_cast<const char*>(memchr(json_start, 0, static_cast<size_t>(end - json_start)));
  if (!nul) return b;
  nlohmann::json j = nlohmann::json::parse(std::string(json_start, nul), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return b;
  // Versions come as numbers (CUDART_VERSION) or dotted text ("9.19.0"); both are accepted.
  auto encoded = [&](const char* key, int scale_major) {
    if (!j.contains(key)) return 0;
    if (j[key].is_number_integer()) return j[key].get<int>();
    if (!j[key].is_string()) return 0;
    int ma = 0, mi = 0, pa = 0;
    std::sscanf(j[key].get<std::string>().c_str(), "%d.%d.%d", &ma, &mi, &pa);
    return ma * scale_major + mi * 100 + pa;
  };
  b.known = true;
  b.source = "file marker";
  b.cuda_runtime_version = encoded("cuda_runtime", 1000);
  b.cudnn_version = encoded("cudnn", 10000);
  b.cublas_version = encoded("cublas", 10000);
  b.sass_archs = j.value("sass", "");
  b.ptx_archs = j.value("ptx", "");
  b.compiler = j.contains("nvcc") && j["nvcc"].is_string() ? "nvcc " + j["nvcc"].get<std::string>() : "";
  return b;
}

std::vector<std::string> plugin_candidates() {
  return runtime::cuda_plugin_candidates();
}

PluginFacts probe_plugin() {
  PluginFacts f;
  for (const auto& cand : plugin_candidates()) {
    f.looked_in.push_back(cand);
    bool bare = cand.find('/') == std::string::npos;
    if (!bare && !path_exists(cand)) continue;
    LoadedLib lib = open_library(cand);
    if (!lib.ok() && bare && lib.error.find(cand + ": cannot open shared object file") != std::string::npos) {
      continue;  // the bare name is not on the loader path at all
    }
    f.found = true;
    f.path = lib.ok() ? lib.realpath : resolve_path(cand);
    f.build = read_build_marker(f.path);
    f.fatbin = scan_fatbin_archs(f.path);
    if (!lib.ok()) {
      f.dlopen_error = lib.error;
      f.missing_library = missing_library_from_dlerror(lib.error);
      f.rejected_library = rejected_library_from_dlerror(lib.error);
      f.undefined_symbol = undefined_symbol_from_dlerror(lib.error);
      return f;
    }
    f.loaded = true;
    auto init = reinterpret_cast<steadyocr_backend_init_fn>(lib.symbol(STEADYOCR_PLUGIN_INIT_SYMBOL));
    if (!init) {
      f.api_problem = std::string("no entry point ") + STEADYOCR_PLUGIN_INIT_SYMBOL;
      return f;
    }
    const SteadyocrPluginApi* api = init(STEADYOCR_PLUGIN_API_VERSION);
    if (!api) {
      f.api_problem =
          "steadyocr_backend_init returned null for host API version " + std::to_string(STEADYOCR_PLUGIN_API_VERSION);
      return f;
    }
    f.api_version = api->api_version;
    f.abi_tag = api->abi_tag ? api->abi_tag : "";
    if (api->api_version != STEADYOCR_PLUGIN_API_VERSION) {
      f.api_problem = "plugin API version " + std::to_string(api->api_version) + ", this binary speaks " +
                      std::to_string(STEADYOCR_PLUGIN_API_VERSION);
      return f;
    }
    if (Status s = runtime::check_plugin_api(api, f.path); !s.is_ok()) {
      f.api_problem = s.message();
      return f;
    }
    f.api_ok = true;
    f.api = api;
    if (api->get_build_info) {
      SoPluginBuildInfo info{};
      api->get_build_info(&info);
      f.build.known = true;
      f.build.source = "get_build_info";
      f.build.cuda_runtime_version = info.cuda_runtime_version;
      f.build.cudnn_version = info.cudnn_version;
      f.build.cublas_version = info.cublas_version;
      f.build.sass_archs = info.sass_archs;
      f.build.ptx_archs = info.ptx_archs;
      f.build.compiler = info.compiler;
    }
    return f;
  }
  return f;
}

std::vector<PluginFileFacts> probe_plugin_files() {
  std::vector<PluginFileFacts> out;
  // Every flavour's candidate paths, whatever the driver (the report covers what is installed, not only the pick).
  const std::vector<std::string> cands =
      runtime::cuda_plugin_candidates(runtime::choose_cuda_plugins(0), /*honour_pin=*/false);
  for (const auto& fl : runtime::cuda_plugin_flavours()) {
    PluginFileFacts f;
    f.file = fl.file;
    f.cuda_major = fl.cuda_major;
    f.min_driver_cuda = fl.min_driver_cuda;
    f.min_driver = fl.min_driver;
    for (const auto& c : cands) {
      if (c.find('/') == std::string::npos || !path_exists(c)) continue;  // bare names: the loader's path, not listed
      // A file is this flavour by its name, or (a pinned file of any name) by the CUDA major in its build marker.
      const bool named =
          c.size() >= fl.file.size() && c.compare(c.size() - fl.file.size(), fl.file.size(), fl.file) == 0;
      PluginBuild b = named ? PluginBuild{} : read_build_marker(c);
      if (named || (b.known && b.cuda_runtime_version / 1000 == fl.cuda_major)) {
        f.path = resolve_path(c);
        break;
      }
    }
    if (!f.path.empty()) {
      // Loading runs no CUDA code (the runtime is linked statically and starts at the first call), so every
      // installed plugin can be tried, not only the one the engine picks.
      LoadedLib plugin = open_library(f.path);
      f.loadable = plugin.ok();
      f.load_error = plugin.error;
      f.build = read_build_marker(f.path);
      const int cublas_major = f.build.known ? f.build.cublas_version / 10000 : fl.cuda_major;
      f.cublas_soname = "libcublas.so." + std::to_string(cublas_major);
      LoadedLib lib = open_library(f.cublas_soname);
      if (lib.ok()) {
        f.cublas_path = lib.realpath;
      } else {
        f.cublas_error = lib.error;
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

nlohmann::json to_json(const PluginFileFacts& f) {
  nlohmann::json j = {
      {"file", f.file}, {"cuda_major", f.cuda_major}, {"min_driver", f.min_driver}, {"installed", !f.path.empty()},
      {"path", f.path}, {"loadable", f.loadable}};
  if (!f.load_error.empty()) j["load_error"] = f.load_error;
  if (f.build.known) {
    j["built_with"] = {{"cuda_runtime", f.build.cuda_runtime_version},
                       {"cublas", f.build.cublas_version},
                       {"cudnn_header", f.build.cudnn_version},
                       {"sass_archs", f.build.sass_archs},
                       {"ptx_archs", f.build.ptx_archs},
                       {"compiler", f.build.compiler}};
  }
  if (!f.cublas_soname.empty()) {
    j["cublas"] = {{"soname", f.cublas_soname}, {"path", f.cublas_path}, {"error", f.cublas_error}};
  }
  return j;
}

void query_plugin_runtime(PluginFacts& f) {
  if (!f.api_ok || !f.api->query_runtime || f.runtime_queried) return;
  f.runtime_queried = true;
  f.runtime_rc = f.api->query_runtime(&f.runtime);
}

nlohmann::json to_json(const PluginFacts& f) {
  nlohmann::json j;
  j["found"] = f.found;
  j["path"] = f.path;
  j["looked_in"] = f.looked_in;
  j["loaded"] = f.loaded;
  if (!f.dlopen_error.empty()) j["dlopen_error"] = f.dlopen_error;
  if (!f.missing_library.empty()) j["missing_library"] = f.missing_library;
  if (!f.rejected_library.empty()) j["rejected_library"] = f.rejected_library;
  if (!f.undefined_symbol.empty()) j["undefined_symbol"] = f.undefined_symbol;
  if (f.loaded) {
    j["api_version"] = f.api_version;
    j["abi_tag"] = f.abi_tag;
    if (!f.api_problem.empty()) j["api_problem"] = f.api_problem;
  }
  if (f.build.known) {
    j["built_with"] = {{"source", f.build.source},         {"cuda_runtime", f.build.cuda_runtime_version},
                       {"cudnn", f.build.cudnn_version},   {"cublas", f.build.cublas_version},
                       {"sass_archs", f.build.sass_archs}, {"ptx_archs", f.build.ptx_archs},
                       {"compiler", f.build.compiler}};
  }
  j["fatbin"] = {{"containers", f.fatbin.fatbins}, {"sass", f.fatbin.sass}, {"ptx", f.fatbin.ptx}};
  if (f.runtime_queried) {
    const auto& r = f.runtime;
    j["runtime"] = {{"rc", f.runtime_rc},
                    {"driver_cuda_version", r.driver_cuda_version},
                    {"runtime_version", r.runtime_version},
                    {"cudnn_version", r.cudnn_version},
                    {"cublas_version", r.cublas_version},
                    {"cudnn_path", r.cudnn_path},
                    {"cublas_path", r.cublas_path},
                    {"cudart_path", r.cudart_path},
                    {"device_count", r.device_count},
                    {"error_code", r.error_code},
                    {"error_sticky", r.error_sticky},
                    {"error", r.error}};
  }
  return j;
}

}  // namespace steadyocr::doctor

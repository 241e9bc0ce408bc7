// Layer 2, ABI: does what is installed match what we were built against?
#include <fmt/format.h>

#include <algorithm>

#include "doctor/dynlib.h"
#include "doctor/layers.h"

namespace steadyocr::doctor {

namespace {
// Release defaults, used only when the plugin says nothing about its build (not found, no marker).
constexpr int kDefaultCudart = 13000, kDefaultCudnn = 90000, kDefaultCublas = 130000;

CheckResult check_plugin(const PluginFacts& p) {
  nlohmann::json ev = to_json(p);
  if (!p.found) {
    std::string looked;
    for (const auto& l : p.looked_in) looked += (looked.empty() ? "" : ", ") + l;
    ev["looked_in"] = looked;
    return finding(2, "plugin", CheckStatus::kFail, "PLUGIN_NOT_FOUND",
                   "libsteadyocr_cuda13.so not found (looked in " + looked + "): this install has no GPU backend", ev);
  }
  ev["plugin_path"] = p.path;
  if (!p.loaded) {
    ev["missing_library"] = !p.missing_library.empty()    ? p.missing_library
                            : !p.rejected_library.empty() ? p.rejected_library + " (found but rejected)"
                                                          : "(none named)";
    std::string why = !p.missing_library.empty()    ? p.missing_library + " is missing"
                      : !p.rejected_library.empty() ? p.rejected_library + " cannot be loaded: " + p.dlopen_error
                                                    : p.dlopen_error;
    if (!p.undefined_symbol.empty())
      why += " (undefined symbol " + p.undefined_symbol + ": a library older than built)";
    return finding(2, "plugin", CheckStatus::kFail, "PLUGIN_DLOPEN_FAILED", "cannot load " + p.path + ": " + why, ev);
  }
  if (!p.api_ok) {
    ev["problem"] = p.api_problem;
    return finding(2, "plugin", CheckStatus::kFail, "PLUGIN_API_MISMATCH", p.path + ": " + p.api_problem, ev);
  }
  return pass(2, "plugin", fmt::format("{} (API v{}, {})", p.path, p.api_version, p.build.compiler), ev);
}

// Every plugin flavour: installed or not, built with what, whether the driver runs it, its cuBLAS found.
CheckResult check_plugin_files(const Layer2Facts& f) {
  nlohmann::json ev;
  if (f.plugin_files.empty()) {
    return pass(2, "plugins", "not probed (the engine's pre-flight checks only the plugin it loads)", ev);
  }
  ev["plugins"] = nlohmann::json::array();
  for (const auto& p : f.plugin_files) ev["plugins"].push_back(to_json(p));
  const int drv = f.driver.driver_cuda_version;
  Version driver = cuda_version(drv);
  ev["driver_cuda"] = driver.known() ? driver.major_minor() : "unknown";
  std::string lines, better, better_major, serving;
  bool any_fits = false;
  for (const auto& p : f.plugin_files) {
    const bool fits = drv > 0 && drv >= p.min_driver_cuda;
    any_fits |= fits;
    std::string line = p.file + ": ";
    if (p.path.empty()) {
      line += "not installed";
    } else {
      line += p.path;
      if (p.build.known) {
        line += fmt::format(" (CUDA {}, SASS {}, PTX {})", cuda_version(p.build.cuda_runtime_version).major_minor(),
                            p.build.sass_archs, p.build.ptx_archs);
      }
      line += p.cublas_path.empty() ? ", " + p.cublas_soname + " NOT found" : ", " + p.cublas_soname + " found";
      line += p.loadable ? ", loads" : ", does not load (" + p.load_error + ")";
    }
    if (drv > 0) line += fits ? ", the driver runs it" : ", needs a driver of " + p.min_driver;
    lines += (lines.empty() ? "" : "; ") + line;
    if (fits && p.path.empty() && serving.empty() && better.empty()) {
      better = p.file;
      better_major = std::to_string(p.cuda_major);
    }
    if (fits && !p.path.empty() && p.loadable && serving.empty()) serving = p.file;
  }
  // A pinned plugin (--cuda-plugin) that the driver runs serves instead of the pick (one it does not run is the
  // driver_vs_runtime check's failure).
  for (const auto& p : f.plugin_files) {
    if (f.plugin.api_ok && !p.path.empty() && p.path == f.plugin.path && drv >= p.min_driver_cuda) {
      if (serving != p.file) better.clear();
      serving = p.file;
    }
  }
  ev["summary"] = lines;
  if (drv <= 0) return pass(2, "plugins", lines + " (the driver's CUDA version is unknown)", ev);
  if (!any_fits) {
    ev["driver_version"] = f.driver.driver_version;
    ev["runtime_built"] = "11.0";
    return finding(
        2, "plugins", CheckStatus::kFail, "L2_DRIVER_TOO_OLD",
        fmt::format("the driver supports CUDA {}, older than every CUDA plugin: {}", driver.major_minor(), lines), ev);
  }
  if (serving.empty()) {
    ev["looked_in"] = lines;
    return finding(2, "plugins", CheckStatus::kFail, "PLUGIN_NOT_FOUND",
                   fmt::format("no plugin this driver (CUDA {}) runs is installed: {}", driver.major_minor(), lines),
                   ev);
  }
  if (!better.empty()) {
    ev["better"] = better;
    ev["better_major"] = better_major;
    ev["serving"] = serving;
    return finding(
        2, "plugins", CheckStatus::kWarn, "L2_NEWER_PLUGIN_NOT_INSTALLED",
        fmt::format("{} serves; the driver would run {}, which is not installed ({})", serving, better, lines), ev);
  }
  return pass(2, "plugins", serving + " serves: " + lines, ev);
}

CheckResult check_driver_vs_runtime(const Layer2Facts& f, const PluginBuild& build) {
  Version driver = cuda_version(f.driver.driver_cuda_version);
  Version runtime = cuda_version(build.cuda_runtime_version);
  nlohmann::json ev = {{"driver_cuda", driver.known() ? driver.major_minor() : "unknown"},
                       {"driver_version", f.driver.driver_version},
                       {"runtime_built", runtime.major_minor()},
                       {"build_source", build.source}};
  if (!driver.known()) {
    return skipped(2, "driver_vs_runtime", "DOCTOR_PREREQUISITE_FAILED",
                   "not run: the driver's CUDA version is unknown (cuDriverGetVersion not available)",
                   {{"depends_on", "libcuda"}});
  }
  std::string what =
      fmt::format("driver supports CUDA {}, runtime built with CUDA {}", driver.major_minor(), runtime.major_minor());
  if (driver.major < runtime.major)
    return finding(2, "driver_vs_runtime", CheckStatus::kFail, "L2_DRIVER_TOO_OLD", what, ev);
  if (driver.major == runtime.major && driver.minor < runtime.minor)
    return finding(2, "driver_vs_runtime", CheckStatus::kWarn, "L2_DRIVER_OLDER_MINOR", what, ev);
  return pass(2, "driver_vs_runtime", what, ev);
}

CheckResult check_cuda_runtime(const Layer2Facts& f, const PluginBuild& build) {
  const PluginFacts& p = f.plugin;
  if (!p.api_ok) {
    return skipped(2, "cuda_runtime", "DOCTOR_PREREQUISITE_FAILED", "not run: the plugin did not load",
                   {{"depends_on", "plugin"}});
  }
  if (!p.runtime_queried) {
    CheckResult r = skipped(2, "cuda_runtime", "DOCTOR_CHECK_FAILED_TO_RUN", "the plugin has no query_runtime",
                            {{"error", "query_runtime is null in the plugin table"}});
    return r;
  }
  const SoPluginRuntimeInfo& r = p.runtime;
  nlohmann::json ev = {{"runtime_version", cuda_version(r.runtime_version).major_minor()},
                       {"runtime_built", cuda_version(build.cuda_runtime_version).major_minor()},
                       {"cudart_path", r.cudart_path[0] ? r.cudart_path : "(static)"},
                       {"device_count", r.device_count},
                       {"error", r.error},
                       {"error_code", r.error_code}};
  if (p.runtime_rc != 0) {
    return finding(2, "cuda_runtime", CheckStatus::kFail, "L2_CUDA_RUNTIME_INIT_FAILED",
                   fmt::format("CUDA runtime {} did not start: {}", cuda_version(r.runtime_version).major_minor(),
                               r.error[0] ? r.error : "no message"),
                   ev);
  }
  return pass(2, "cuda_runtime",
              fmt::format("CUDA runtime {} ({}), {} device(s)", cuda_version(r.runtime_version).major_minor(),
                          r.cudart_path[0] ? r.cudart_path : "static", r.device_count),
              ev);
}

// cuDNN is optional (the plugin loads it at run time): every cuDNN problem is a warning, the GPU serving from the
// -nocudnn rung meanwhile; the engine's ladder shows the step with the same finding.
CheckResult check_cudnn(const Layer2Facts& f, const PluginBuild& build) {
  const CudnnFacts& c = f.cudnn;
  Version built = cudnn_version(build.cudnn_version);
  Version runtime = cuda_version(build.cuda_runtime_version);
  std::string built_text = build.source == "assumed" ? std::to_string(built.major) : built.major_minor();
  nlohmann::json ev = to_json(c);
  ev["cudnn_built"] = built_text;
  ev["cudnn_major"] = built.major;
  ev["cudnn_major_built"] = built.major;
  ev["runtime_built"] = runtime.major_minor();
  ev["runtime_major"] = runtime.major;
  if (!c.loaded) {
    ev["dlopen_error"] = c.dlopen_error;
    if (!c.other_majors.empty()) {
      ev["cudnn_loaded"] = c.other_majors.front();
      ev["cudnn_path"] = c.other_majors.front();
      return finding(2, "cudnn", CheckStatus::kWarn, "L2_CUDNN_WRONG_MAJOR",
                     fmt::format("{} not found; only another major is installed: {}", c.soname, c.other_majors.front()),
                     ev);
    }
    return finding(2, "cudnn", CheckStatus::kWarn, "L2_CUDNN_MISSING",
                   fmt::format("cuDNN not found: {} is not on the loader path ({})", c.soname, c.dlopen_error), ev);
  }
  ev["cudnn_loaded"] = c.version.major_minor();
  ev["cudnn_path"] = c.path;
  if (f.plugin.runtime_queried && f.plugin.runtime.cudnn_path[0]) {
    // What the plugin itself reports (the library its cudnnGetVersion resolved to), as a cross-check.
    ev["plugin_reports"] = {{"version", cudnn_version(f.plugin.runtime.cudnn_version).str()},
                            {"path", f.plugin.runtime.cudnn_path}};
  }
  std::string loaded = fmt::format("cuDNN {} loaded from {}", c.version.major_minor(), c.path);
  if (c.version.known() && c.version.major != built.major) {
    return finding(2, "cudnn", CheckStatus::kWarn, "L2_CUDNN_WRONG_MAJOR",
                   fmt::format("{}, but we were built with cuDNN {}", loaded, built_text), ev);
  }
  if (c.cudart.known() && runtime.known() && c.cudart.major != runtime.major) {
    ev["cudnn_cudart"] = c.cudart.major_minor();
    return finding(2, "cudnn", CheckStatus::kWarn, "L2_CUDNN_CUDA_MISMATCH",
                   fmt::format("{} was built for CUDA {}, our runtime is CUDA {}", loaded, c.cudart.major_minor(),
                               runtime.major_minor()),
                   ev);
  }
  if (build.source != "assumed" && c.version.known() && c.version.compare(built) < 0) {
    return finding(2, "cudnn", CheckStatus::kWarn, "L2_CUDNN_OLDER_THAN_BUILT",
                   fmt::format("{} is older than {} we were built with", loaded, built_text), ev);
  }
  return pass(2, "cudnn", fmt::format("{} (built with {})", loaded, built_text), ev);
}

CheckResult check_cudnn_sublibraries(const Layer2Facts& f) {
  const CudnnFacts& c = f.cudnn;
  if (!c.loaded) {
    // cuDNN is optional (the check "cudnn" warns): nothing of it to check, and nothing above depends on it.
    return pass(2, "cudnn_sublibraries", "not applicable: libcudnn is not loaded (the GPU serves without cuDNN)",
                {{"depends_on", "cudnn"}});
  }
  nlohmann::json ev = to_json(c);
  ev["cudnn_path"] = c.path;
  std::vector<std::string> problems;
  for (const auto& s : c.sublibraries) {
    if (s.path.empty()) problems.push_back(s.soname + " missing");
  }
  ev["problem"] = problems;
  if (!problems.empty()) {
    std::string p;
    for (const auto& s : problems) p += (p.empty() ? "" : ", ") + s;
    return finding(2, "cudnn_sublibraries", CheckStatus::kWarn, "L2_CUDNN_SUBLIBRARY_MISSING",
                   "cuDNN sub-libraries: " + p, ev);
  }
  int elsewhere = 0;
  for (const auto& s : c.sublibraries) elsewhere += !s.same_folder;
  return pass(2, "cudnn_sublibraries",
              fmt::format("{} sub-libraries present{}", c.sublibraries.size(),
                          elsewhere ? fmt::format(" ({} outside {})", elsewhere, dirname_of(c.path)) : ""),
              ev);
}

CheckResult check_cublas(const Layer2Facts& f, const PluginBuild& build) {
  const CublasFacts& c = f.cublas;
  Version built = cublas_version(build.cublas_version);
  std::string built_text = build.source == "assumed" ? std::to_string(built.major) : built.major_minor();
  nlohmann::json ev = to_json(c);
  ev["cublas_built"] = built_text;
  ev["cublas_major"] = built.major;
  ev["cublas_major_built"] = built.major;
  if (!c.loaded) {
    ev["dlopen_error"] = c.dlopen_error;
    if (!c.other_majors.empty()) {
      ev["cublas_loaded"] = c.other_majors.front();
      ev["cublas_path"] = c.other_majors.front();
      return finding(2, "cublas", CheckStatus::kFail, "L2_CUBLAS_WRONG_MAJOR",
                     fmt::format("{} not found; only another major is installed: {}", c.soname, c.other_majors.front()),
                     ev);
    }
    return finding(2, "cublas", CheckStatus::kFail, "L2_CUBLAS_MISSING",
                   fmt::format("cuBLAS not found: {} is not on the loader path ({})", c.soname, c.dlopen_error), ev);
  }
  ev["cublas_loaded"] = c.version.major_minor();
  ev["cublas_path"] = c.path;
  if (f.plugin.runtime_queried && f.plugin.runtime.cublas_path[0]) {
    ev["plugin_reports"] = {{"version", cublas_version(f.plugin.runtime.cublas_version).str()},
                            {"path", f.plugin.runtime.cublas_path}};
  }
  if (!c.lt_loaded) {
    ev["dlopen_error"] = c.lt_error;
    return finding(2, "cublas", CheckStatus::kFail, "L2_CUBLAS_MISSING",
                   "libcublasLt not loadable next to " + c.path + ": " + c.lt_error, ev);
  }
  std::string loaded = fmt::format("cuBLAS {} loaded from {}", c.version.major_minor(), c.path);
  if (c.version.known() && c.version.major != built.major) {
    return finding(2, "cublas", CheckStatus::kFail, "L2_CUBLAS_WRONG_MAJOR",
                   fmt::format("{}, but we were built with cuBLAS {}", loaded, built_text), ev);
  }
  if (build.source != "assumed" && c.version.known() && c.version.compare(built) < 0) {
    return finding(2, "cublas", CheckStatus::kWarn, "L2_CUBLAS_OLDER_THAN_BUILT",
                   fmt::format("{} is older than {} we were built with", loaded, built_text), ev);
  }
  return pass(2, "cublas", fmt::format("{} (built with {})", loaded, built_text), ev);
}

CheckResult check_arch(const Layer2Facts& f, const PluginBuild& build) {
  const PluginFacts& p = f.plugin;
  if (!p.found) {
    return skipped(2, "arch", "DOCTOR_PREREQUISITE_FAILED", "not run: no plugin file to read architectures from",
                   {{"depends_on", "plugin"}});
  }
  if (f.driver.devices.empty()) {
    return skipped(2, "arch", "DOCTOR_PREREQUISITE_FAILED", "not run: no device compute capability known",
                   {{"depends_on", "devices"}});
  }
  bool from_file = p.fatbin.fatbins > 0 && !(p.fatbin.sass.empty() && p.fatbin.ptx.empty());
  std::vector<int> sass = from_file ? p.fatbin.sass : parse_arch_list(build.sass_archs);
  std::vector<int> ptx = from_file ? p.fatbin.ptx : parse_arch_list(build.ptx_archs);
  Version driver = cuda_version(f.driver.driver_cuda_version);
  Version runtime = cuda_version(build.cuda_runtime_version);
  CheckResult worst = pass(2, "arch", "");
  std::string summary;
  for (const auto& d : f.driver.devices) {
    int cc = d.cc_major * 10 + d.cc_minor, picked = 0;
    ArchMatch m = match_arch(cc, sass, ptx, &picked);
    nlohmann::json ev = {{"device", d.index},
                         {"device_name", d.name},
                         {"cc", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                         {"cc_arch", std::to_string(cc)},
                         {"sass", arch_list_str(sass)},
                         {"ptx", arch_list_str(ptx)},
                         {"archs_from", from_file ? "fatbinary in the plugin file" : "plugin build info"},
                         {"driver_cuda", driver.major_minor()},
                         {"runtime_built", runtime.major_minor()}};
    std::string dev = fmt::format("#{} {} cc {}.{}", d.index, d.name, d.cc_major, d.cc_minor);
    CheckResult r = pass(2, "arch", "", ev);
    if (m == ArchMatch::kSass) {
      r.summary = fmt::format("{}: SASS sm_{} present", dev, picked);
    } else if (m == ArchMatch::kPtxJit && driver.compare(runtime) < 0) {
      r = finding(2, "arch", CheckStatus::kFail, "L2_PTX_TOO_NEW_FOR_DRIVER",
                  fmt::format("{}: only PTX compute_{} fits, made by CUDA {} while the driver supports {}", dev, picked,
                              runtime.major_minor(), driver.major_minor()),
                  ev);
    } else if (m == ArchMatch::kPtxJit) {
      r = finding(2, "arch", CheckStatus::kWarn, "L2_PTX_JIT_ONLY",
                  fmt::format("{}: no SASS, PTX compute_{} will be JIT-compiled", dev, picked), ev);
    } else {
      r = finding(
          2, "arch", CheckStatus::kFail, "L2_NO_COMPATIBLE_ARCH",
          fmt::format("{}: no SASS or PTX usable (SASS {}, PTX {})", dev, arch_list_str(sass), arch_list_str(ptx)), ev);
    }
    summary += (summary.empty() ? "" : "; ") + r.summary;
    if (static_cast<int>(r.status) > static_cast<int>(worst.status) || worst.summary.empty()) worst = r;
  }
  worst.summary = summary;
  return worst;
}
}  // namespace

ArchMatch match_arch(int cc, const std::vector<int>& sass, const std::vector<int>& ptx, int* picked) {
  int best = -1;
  for (int s : sass)
    if (s / 10 == cc / 10 && s % 10 <= cc % 10 && s > best) best = s;
  if (best > 0) {
    if (picked) *picked = best;
    return ArchMatch::kSass;
  }
  for (int p : ptx)
    if (p <= cc && p > best) best = p;
  if (best > 0) {
    if (picked) *picked = best;
    return ArchMatch::kPtxJit;
  }
  return ArchMatch::kNone;
}

PluginBuild effective_build(const PluginFacts& plugin) {
  if (plugin.build.known) return plugin.build;
  PluginBuild b;
  b.known = true;
  b.source = "assumed";
  b.cuda_runtime_version = kDefaultCudart;
  b.cudnn_version = kDefaultCudnn;
  b.cublas_version = kDefaultCublas;
  return b;
}

Layer2Facts probe_layer2(const DriverFacts& driver, bool query_runtime, bool every_plugin) {
  Layer2Facts f;
  f.driver = driver;
  f.plugin = probe_plugin();  // first, so the library probes below return the files the plugin itself uses
  if (every_plugin) f.plugin_files = probe_plugin_files();
  PluginBuild build = effective_build(f.plugin);
  f.cudnn = probe_cudnn(cudnn_version(build.cudnn_version).major);
  f.cublas = probe_cublas(cublas_version(build.cublas_version).major);
  if (query_runtime) query_plugin_runtime(f.plugin);
  return f;
}

std::vector<CheckResult> evaluate_layer2(const Layer2Facts& facts) {
  PluginBuild build = effective_build(facts.plugin);
  std::vector<CheckResult> out;
  out.push_back(check_plugin_files(facts));
  out.push_back(check_plugin(facts.plugin));
  out.push_back(check_driver_vs_runtime(facts, build));
  out.push_back(check_cuda_runtime(facts, build));
  out.push_back(check_cudnn(facts, build));
  out.push_back(check_cudnn_sublibraries(facts));
  out.push_back(check_cublas(facts, build));
  out.push_back(check_arch(facts, build));
  return out;
}

}  // namespace steadyocr::doctor

// The child side of layers 3-4 and of the Vulkan chain: load the plugin, run one check, print one JSON line, exit at
// once.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "backends/cuda/diagnostics.h"
#include "doctor/device_checks.h"
#include "doctor/vulkan_chain.h"
#include "runtime/cuda_plugin.h"

namespace steadyocr::doctor {

nlohmann::json ChildCheckResult::to_json() const {
  if (!parts.empty()) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : parts) list.push_back(p.to_json());
    return {{"results", list}};
  }
  nlohmann::json j = {{"status", status}, {"code", code}, {"summary", summary}, {"evidence", evidence}};
  if (!check.empty()) j["check"] = check;
  return j;
}

ChildCheckResult ChildCheckResult::from_json(const nlohmann::json& j) {
  ChildCheckResult r;
  if (j.contains("results") && j["results"].is_array()) {
    for (const auto& p : j["results"]) r.parts.push_back(from_json(p));
    return r;
  }
  r.check = j.value("check", "");
  r.status = j.value("status", "skipped");
  if (r.status == "could_not_run") r.status = "skipped";
  r.code = j.value("code", "");
  r.summary = j.value("summary", "");
  if (j.contains("evidence") && j["evidence"].is_object()) r.evidence = j["evidence"];
  return r;
}

ChildCheckResult make_child_result(std::string status, std::string code, std::string summary, nlohmann::json evidence) {
  ChildCheckResult r;
  r.status = std::move(status);
  r.code = std::move(code);
  r.summary = std::move(summary);
  r.evidence = evidence.is_object() ? std::move(evidence) : nlohmann::json::object();
  return r;
}

bool fault_injected(const std::string& fault) {
  const char* env = std::getenv(STEADYOCR_DOCTOR_FAULT_ENV);
  if (!env) return false;
  return ("," + std::string(env) + ",").find("," + fault + ",") != std::string::npos;
}

Result<int64_t> free_device_bytes(const PluginFacts& plugin, int device) {
  if (!plugin.api_ok || !plugin.api->run_check) return unavailable("the plugin has no run_check");
  char buf[8192] = {};
  std::string args = nlohmann::json{{"device", device}}.dump();
  int rc = plugin.api->run_check("mem_info", args.c_str(), buf, sizeof(buf));
  auto j = nlohmann::json::parse(buf, nullptr, false);
  if (rc != 0 || j.is_discarded() || !j.contains("evidence")) return unavailable(std::string("mem_info: ") + buf);
  int64_t free_bytes = j["evidence"].value("free_bytes", int64_t{-1});
  if (free_bytes < 0) return unavailable("mem_info gave no free_bytes");
  return free_bytes;
}

bool is_plugin_check(const std::string& name) {
  for (const char* n : {"kernel_image", "cudnn_conv", "fp16", "streams", "memory", "mem_info", "budget"})
    if (name == n) return true;
  return false;
}

Result<std::shared_ptr<Backend>> create_plugin_backend(const PluginFacts& plugin, int device,
                                                       const std::string& precision, size_t budget_bytes) {
  if (!plugin.api_ok || !plugin.api->create_backend || !plugin.api->destroy_backend)
    return unavailable("the CUDA plugin is not loaded or has no create_backend");
  cuda::BackendConfig config = runtime::cuda_backend_config(precision, budget_bytes, device);
  // Where the plugin has no usable cuDNN the GPU serves from the -nocudnn rung: check that path (the cudnn checks
  // say why cuDNN is out).
  SoPluginRuntimeInfo rt{};
  if (plugin.api->query_runtime && plugin.api->query_runtime(&rt) == 0 && rt.cudnn_version == 0) config.cudnn = false;
  auto b = runtime::create_plugin_backend(plugin.api, config);
  if (!b.is_ok()) return unavailable(std::string("create_backend(") + precision + "): " + b.status().to_string());
  return b;
}

std::string code_for_backend_error(const Status& s) {
  // The backend names the cause itself (the CUDA plugin's statuses carry their finding): take it as it is.
  if (s.finding() && !s.finding()->code.empty()) return s.finding()->code;
  // Backends without findings (a status built from a library's error text): by the error names they report.
  const std::string& m = s.message();
  auto has = [&](const char* w) { return m.find(w) != std::string::npos; };
  if (has("no kernel image") || has("NoKernelImage") || has("NO_BINARY_FOR_GPU") || has("UnsupportedPtxVersion"))
    return "L3_NO_KERNEL_IMAGE";
  if (has("NOT_SUPPORTED") || has("not supported by cuDNN")) return "L3_CUDNN_NOT_SUPPORTED";
  if (s.code() == StatusCode::kDeviceFault || has("illegal address") || has("IllegalAddress") || has("ECC"))
    return "L3_STICKY_FAULT";
  if (s.code() == StatusCode::kOutOfMemory || has("out of memory")) return "L3_OUT_OF_MEMORY";
  if (has("CUDNN_STATUS")) return "L3_CUDNN_FAILED";
  if (has("CUBLAS_STATUS")) return "L3_CUBLAS_FAILED";
  return "L3_CUDA_ERROR";
}

namespace {
ChildCheckResult could_not_run(const std::string& why) {
  ChildCheckResult r;
  r.status = "skipped";
  r.code = "DOCTOR_CHECK_FAILED_TO_RUN";
  r.summary = why;
  r.evidence = {{"error", why}};
  return r;
}

ChildCheckResult run_plugin_check(const PluginFacts& plugin, const std::string& name, const std::string& args) {
  if (!plugin.api->run_check) return could_not_run("the plugin has no run_check");
  std::vector<char> buf(size_t{1} << 20, 0);
  int rc = plugin.api->run_check(name.c_str(), args.c_str(), buf.data(), buf.size());
  nlohmann::json j = nlohmann::json::parse(buf.data(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return could_not_run("run_check(" + name + ") returned " + std::to_string(rc) +
                         " with no JSON result: " + std::string(buf.data()).substr(0, 300));
  }
  ChildCheckResult r = ChildCheckResult::from_json(j);
  if (rc != 0) {  // the check could not run: keep what it said as evidence under the doctor's own code
    r.evidence["plugin_code"] = r.code;
    r.evidence["error"] = r.summary.empty() ? j.dump() : r.summary;
    r.status = "skipped";
    r.code = "DOCTOR_CHECK_FAILED_TO_RUN";
  }
  return r;
}

ChildCheckResult dispatch(const std::string& name, const std::string& args_json) {
  nlohmann::json args = nlohmann::json::parse(args_json.empty() ? "{}" : args_json, nullptr, false);
  if (args.is_discarded() || !args.is_object()) return could_not_run("--internal-args is not a JSON object");
  // The Vulkan chain needs no CUDA: it runs on machines without an NVIDIA driver, so before the CUDA plugin loads.
  if (name == kVulkanChainCheck) return vulkan_chain_child();
  PluginFacts plugin = probe_plugin();
  if (!plugin.api_ok) {
    std::string why = !plugin.found ? "plugin not found" : !plugin.loaded ? plugin.dlopen_error : plugin.api_problem;
    return could_not_run("cannot load the CUDA plugin in the check process: " + why);
  }
  // Fault: the whole check process stops answering, so the parent's watchdog has to kill it.
  if (name == "streams" && fault_injected("hang_child")) ::pause();
  // The plugin reads no environment: the injected faults travel with the check's arguments.
  if (const char* f = std::getenv(STEADYOCR_DOCTOR_FAULT_ENV); f && !args.contains("faults")) args["faults"] = f;
  if (is_plugin_check(name)) return run_plugin_check(plugin, name, args.dump());
  if (name == "backend_ops") return check_backend_ops(plugin, args, /*fp16=*/false);
  if (name == "backend_fp16") return check_backend_ops(plugin, args, /*fp16=*/true);
  if (name == "model_convs") return check_model_convs(plugin, args);
  if (name == "backend_workers") return check_backend_workers(plugin, args);
  return could_not_run("unknown check '" + name + "'");
}
}  // namespace

int run_internal_check(const std::string& name, const std::string& args_json) {
  ChildCheckResult r = dispatch(name, args_json);
  std::string line = r.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
  std::fflush(stderr);
  // Leave without destructors or atexit handlers: a hung worker thread or a lost CUDA context must not keep
  // this process from reporting.
  ::_exit(0);
}

}  // namespace steadyocr::doctor

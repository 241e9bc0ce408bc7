// Layers 3-4 from the parent's side: each check runs in a child process (this binary, re-executed with
// --internal-check) under a deadline; its JSON answer becomes CheckResults, and a child that hangs or
// dies becomes a finding of its own.
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <cstring>

#include "doctor/child.h"
#include "doctor/device_checks.h"
#include "doctor/layers.h"

namespace steadyocr::doctor {

namespace {
CheckStatus parse_status(const std::string& s) {
  if (s == "pass") return CheckStatus::kPass;
  if (s == "warn") return CheckStatus::kWarn;
  if (s == "fail") return CheckStatus::kFail;
  return CheckStatus::kSkipped;
}

std::string tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

void add_child_result(int level, const std::string& check, const ChildCheckResult& r, double ms,
                      std::vector<CheckResult>* out) {
  if (!r.parts.empty()) {
    for (const auto& p : r.parts) add_child_result(level, p.check.empty() ? check : p.check, p, ms, out);
    return;
  }
  CheckResult c = finding(level, check, parse_status(r.status), r.code, r.summary, r.evidence);
  c.evidence["child_ms"] = static_cast<int64_t>(ms);
  out->push_back(std::move(c));
}

// Runs one check in a child; `hang_code` is the finding when the watchdog has to kill it.
void run_in_child(const DeviceCheckOptions& o, int level, const std::string& check, const nlohmann::json& args,
                  int timeout_ms, const char* hang_code, std::vector<CheckResult>* out) {
  std::string exe = o.executable.empty() ? self_executable() : o.executable;
  ChildResult cr = run_child({exe, "doctor", "--internal-check", check, "--internal-args", args.dump()}, timeout_ms);
  nlohmann::json ev = {{"check", check}, {"deadline_ms", timeout_ms}, {"stderr_tail", tail(cr.err, 600)}};
  if (!cr.started) {
    ev["error"] = cr.start_error;
    out->push_back(
        skipped(level, check, "DOCTOR_CHECK_FAILED_TO_RUN", "could not start the check: " + cr.start_error, ev));
    return;
  }
  if (cr.timed_out) {
    ev["killed_by"] = "doctor watchdog (SIGKILL to the check's process group)";
    ev["stuck"] = "the whole check process";
    ev["workers"] = args.value("workers", 1);
    out->push_back(finding(level, check, CheckStatus::kFail, hang_code,
                           fmt::format("check '{}' did not finish within {} ms and was killed", check, timeout_ms),
                           ev));
    return;
  }
  if (cr.signal != 0) {
    ev["signal"] = fmt::format("{} ({})", cr.signal, strsignal(cr.signal));
    out->push_back(finding(level, check, CheckStatus::kFail, "L3_CHECK_CRASHED",
                           fmt::format("check '{}' died from signal {} ({})", check, cr.signal, strsignal(cr.signal)),
                           ev));
    return;
  }
  nlohmann::json j = nlohmann::json::parse(last_output_line(cr.out), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    ev["exit_code"] = cr.exit_code;
    ev["stdout_tail"] = tail(cr.out, 600);
    ev["error"] = fmt::format("exit code {}, no JSON result", cr.exit_code);
    out->push_back(skipped(level, check, "DOCTOR_CHECK_FAILED_TO_RUN",
                           fmt::format("check '{}' gave no result (exit code {})", check, cr.exit_code), ev));
    return;
  }
  add_child_result(level, check, ChildCheckResult::from_json(j), cr.elapsed_ms, out);
}

// False (and a skipped, optional entry added) when --only leaves `check` out.
bool selected(const DeviceCheckOptions& o, int level, const std::string& check, std::vector<CheckResult>* out) {
  if (o.only.empty() || o.only.count(check)) return true;
  CheckResult r = skipped(level, check, "DOCTOR_NOT_SELECTED", "not run: not selected by --only");
  r.required = false;
  out->push_back(std::move(r));
  return false;
}

nlohmann::json base_args(const DeviceCheckOptions& o) {
  return {{"device", o.device}, {"models_dir", o.models_dir}, {"det_size", o.det_size}};
}
}  // namespace

std::vector<CheckResult> run_layer3(const DeviceCheckOptions& o) {
  std::vector<CheckResult> out;
  nlohmann::json args = base_args(o);
  for (const char* check : {"kernel_image", "cudnn_conv", "backend_ops", "fp16", "backend_fp16"})
    if (selected(o, 3, check, &out)) run_in_child(o, 3, check, args, o.check_timeout_ms, "L3_KERNEL_HANG", &out);
  if (!selected(o, 3, "model_convs", &out)) return out;
  if (o.models_dir.empty()) {
    CheckResult r = skipped(3, "model_convs", "DOCTOR_NO_MODELS", "not run: no --models DIR given");
    r.required = false;
    out.push_back(std::move(r));
  } else {
    nlohmann::json margs = args;
    margs["time_budget_ms"] = std::max(10000, o.check_timeout_ms * 3 / 2);
    run_in_child(o, 3, "model_convs", margs, o.check_timeout_ms * 3, "L3_KERNEL_HANG", &out);
  }
  return out;
}

std::vector<CheckResult> run_layer4(const DeviceCheckOptions& o) {
  std::vector<CheckResult> out;
  nlohmann::json args = base_args(o);
  args["workers"] = o.workers;
  args["iterations"] = o.iterations;
  args["deadline_ms"] = o.watchdog_ms;
  // The check's own watchdog reports a hang with details; the child deadline is the backstop.
  if (selected(o, 4, "streams", &out))
    run_in_child(o, 4, "streams", args, o.watchdog_ms + std::min(30000, o.check_timeout_ms), "L4_STREAM_HANG", &out);
  if (selected(o, 4, "backend_workers", &out))
    run_in_child(o, 4, "backend_workers", args, o.watchdog_ms + o.check_timeout_ms, "L4_STREAM_HANG", &out);
  if (selected(o, 4, "memory", &out)) run_in_child(o, 4, "memory", args, o.check_timeout_ms, "L4_STREAM_HANG", &out);
  nlohmann::json budget = args;
  budget["bytes"] = static_cast<int64_t>(o.gpu_mem_budget_mb) << 20;
  if (selected(o, 4, "budget", &out)) run_in_child(o, 4, "budget", budget, o.check_timeout_ms, "L4_STREAM_HANG", &out);
  return out;
}

}  // namespace steadyocr::doctor

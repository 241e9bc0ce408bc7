#include "doctor/report.h"

#include <fmt/format.h>

namespace steadyocr::doctor {

const char* status_name(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass:
      return "pass";
    case CheckStatus::kWarn:
      return "warn";
    case CheckStatus::kFail:
      return "fail";
    case CheckStatus::kSkipped:
      return "skipped";
  }
  return "?";
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarn:
      return "warn";
    case Severity::kFail:
      return "fail";
  }
  return "?";
}

Severity severity_of(CheckStatus s) {
  if (s == CheckStatus::kFail) return Severity::kFail;
  if (s == CheckStatus::kWarn) return Severity::kWarn;
  return Severity::kInfo;
}

const char* layer_name(int level) {
  switch (level) {
    case 1:
      return "visibility";
    case 2:
      return "abi";
    case 3:
      return "kernels";
    case 4:
      return "streams";
  }
  return "?";
}

const char* layer_status_name(LayerStatus s) {
  switch (s) {
    case LayerStatus::kPass:
      return "pass";
    case LayerStatus::kWarn:
      return "warn";
    case LayerStatus::kFail:
      return "fail";
    case LayerStatus::kIncomplete:
      return "incomplete";
    case LayerStatus::kNotRun:
      return "not_run";
  }
  return "?";
}

CheckResult pass(int level, std::string check, std::string summary, nlohmann::json evidence) {
  return finding(level, std::move(check), CheckStatus::kPass, "", std::move(summary), std::move(evidence));
}

CheckResult finding(int level, std::string check, CheckStatus status, std::string code, std::string summary,
                    nlohmann::json evidence) {
  CheckResult r;
  r.level = level;
  r.check = std::move(check);
  r.status = status;
  r.severity = severity_of(status);
  r.code = std::move(code);
  r.summary = std::move(summary);
  r.evidence = evidence.is_null() ? nlohmann::json::object() : std::move(evidence);
  return r;
}

CheckResult skipped(int level, std::string check, std::string code, std::string reason, nlohmann::json evidence) {
  CheckResult r =
      finding(level, std::move(check), CheckStatus::kSkipped, std::move(code), std::move(reason), std::move(evidence));
  return r;
}

LayerStatus summarize_layer(const std::vector<CheckResult>& checks) {
  bool warn = false, incomplete = false;
  for (const auto& c : checks) {
    if (c.status == CheckStatus::kFail) return LayerStatus::kFail;
    if (c.status == CheckStatus::kWarn) warn = true;
    if (c.status == CheckStatus::kSkipped && c.required) incomplete = true;
  }
  if (incomplete) return LayerStatus::kIncomplete;
  return warn ? LayerStatus::kWarn : LayerStatus::kPass;
}

bool layer_ok(LayerStatus s) {
  return s == LayerStatus::kPass || s == LayerStatus::kWarn;
}

namespace {
// The first failing check of a layer (or the first required skipped one), for the verdict.
const CheckResult* first_problem(const LayerResult& layer) {
  for (const auto& c : layer.checks)
    if (c.status == CheckStatus::kFail) return &c;
  for (const auto& c : layer.checks)
    if (c.status == CheckStatus::kSkipped && c.required) return &c;
  return nullptr;
}
}  // namespace

void finalize(DoctorReport& report) {
  report.passed_level = 0;
  bool chain_ok = true;
  int warnings = 0;
  const LayerResult* broken = nullptr;
  for (auto& layer : report.layers) {
    if (layer.status != LayerStatus::kNotRun || !layer.checks.empty()) layer.status = summarize_layer(layer.checks);
    if (layer.checks.empty() && layer.not_run_reason.empty()) layer.status = LayerStatus::kNotRun;
    for (const auto& c : layer.checks) warnings += c.status == CheckStatus::kWarn;
    if (chain_ok && layer.level <= report.requested_level) {
      if (layer_ok(layer.status)) {
        report.passed_level = layer.level;
      } else {
        chain_ok = false;
        broken = &layer;
      }
    }
  }
  report.ok = report.passed_level >= report.requested_level;
  if (report.ok) {
    report.verdict = fmt::format("GPU checks passed up to level {} ({}){}", report.requested_level,
                                 layer_name(report.requested_level),
                                 warnings ? fmt::format(", with {} warning(s) to read below", warnings) : "");
    return;
  }
  if (!broken) {
    report.verdict = "no layer ran";
    return;
  }
  // Every failing check of the broken layer, in check order (the most basic first).
  std::string what;
  for (const auto& c : broken->checks) {
    if (c.status != CheckStatus::kFail) continue;
    what += fmt::format("{}{}: {}", what.empty() ? "" : "; ", c.code.empty() ? c.check : c.code, c.summary);
  }
  if (what.empty()) {
    const CheckResult* c = first_problem(*broken);
    what = c ? fmt::format("{} (could not run): {}", c->code.empty() ? c->check : c->code, c->summary)
             : std::string(layer_status_name(broken->status));
  }
  report.verdict = fmt::format(
      "layer {} ({}) {}: {}. Without a working GPU steadyocr runs on the CPU backend (slower, and said so in "
      "every result); --require-gpu makes that an error",
      broken->level, layer_name(broken->level),
      broken->status == LayerStatus::kIncomplete ? "could not be verified" : "failed", what);
}

int exit_code(const DoctorReport& report) {
  return report.ok ? 0 : 1;
}

}  // namespace steadyocr::doctor

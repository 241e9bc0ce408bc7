// The human form of a doctor report: a table (layer, check, status, code, evidence, fix), the Vulkan block, the
// findings in full, and the verdict.
#include <fmt/format.h>

#include "doctor/doctor.h"
#include "doctor/vulkan_chain.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::doctor {

namespace {
// Cuts to `width` columns (bytes; the texts are ASCII apart from rare paths), marking the cut.
std::string fit(const std::string& s, size_t width) {
  std::string one_line = s;
  for (auto& ch : one_line)
    if (ch == '\n' || ch == '\t') ch = ' ';
  if (one_line.size() <= width) return one_line;
  return one_line.substr(0, width - 3) + "...";
}

std::string upper(const char* s) {
  std::string u = s;
  for (auto& ch : u) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return u;
}

// Wraps `text` at `width` columns, every line after the first indented by `indent`.
std::string wrap(const std::string& text, size_t width, const std::string& indent) {
  std::string out, line;
  size_t i = 0;
  while (i < text.size()) {
    size_t sp = text.find(' ', i);
    std::string word = text.substr(i, sp == std::string::npos ? std::string::npos : sp - i);
    i = sp == std::string::npos ? text.size() : sp + 1;
    if (!line.empty() && line.size() + 1 + word.size() > width) {
      out += line + "\n" + indent;
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}
}  // namespace

std::string render_report_text(const DoctorReport& report) {
  constexpr size_t kCheckW = 20, kStatusW = 7, kCodeW = 30, kEvidenceW = 56, kFixW = 48;
  std::string out =
      fmt::format("steadyocr doctor {} - level {} requested\n\n", STEADYOCR_VERSION, report.requested_level);
  out += fmt::format("{:<13} {:<{}} {:<{}} {:<{}} {:<{}} {}\n", "LAYER", "CHECK", kCheckW, "STATUS", kStatusW, "CODE",
                     kCodeW, "EVIDENCE", kEvidenceW, "FIX");
  for (const auto& layer : report.layers) {
    std::string lname = fmt::format("{} {}", layer.level, layer_name(layer.level));
    if (layer.checks.empty()) {
      out += fmt::format("{:<13} ({})\n", lname,
                         layer.not_run_reason.empty() ? "not run" : "not run: " + layer.not_run_reason);
      continue;
    }
    for (const auto& c : layer.checks) {
      out += fmt::format("{:<13} {:<{}} {:<{}} {:<{}} {:<{}} {}\n", lname, fit(c.check, kCheckW), kCheckW,
                         upper(status_name(c.status)), kStatusW, c.code.empty() ? "-" : fit(c.code, kCodeW), kCodeW,
                         fit(c.summary, kEvidenceW), kEvidenceW, c.fix.empty() ? "" : fit(c.fix, kFixW));
      lname.clear();
    }
  }
  // The Vulkan chain: its own block, same columns, then which CUDA device each Vulkan device is.
  const VulkanReport& vk = report.vulkan;
  out += "\nVulkan (the vulkan rung; warnings only: the exit status follows layers 1-4)\n";
  if (!vk.ran) out += fmt::format("{:<13} ({})\n", "vulkan", vk.not_run_reason.empty() ? "not run" : vk.not_run_reason);
  std::string vname = "vulkan";
  for (const auto& c : vk.checks) {
    out += fmt::format("{:<13} {:<{}} {:<{}} {:<{}} {:<{}} {}\n", vname, fit(c.check, kCheckW), kCheckW,
                       upper(status_name(c.status)), kStatusW, c.code.empty() ? "-" : fit(c.code, kCodeW), kCodeW,
                       fit(c.summary, kEvidenceW), kEvidenceW, c.fix.empty() ? "" : fit(c.fix, kFixW));
    vname.clear();
  }
  for (const auto& d : vk.devices) out += "  " + link_text(d) + "\n";
  if (vk.ran) out += "  " + wrap(vk.summary, 116, "    ") + "\n";

  std::string details;
  auto add_details = [&](const CheckResult& c, const std::string& where) {
    if (c.code.empty() || (c.status == CheckStatus::kSkipped && c.code == "DOCTOR_PREREQUISITE_FAILED")) return;
    details += fmt::format("\n[{}] {}  ({}, check {})\n", upper(status_name(c.status)), c.code, where, c.check);
    details += "  seen: " + wrap(c.summary, 110, "        ") + "\n";
    details += "  fix:  " + wrap(c.remediation, 110, "        ") + "\n";
  };
  for (const auto& layer : report.layers)
    for (const auto& c : layer.checks) add_details(c, fmt::format("layer {} {}", c.level, layer_name(c.level)));
  for (const auto& c : vk.checks) add_details(c, "vulkan");
  if (!details.empty()) out += "\nFindings\n" + details;
  out += "\n" + wrap("Verdict: " + report.verdict + ".", 118, "  ") + "\n";
  out += fmt::format("Exit status {}: level {} requested, layers passed up to {}.\n", exit_code(report),
                     report.requested_level, report.passed_level);
  return out;
}

}  // namespace steadyocr::doctor

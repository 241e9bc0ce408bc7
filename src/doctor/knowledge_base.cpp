#include "doctor/knowledge_base.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "doctor/knowledge_base_json.h"

namespace steadyocr::doctor {

namespace {
Result<Severity> parse_severity(const std::string& s) {
  if (s == "info") return Severity::kInfo;
  if (s == "warn") return Severity::kWarn;
  if (s == "fail") return Severity::kFail;
  return invalid_argument("severity must be info|warn|fail, got '" + s + "'");
}

std::string value_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_array()) {
    std::string out;
    for (const auto& e : v) out += (out.empty() ? "" : ", ") + value_text(e);
    return out.empty() ? "(none)" : out;
  }
  if (v.is_null()) return "(unknown)";
  return v.dump();
}
}  // namespace

Result<KnowledgeBase> KnowledgeBase::parse(const std::string& json_text) {
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return invalid_argument("knowledge base: not valid JSON");
  KnowledgeBase kb;
  kb.schema_version_ = j.value("schema_version", 0);
  if (j.contains("classes") && j["classes"].is_object()) {
    for (auto& [k, v] : j["classes"].items())
      if (v.is_string()) kb.classes_[k] = v.get<std::string>();
  }
  if (!j.contains("codes") || !j["codes"].is_object()) return invalid_argument("knowledge base: no 'codes' object");
  for (auto& [code, e] : j["codes"].items()) {
    if (!e.is_object()) return invalid_argument("knowledge base: entry " + code + " is not an object");
    KbEntry entry;
    entry.code = code;
    for (const char* field : {"class", "title", "meaning", "fix", "remediation", "severity"}) {
      if (!e.contains(field) || !e[field].is_string() || e[field].get<std::string>().empty())
        return invalid_argument(fmt::format("knowledge base: entry {} lacks the text field '{}'", code, field));
    }
    if (!e.contains("level") || !e["level"].is_number_integer())
      return invalid_argument("knowledge base: entry " + code + " lacks an integer 'level'");
    entry.level = e["level"].get<int>();
    auto sev = parse_severity(e["severity"].get<std::string>());
    if (!sev.is_ok()) return sev.status().with_context("knowledge base: entry " + code);
    entry.severity = *sev;
    entry.failure_class = e["class"].get<std::string>();
    if (!kb.classes_.count(entry.failure_class))
      return invalid_argument(
          fmt::format("knowledge base: entry {} names unknown class '{}'", code, entry.failure_class));
    entry.title = e["title"].get<std::string>();
    entry.meaning = e["meaning"].get<std::string>();
    entry.fix = e["fix"].get<std::string>();
    entry.remediation = e["remediation"].get<std::string>();
    kb.entries_[code] = std::move(entry);
  }
  return kb;
}

const KnowledgeBase& KnowledgeBase::builtin() {
  static const KnowledgeBase kb = [] {
    auto r = parse(kKnowledgeBaseJson);
    if (!r.is_ok()) {
      // The embedded text is checked by the tests; reaching this is a build bug, so say it and stop.
      std::fprintf(stderr, "steadyocr: embedded doctor knowledge base is invalid: %s\n",
                   r.status().to_string().c_str());
      std::abort();
    }
    return std::move(r).value();
  }();
  return kb;
}

const KbEntry* KnowledgeBase::find(const std::string& code) const {
  auto it = entries_.find(code);
  return it == entries_.end() ? nullptr : &it->second;
}

std::string fill_placeholders(const std::string& text, const nlohmann::json& evidence) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    size_t open = text.find('{', i);
    if (open == std::string::npos) break;
    size_t close = text.find('}', open + 1);
    if (close == std::string::npos) break;
    std::string name = text.substr(open + 1, close - open - 1);
    bool is_name =
        !name.empty() && name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
    out.append(text, i, open - i);
    if (!is_name) {
      out.append(text, open, close - open + 1);
    } else if (evidence.is_object() && evidence.contains(name)) {
      out += value_text(evidence[name]);
    } else {
      out += "(unknown)";
    }
    i = close + 1;
  }
  out.append(text, i, std::string::npos);
  return out;
}

void annotate(CheckResult& check, const KnowledgeBase& kb) {
  if (check.code.empty()) return;
  const KbEntry* e = kb.find(check.code);
  if (!e) {
    check.failure_class = "doctor";
    check.fix = "unknown code";
    check.remediation = "no knowledge-base entry for " + check.code + " (a steadyocr bug: please report it)";
    return;
  }
  check.failure_class = e->failure_class;
  check.fix = fill_placeholders(e->fix, check.evidence);
  check.remediation = fill_placeholders(e->remediation, check.evidence);
}

}  // namespace steadyocr::doctor

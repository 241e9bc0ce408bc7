// The failure knowledge base: for every finding code, its class, meaning and remediation text. The data
// lives in src/doctor/knowledge_base.json and is embedded at build time.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <string>

#include "core/status.h"
#include "doctor/report.h"

namespace steadyocr::doctor {

struct KbEntry {
  std::string code;
  int level = 1;
  Severity severity = Severity::kFail;  // the severity the code normally carries
  std::string failure_class;
  std::string title;
  std::string meaning;
  std::string fix;          // short, for the table
  std::string remediation;  // full, with {evidence} placeholders
};

class KnowledgeBase {
 public:
  // The embedded knowledge base (parsed once; a parse failure is a build bug and aborts loudly in tests).
  static const KnowledgeBase& builtin();
  // Parses knowledge-base JSON text; errors name the entry and field.
  static Result<KnowledgeBase> parse(const std::string& json_text);

  // The entry for a code, or null when the code is unknown.
  const KbEntry* find(const std::string& code) const;
  const std::map<std::string, KbEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& classes() const { return classes_; }
  int schema_version() const { return schema_version_; }

 private:
  int schema_version_ = 0;
  std::map<std::string, KbEntry> entries_;
  std::map<std::string, std::string> classes_;
};

// Replaces each {name} in `text` with evidence[name] (strings as is, numbers and arrays printed); names
// without evidence become "(unknown)".
std::string fill_placeholders(const std::string& text, const nlohmann::json& evidence);

// Fills failure_class, fix and remediation of a check from the knowledge base (checks without a code
// are left alone). An unknown code gets a remediation that says so, never an empty one.
void annotate(CheckResult& check, const KnowledgeBase& kb);

}  // namespace steadyocr::doctor

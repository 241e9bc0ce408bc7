#include "core/metrics.h"

#include <fmt/format.h>

#include <mutex>

namespace steadyocr::metrics {
namespace {

struct Family {
  std::string help;
  bool is_counter = true;
  std::map<Labels, double> values;
};

std::mutex g_mu;
std::map<std::string, Family>& families() {
  static std::map<std::string, Family> f;
  return f;
}

std::string render_labels(const Labels& l) {
  if (l.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < l.size(); ++i) {
    if (i) s += ",";
    s += l[i].first + "=\"";
    for (char c : l[i].second) {
      if (c == '"' || c == '\\') s += '\\';
      if (c == '\n') {
        s += "\\n";
        continue;
      }
      s += c;
    }
    s += "\"";
  }
  return s + "}";
}

}  // namespace

void inc(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  families()[name].values[labels] += v;
}

void set_gauge(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  f.is_counter = false;
  f.values[labels] = v;
}

double value(const std::string& name, const Labels& labels) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = families().find(name);
  if (it == families().end()) return 0;
  auto jt = it->second.values.find(labels);
  return jt == it->second.values.end() ? 0 : jt->second;
}

double total(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = families().find(name);
  if (it == families().end()) return 0;
  double s = 0;
  for (auto& [k, v] : it->second.values) s += v;
  return s;
}

void describe(const std::string& name, const std::string& help, bool is_counter) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  f.help = help;
  f.is_counter = is_counter;
}

std::string prometheus_text() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string out;
  for (auto& [name, f] : families()) {
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", name, f.help);
    out += fmt::format("# TYPE {} {}\n", name, f.is_counter ? "counter" : "gauge");
    for (auto& [labels, v] : f.values) out += fmt::format("{}{} {}\n", name, render_labels(labels), v);
  }
  return out;
}

void reset_for_testing() {
  std::lock_guard<std::mutex> lock(g_mu);
  families().clear();
}

}  // namespace steadyocr::metrics

#include "core/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <mutex>

namespace steadyocr::metrics {
namespace {

enum class Kind { kCounter, kGauge, kHistogram };

struct Histogram {
  std::vector<uint64_t> counts;  // per bucket, not cumulative; one more than the bounds (+Inf)
  double sum = 0;
  uint64_t count = 0;
};

struct Family {
  std::string help;
  Kind kind = Kind::kCounter;
  std::map<Labels, double> values;
  std::vector<double> bounds;  // histograms
  std::map<Labels, Histogram> histograms;
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

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kCounter:
      return "counter";
    case Kind::kGauge:
      return "gauge";
    case Kind::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void render_histogram(const std::string& name, const Family& f, std::string* out) {
  for (auto& [labels, h] : f.histograms) {
    uint64_t cumulative = 0;
    for (size_t b = 0; b <= f.bounds.size(); ++b) {
      cumulative += h.counts[b];
      Labels with = labels;
      with.emplace_back("le", b < f.bounds.size() ? fmt::format("{}", f.bounds[b]) : "+Inf");
      *out += fmt::format("{}_bucket{} {}\n", name, render_labels(with), cumulative);
    }
    *out += fmt::format("{}_sum{} {}\n", name, render_labels(labels), h.sum);
    *out += fmt::format("{}_count{} {}\n", name, render_labels(labels), h.count);
  }
}

}  // namespace

void inc(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  families()[name].values[labels] += v;
}

void set_gauge(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  f.kind = Kind::kGauge;
  f.values[labels] = v;
}

void set_counter(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  f.kind = Kind::kCounter;
  f.values[labels] = v;
}

void observe(const std::string& name, const Labels& labels, double v, const std::vector<double>& buckets) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  if (f.kind != Kind::kHistogram) {
    f.kind = Kind::kHistogram;
    f.bounds = buckets;
  }
  Histogram& h = f.histograms[labels];
  if (h.counts.empty()) h.counts.assign(f.bounds.size() + 1, 0);
  const size_t b = std::lower_bound(f.bounds.begin(), f.bounds.end(), v) - f.bounds.begin();  // le: v <= bound
  ++h.counts[b];
  h.sum += v;
  ++h.count;
}

double value(const std::string& name, const Labels& labels) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = families().find(name);
  if (it == families().end()) return 0;
  if (it->second.kind == Kind::kHistogram) {
    auto ht = it->second.histograms.find(labels);
    return ht == it->second.histograms.end() ? 0 : static_cast<double>(ht->second.count);
  }
  auto jt = it->second.values.find(labels);
  return jt == it->second.values.end() ? 0 : jt->second;
}

double total(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = families().find(name);
  if (it == families().end()) return 0;
  double s = 0;
  for (auto& [k, v] : it->second.values) s += v;
  for (auto& [k, h] : it->second.histograms) s += static_cast<double>(h.count);
  return s;
}

void describe(const std::string& name, const std::string& help, bool is_counter) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  f.help = help;
  if (f.kind != Kind::kHistogram) f.kind = is_counter ? Kind::kCounter : Kind::kGauge;
}

std::string prometheus_text() {
  std::lock_guard<std::mutex> lock(g_mu);
  std::string out;
  for (auto& [name, f] : families()) {
    if (!f.help.empty()) out += fmt::format("# HELP {} {}\n", name, f.help);
    out += fmt::format("# TYPE {} {}\n", name, kind_name(f.kind));
    if (f.kind == Kind::kHistogram) {
      render_histogram(name, f, &out);
      continue;
    }
    for (auto& [labels, v] : f.values) out += fmt::format("{}{} {}\n", name, render_labels(labels), v);
  }
  return out;
}

void reset_for_testing() {
  std::lock_guard<std::mutex> lock(g_mu);
  families().clear();
}

}  // namespace steadyocr::metrics

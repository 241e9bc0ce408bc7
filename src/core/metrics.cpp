#include "core/metrics.h"

#include <prometheus/client_metric.h>
#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <limits>
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

prometheus::MetricType metric_type(Kind k) {
  switch (k) {
    case Kind::kCounter:
      return prometheus::MetricType::Counter;
    case Kind::kGauge:
      return prometheus::MetricType::Gauge;
    case Kind::kHistogram:
      return prometheus::MetricType::Histogram;
  }
  return prometheus::MetricType::Untyped;
}

std::vector<prometheus::ClientMetric::Label> client_labels(const Labels& labels) {
  std::vector<prometheus::ClientMetric::Label> out;
  out.reserve(labels.size());
  for (const auto& [name, value] : labels) out.push_back({name, value});
  return out;
}

// One family in prometheus-cpp's terms (its TextSerializer writes the exposition: escaping, `le` buckets, +Inf).
prometheus::MetricFamily client_family(const std::string& name, const Family& f) {
  prometheus::MetricFamily out;
  out.name = name;
  out.help = f.help;
  out.type = metric_type(f.kind);
  if (f.kind == Kind::kHistogram) {
    for (const auto& [labels, h] : f.histograms) {
      prometheus::ClientMetric m;
      m.label = client_labels(labels);
      m.histogram.sample_count = h.count;
      m.histogram.sample_sum = h.sum;
      uint64_t cumulative = 0;
      for (size_t b = 0; b <= f.bounds.size(); ++b) {
        cumulative += h.counts[b];
        const double bound = b < f.bounds.size() ? f.bounds[b] : std::numeric_limits<double>::infinity();
        m.histogram.bucket.push_back({cumulative, bound});
      }
      out.metric.push_back(std::move(m));
    }
    return out;
  }
  for (const auto& [labels, v] : f.values) {
    prometheus::ClientMetric m;
    m.label = client_labels(labels);
    (f.kind == Kind::kGauge ? m.gauge.value : m.counter.value) = v;
    out.metric.push_back(std::move(m));
  }
  return out;
}

}  // namespace

void inc(const std::string& name, const Labels& labels, double v) {
  std::lock_guard<std::mutex> lock(g_mu);
  families()[name].values[labels] += v;
}

void inc_each(const std::string& name, const std::string& key,
              const std::vector<std::pair<std::string, double>>& values) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto& f = families()[name];
  for (const auto& [label, v] : values) f.values[Labels{{key, label}}] += v;
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
  std::vector<prometheus::MetricFamily> out;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    out.reserve(families().size());
    for (const auto& [name, f] : families()) out.push_back(client_family(name, f));
  }
  return prometheus::TextSerializer().Serialize(out);
}

void reset_for_testing() {
  std::lock_guard<std::mutex> lock(g_mu);
  families().clear();
}

}  // namespace steadyocr::metrics

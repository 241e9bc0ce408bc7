// Process-wide metrics (counters, gauges, histograms) with labels, rendered in the Prometheus text format by
// prometheus-cpp's TextSerializer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace steadyocr::metrics {

using Labels = std::vector<std::pair<std::string, std::string>>;

// Adds `v` to the counter `name{labels}` (created at zero on first use).
void inc(const std::string& name, const Labels& labels = {}, double v = 1.0);
// Adds each value of `values` to the counter `name{key=<its label>}`, under one lock (a build's per-op times).
void inc_each(const std::string& name, const std::string& key,
              const std::vector<std::pair<std::string, double>>& values);
void set_gauge(const std::string& name, const Labels& labels, double v);
// Sets the counter `name{labels}` to `v`: a count kept by another component (a supervisor's worker restarts),
// copied in before rendering. The caller keeps it monotonic.
void set_counter(const std::string& name, const Labels& labels, double v);
// Records `v` in the histogram `name{labels}`; `buckets` are the upper bounds, ascending (+Inf is implied). The first
// observation of a family fixes its buckets. Rendered as name_bucket{..., le}, name_sum and name_count.
void observe(const std::string& name, const Labels& labels, double v, const std::vector<double>& buckets);
// Current value (a histogram's observation count), 0 when never touched.
double value(const std::string& name, const Labels& labels = {});
// Sum over every label set of `name`.
double total(const std::string& name);
// Registers help text shown in the exposition.
void describe(const std::string& name, const std::string& help, bool is_counter = true);
std::string prometheus_text();
// For tests: drop every value.
void reset_for_testing();

}  // namespace steadyocr::metrics

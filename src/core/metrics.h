// Process-wide metrics (counters, gauges) with labels, rendered as Prometheus text.
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
void set_gauge(const std::string& name, const Labels& labels, double v);
// Current value, 0 when never touched.
double value(const std::string& name, const Labels& labels = {});
// Sum over every label set of `name`.
double total(const std::string& name);
// Registers help text shown in the exposition.
void describe(const std::string& name, const std::string& help, bool is_counter = true);
std::string prometheus_text();
// For tests: drop every value.
void reset_for_testing();

}  // namespace steadyocr::metrics

#include "engine/result_format.h"

#include <cmath>

namespace steadyocr::engine {
namespace {

// Rounds to `digits` decimals; dividing by a power of ten (not multiplying by 0.01) gives the double that
// prints shortest ("58.3", not "58.300000000000004").
double rounded(double v, int digits) {
  const double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

// Integral coordinates print as integers ("218", not "218.0").
nlohmann::ordered_json coordinate(float v) {
  if (std::floor(v) == v && std::abs(v) < 1e9) return static_cast<int64_t>(v);
  return rounded(v, 1);
}

std::string dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

// Tabs and line breaks inside recognised text would break the TSV/text layout.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

}  // namespace

bool parse_output_format(const std::string& name, OutputFormat* out) {
  if (name == "json")
    *out = OutputFormat::kJson;
  else if (name == "jsonl")
    *out = OutputFormat::kJsonl;
  else if (name == "tsv")
    *out = OutputFormat::kTsv;
  else if (name == "text")
    *out = OutputFormat::kText;
  else
    return false;
  return true;
}

nlohmann::ordered_json event_to_json(const LadderEvent& e) {
  nlohmann::ordered_json f = {{"from", e.from}, {"to", e.to},       {"reason", e.reason}, {"detail", e.detail},
                              {"fix", e.fix},   {"climb", e.climb}, {"time", e.time}};
  if (!e.gpu.empty()) f["gpu"] = e.gpu;
  return f;
}

nlohmann::ordered_json gpu_state_to_json(const GpuState& g) {
  nlohmann::ordered_json j = {
      {"gpu", g.gpu},   {"device", g.device},       {"name", g.name},           {"in_service", g.in_service},
      {"rung", g.rung}, {"in_flight", g.in_flight}, {"images_ok", g.images_ok}, {"images_failed", g.images_failed}};
  j["last_inference_age_ms"] =
      g.last_ok_age_ms < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(std::lround(g.last_ok_age_ms));
  if (!g.in_service) {
    nlohmann::ordered_json why = nlohmann::ordered_json::array();
    for (const auto& ev : standing_events(g.events)) why.push_back(event_to_json(ev));
    j["out_of_service"] = why;
  }
  return j;
}

nlohmann::ordered_json outcome_to_json(const ImageOutcome& o) {
  nlohmann::ordered_json lines = nlohmann::ordered_json::array();
  for (const auto& l : o.result.lines) {
    nlohmann::ordered_json box = nlohmann::ordered_json::array();
    for (const auto& p : l.box) box.push_back({coordinate(p.x), coordinate(p.y)});
    lines.push_back({{"text", l.text}, {"score", rounded(l.score, 4)}, {"box", box}});
  }
  const pipeline::StageTimes& t = o.result.timings;
  nlohmann::ordered_json fallbacks = nlohmann::ordered_json::array();
  for (const auto& e : o.fallbacks) fallbacks.push_back(event_to_json(e));
  nlohmann::ordered_json j = {{"lines", lines},
                              {"backend", o.result.backend},
                              {"rung", o.rung},
                              {"fallbacks", fallbacks},
                              {"timings_ms",
                               {{"decode", rounded(t.decode, 2)},
                                {"det", rounded(t.det, 2)},
                                {"post", rounded(t.post, 2)},
                                {"cls", rounded(t.cls, 2)},
                                {"rec", rounded(t.rec, 2)},
                                {"total", rounded(t.total, 2)}}}};
  if (!o.gpu.empty()) j["gpu"] = o.gpu;
  if (o.ok) {
    j["width"] = o.result.width;
    j["height"] = o.result.height;
    const pipeline::CallStats& c = o.result.calls;
    j["calls"] = {{"det_images", c.det_images},
                  {"rec_calls", c.rec_calls},
                  {"rec_rows", c.rec_rows},
                  {"rec_shared", c.rec_shared}};
  } else {
    j["error"] = o.error;
  }
  return j;
}

std::string tsv_header() {
  return "image\tline\tscore\tbox\ttext\n";
}

std::string format_outcome(const ImageOutcome& o, OutputFormat format) {
  std::string out;
  switch (format) {
    case OutputFormat::kJson:
    case OutputFormat::kJsonl: {
      nlohmann::ordered_json j = {{"image", o.name}};
      j.update(outcome_to_json(o));
      return dump(j) + "\n";
    }
    case OutputFormat::kTsv:
      if (!o.ok) return one_line(o.name) + "\terror\t\t\t" + one_line(o.error) + "\n";
      for (size_t i = 0; i < o.result.lines.size(); ++i) {
        const pipeline::TextLine& l = o.result.lines[i];
        std::string box;
        for (const auto& p : l.box) {
          if (!box.empty()) box += ',';
          box += coordinate(p.x).dump() + "," + coordinate(p.y).dump();
        }
        char score[32];
        std::snprintf(score, sizeof(score), "%.4f", l.score);
        out += one_line(o.name) + "\t" + std::to_string(i) + "\t" + score + "\t" + box + "\t" + one_line(l.text) + "\n";
      }
      return out;
    case OutputFormat::kText:
      out = "== " + o.name + " ==\n";
      if (!o.ok) return out + "[error] " + one_line(o.error) + "\n";
      for (const auto& l : o.result.lines) out += one_line(l.text) + "\n";
      return out;
  }
  return out;
}

std::string format_outcomes(const std::vector<ImageOutcome>& outcomes, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    for (const auto& o : outcomes) doc[o.name] = outcome_to_json(o);
    return dump(doc) + "\n";
  }
  std::string out = format == OutputFormat::kTsv ? tsv_header() : "";
  for (const auto& o : outcomes) out += format_outcome(o, format);
  return out;
}

}  // namespace steadyocr::engine

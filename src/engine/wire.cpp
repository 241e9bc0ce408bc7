#include "engine/wire.h"

namespace steadyocr::engine {

using json = nlohmann::json;

json status_to_json(const Status& s) {
  json j = {{"code", status_code_name(s.code())}, {"message", s.message()}};
  if (s.finding())
    j["finding"] = {{"code", s.finding()->code}, {"detail", s.finding()->detail}, {"fix", s.finding()->fix}};
  return j;
}

Status status_from_json(const json& j) {
  if (!j.is_object() || !j.contains("code") || !j["code"].is_string()) {
    return data_loss("malformed status from the worker: " + j.dump());
  }
  StatusCode code;
  if (!status_code_from_name(j["code"].get<std::string>(), &code)) {
    return data_loss("unknown status code from the worker: " + j["code"].get<std::string>());
  }
  if (code == StatusCode::kOk) return Status::ok();
  Status s(code, j.value("message", std::string()));
  if (j.contains("finding") && j["finding"].is_object()) {
    const json& f = j["finding"];
    s = s.with_finding(
        {f.value("code", std::string()), f.value("detail", std::string()), f.value("fix", std::string())});
  }
  return s;
}

json call_stats_to_json(const pipeline::CallStats& c) {
  return json{
      {"det_images", c.det_images}, {"rec_calls", c.rec_calls}, {"rec_rows", c.rec_rows}, {"rec_shared", c.rec_shared}};
}

json ocr_result_to_json(const pipeline::OcrResult& r) {
  json lines = json::array();
  for (auto& l : r.lines) {
    json box = json::array();
    for (auto& p : l.box) box.push_back({p.x, p.y});
    lines.push_back({{"text", l.text}, {"score", l.score}, {"box", box}});
  }
  const pipeline::StageTimes& t = r.timings;
  return json{
      {"lines", lines},
      {"backend", r.backend},
      {"width", r.width},
      {"height", r.height},
      {"timings_ms",
       {{"decode", t.decode}, {"det", t.det}, {"post", t.post}, {"cls", t.cls}, {"rec", t.rec}, {"total", t.total}}},
      {"calls", call_stats_to_json(r.calls)},
      {"profile_ms", r.profile}};
}

Result<pipeline::OcrResult> ocr_result_from_json(const json& j) {
  if (!j.is_object()) return data_loss("worker sent a malformed result");
  pipeline::OcrResult r;
  try {
    for (auto& l : j.at("lines")) {
      pipeline::TextLine t;
      t.text = l.at("text").get<std::string>();
      t.score = l.at("score").get<float>();
      auto& b = l.at("box");
      for (size_t i = 0; i < 4 && i < b.size(); ++i) t.box[i] = cv::Point2f(b[i][0].get<float>(), b[i][1].get<float>());
      r.lines.push_back(std::move(t));
    }
    r.backend = j.value("backend", "");
    r.width = j.value("width", 0);
    r.height = j.value("height", 0);
    auto& t = j.at("timings_ms");
    r.timings = {t.value("decode", 0.0), t.value("det", 0.0), t.value("post", 0.0),
                 t.value("cls", 0.0),    t.value("rec", 0.0), t.value("total", 0.0)};
    if (j.contains("calls")) {
      const json& c = j.at("calls");
      r.calls = {c.value("det_images", 0), c.value("rec_calls", 0), c.value("rec_rows", int64_t{0}),
                 c.value("rec_shared", 0)};
    }
    if (j.contains("profile_ms")) r.profile = j.at("profile_ms").get<pipeline::TimeProfile>();
  } catch (const json::exception& e) {
    return data_loss(std::string("worker result is missing fields: ") + e.what());
  }
  return r;
}

}  // namespace steadyocr::engine

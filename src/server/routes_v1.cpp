// POST /v1/ocr (one image) and POST /v1/ocr/batch (up to --max-batch, results and errors aligned per slot).
#include "server/service.h"

namespace steadyocr::server {
namespace {

using json = nlohmann::ordered_json;

// A parse whose JSON holds a member of an unexpected type is the client's INVALID_JSON, not a 500.
template <typename F>
Refusal guarded(F parse) {
  try {
    return parse();
  } catch (const nlohmann::json::exception& e) {
    return api_error("INVALID_JSON", std::string("a member of the wrong type: ") + e.what(),
                     "see docs/SERVING.md for the body's shape");
  }
}

void ocr_one(OcrService& s, const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  if (auto e = s.refuse_unless_serving()) return s.reply_error_body_unread(res, *e);
  RequestBody body;
  if (auto e = s.read_body(req, res, reader, &body)) return s.reply_error(res, *e);
  std::vector<ImageInput> inputs(1);
  if (auto e = guarded([&] { return parse_single(body, s.models(), &inputs[0]); })) return s.reply_error(res, *e);
  std::vector<ImageRun> runs;
  if (auto e = s.run(inputs, &runs)) return s.reply_error(res, *e);
  if (runs[0].error) return s.reply_error(res, *runs[0].error);
  json out = {{"request_id", current_request().id}};
  const json result = s.result_json(inputs[0].name, runs[0]);
  for (const auto& [k, v] : result.items()) out[k] = v;
  s.reply_json(res, 200, out);
}

void ocr_batch(OcrService& s, const httplib::Request& req, httplib::Response& res,
               const httplib::ContentReader& reader) {
  if (auto e = s.refuse_unless_serving()) return s.reply_error_body_unread(res, *e);
  RequestBody body;
  if (auto e = s.read_body(req, res, reader, &body)) return s.reply_error(res, *e);
  std::vector<ImageInput> inputs;
  if (auto e = guarded([&] { return parse_batch(body, s.models(), s.options().max_batch, &inputs); })) {
    return s.reply_error(res, *e);
  }
  std::vector<ImageRun> runs;
  if (auto e = s.run(inputs, &runs)) return s.reply_error(res, *e);
  json results = json::array();
  int failed = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    json slot = {{"index", i}, {"name", inputs[i].name}};
    if (runs[i].error) {
      ++failed;
      const ApiError& e = *runs[i].error;
      slot["status"] = e.http_status;
      slot["error"] = v1_error_json(e)["error"];
    } else {
      slot["status"] = 200;
      const json result = s.result_json(inputs[i].name, runs[i]);
      for (const auto& [k, v] : result.items()) slot[k] = v;
    }
    results.push_back(std::move(slot));
  }
  if (failed > 0) current_request().outcome = "PARTIAL";
  s.reply_json(res, 200,
               {{"request_id", current_request().id},
                {"images", inputs.size()},
                {"failed", failed},
                {"results", std::move(results)}});
}

}  // namespace

void add_v1_routes(httplib::Server& http, OcrService& s) {
  http.Post("/v1/ocr", [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
    current_request().route = "/v1/ocr";
    ocr_one(s, req, res, r);
  });
  http.Post("/v1/ocr/batch",
            [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& r) {
              current_request().route = "/v1/ocr/batch";
              ocr_batch(s, req, res, r);
            });
  for (const char* path : {"/v1/ocr", "/v1/ocr/batch"}) {
    http.Get(path, [&s, path](const httplib::Request&, httplib::Response& res) {
      current_request().route = path;
      s.reply_error(res, api_error("METHOD_NOT_ALLOWED", std::string("GET ") + path + ": this route takes POST",
                                   "POST the image (see docs/SERVING.md)"));
      res.set_header("Allow", "POST");
    });
  }
}

}  // namespace steadyocr::server

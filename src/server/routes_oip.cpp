// KServe's Open Inference Protocol (v2) over HTTP, as KServe and Triton clients send it: health, server and model
// metadata, model readiness, and inference of one model, "ocr": one BYTES input tensor of encoded images (base64
// strings in JSON, or raw with Triton's binary tensor data extension), one BYTES output tensor holding each image's
// result as the CLI's JSON. Errors are {"error": "..."}.
#include <cstring>

#include "server/oip_parse.h"
#include "server/service.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr const char* kModel = "ocr";
constexpr const char* kVersion = "1";
constexpr const char* kOutput = kInferOutput;

// OIP answers a client's fault with 400 (Triton's INVALID_ARG); the HTTP-level codes (404, 408, 411, 413, 415) and
// the server's (5xx) stay.
ApiError oip(ApiError e) {
  if (e.http_status == 422) e.http_status = 400;
  return e;
}

// The model named in the path exists (and its version, when given).
Refusal check_model(const httplib::Request& req) {
  const std::string model = req.matches[1];
  const std::string version = req.matches.size() > 2 ? std::string(req.matches[2]) : "";
  if (model != kModel) {
    return api_error("NOT_FOUND", "Model with name " + model + " does not exist.", "the model is 'ocr' (GET /v2)");
  }
  if (!version.empty() && version != kVersion) {
    return api_error("NOT_FOUND", "Model ocr has no version " + version + ".", "the version is '1' (or leave it out)");
  }
  return std::nullopt;
}

void infer(OcrService& s, const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
  if (auto e = check_model(req)) return s.reply_error_body_unread(res, *e, true);
  if (auto e = s.refuse_unless_serving()) return s.reply_error_body_unread(res, *e, true);
  RequestBody body;
  if (auto e = s.read_body(req, res, reader, &body)) return s.reply_error(res, *e, true);
  if (!body.query.empty()) {
    return s.reply_error(res, api_error("UNKNOWN_OPTION", "query parameters on an OIP request", "use 'parameters'"),
                         true);
  }
  InferRequest r;
  std::optional<std::string> header_length;
  if (req.has_header(kInferHeaderLength)) header_length = req.get_header_value(kInferHeaderLength);
  Refusal parsed = parse_infer_request(body, header_length, s.models(), s.options().max_batch, &r);
  if (parsed) return s.reply_error(res, oip(*parsed), true);
  std::vector<ImageRun> runs;
  if (auto e = s.run(r.images, &runs)) return s.reply_error(res, oip(*e), true);
  std::vector<std::string> results;
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].error) {  // OIP has no per-element errors: the request fails, naming the element
      ApiError e = oip(*runs[i].error);
      e.message = "input 'IMAGE' element " + std::to_string(i) + ": " + e.message;
      return s.reply_error(res, e, true);
    }
    results.push_back(s.result_json(r.images[i].name, runs[i]).dump(-1, ' ', false, ojson::error_handler_t::replace));
  }
  ojson out = {{"model_name", kModel}, {"model_version", kVersion}};
  if (!r.id.is_null()) out["id"] = r.id;
  ojson output = {{"name", kOutput}, {"datatype", "BYTES"}, {"shape", r.shape}};
  if (!r.binary_output) {
    output["data"] = results;
    out["outputs"] = ojson::array({output});
    return s.reply_json(res, 200, out);
  }
  std::string data;
  for (const auto& t : results) {
    const uint32_t n = static_cast<uint32_t>(t.size());
    for (int b = 0; b < 4; ++b) data += static_cast<char>((n >> (8 * b)) & 0xFF);
    data += t;
  }
  output["parameters"] = {{"binary_data_size", data.size()}};
  out["outputs"] = ojson::array({output});
  const std::string header = out.dump();
  res.status = 200;
  res.set_header(kInferHeaderLength, std::to_string(header.size()));
  res.set_content(header + data, "application/octet-stream");
}

ojson model_metadata() {
  return {{"name", kModel},
          {"versions", {kVersion}},
          {"platform", "steadyocr"},
          {"inputs", {{{"name", kInferInput}, {"datatype", "BYTES"}, {"shape", {-1}}}}},
          {"outputs", {{{"name", kOutput}, {"datatype", "BYTES"}, {"shape", {-1}}}}}};
}

}  // namespace

void add_oip_routes(httplib::Server& http, OcrService& s) {
  const std::string model = R"(/v2/models/([^/]+)(?:/versions/([^/]+))?)";
  http.Get("/v2/health/live", [&s](const httplib::Request&, httplib::Response& res) {
    current_request().route = "/v2/health/live";
    s.reply_json(res, 200, {{"live", true}});
  });
  http.Get("/v2/health/ready", [&s](const httplib::Request&, httplib::Response& res) {
    current_request().route = "/v2/health/ready";
    Readiness::Report r = s.readiness().report();
    if (r.ready) return s.reply_json(res, 200, {{"ready", true}});
    ApiError e = api_error("SERVER_STARTING", "not ready: " + r.reason, "GET /readyz says why");
    e.code = r.reason;
    e.http_status = 503;  // as KServe answers (Triton: 400); clients test for 200
    s.reply_error(res, e, true);
  });
  http.Get("/v2", [&s](const httplib::Request&, httplib::Response& res) {
    current_request().route = "/v2";
    s.reply_json(res, 200,
                 {{"name", "steadyocr"}, {"version", STEADYOCR_VERSION}, {"extensions", {"binary_tensor_data"}}});
  });
  http.Get(model, [&s](const httplib::Request& req, httplib::Response& res) {
    current_request().route = "/v2/models/{model}";
    if (auto e = check_model(req)) return s.reply_error(res, *e, true);
    s.reply_json(res, 200, model_metadata());
  });
  http.Get(model + "/ready", [&s](const httplib::Request& req, httplib::Response& res) {
    current_request().route = "/v2/models/{model}/ready";
    if (auto e = check_model(req)) return s.reply_error(res, *e, true);
    Readiness::Report r = s.readiness().report();
    if (r.ready) return s.reply_json(res, 200, {{"name", kModel}, {"ready", true}});
    ApiError e = api_error("SERVER_STARTING", "Model with name ocr is not ready: " + r.reason, "GET /readyz says why");
    e.code = r.reason;
    e.http_status = 503;
    s.reply_error(res, e, true);
  });
  http.Post(model + "/infer",
            [&s](const httplib::Request& req, httplib::Response& res, const httplib::ContentReader& reader) {
              current_request().route = "/v2/models/{model}/infer";
              infer(s, req, res, reader);
            });
}

}  // namespace steadyocr::server

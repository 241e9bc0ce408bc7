// The Open Inference Protocol (KServe v2) routes, with requests shaped as KServe's python client (InferRequest.to_rest:
// id, model_name, base64 BYTES data) and Triton's tritonclient.http (binary tensor data extension, binary outputs)
// build them; errors as {"error": "..."} with OIP's status codes.
#include <gtest/gtest.h>

#include "server/request_parse.h"
#include "server/server_process.h"
#include "test_util.h"

namespace steadyocr {
namespace {

using json = nlohmann::json;
using testing::body_json;
using testing::read_file;
using testing::ServerProcess;

std::string data(const std::string& rel) {
  return testing::test_data(rel);
}
std::string b64(const std::string& bytes) {
  return testing::base64_of(bytes);
}
// A BYTES tensor in the binary tensor data extension: each element a 4-byte little-endian length, then its bytes.
std::string bytes_tensor(const std::vector<std::string>& elements) {
  std::string out;
  for (const auto& e : elements) {
    const uint32_t n = static_cast<uint32_t>(e.size());
    for (int b = 0; b < 4; ++b) out += static_cast<char>((n >> (8 * b)) & 0xFF);
    out += e;
  }
  return out;
}
std::vector<std::string> split_bytes_tensor(std::string_view d) {
  std::vector<std::string> out;
  while (d.size() >= 4) {
    uint32_t n = 0;
    for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<uint8_t>(d[b]);
    d.remove_prefix(4);
    out.emplace_back(d.substr(0, n));
    d.remove_prefix(std::min<size_t>(n, d.size()));
  }
  return out;
}

class ServerOip : public ::testing::Test {
 protected:
  void SetUp() override {
    SO_REQUIRE_MODELS();
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--backend", "cpu", "--threads", "2", "--max-batch", "3"});
    ASSERT_TRUE(server_->started()) << server_->log();
    ASSERT_TRUE(server_->wait_ready()) << server_->log();
  }
  void TearDown() override {
    if (server_) {
      EXPECT_EQ(server_->signal_and_wait(SIGTERM, 30), 0) << server_->log();
    }
  }
  // An OIP error: {"error": "<string>"} (no object), the status, the message naming `names`.
  static void expect_oip_error(const httplib::Result& r, int status, const std::string& names) {
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, status) << r->body;
    json j = body_json(r);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r->body;
    ASSERT_TRUE(j["error"].is_string()) << r->body;
    EXPECT_NE(j["error"].get<std::string>().find(names), std::string::npos) << r->body;
    EXPECT_FALSE(r->get_header_value("X-Steadyocr-Error-Code").empty());
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerOip, HealthAndMetadata) {
  auto c = server_->client();
  auto live = c.Get("/v2/health/live");
  ASSERT_TRUE(live);
  EXPECT_EQ(live->status, 200);
  EXPECT_EQ(body_json(live)["live"], true);
  auto ready = c.Get("/v2/health/ready");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200);
  EXPECT_EQ(body_json(ready)["ready"], true);
  json meta = body_json(c.Get("/v2"));
  EXPECT_EQ(meta["name"], "steadyocr");
  EXPECT_TRUE(meta["version"].is_string());
  EXPECT_EQ(meta["extensions"], json::array({"binary_tensor_data"}));
  for (const char* path : {"/v2/models/ocr", "/v2/models/ocr/versions/1"}) {
    json m = body_json(c.Get(path));
    EXPECT_EQ(m["name"], "ocr") << path;
    EXPECT_EQ(m["versions"], json::array({"1"}));
    EXPECT_EQ(m["platform"], "steadyocr");
    EXPECT_EQ(m["inputs"][0]["datatype"], "BYTES");
    EXPECT_EQ(m["inputs"][0]["shape"], json::array({-1}));
    EXPECT_EQ(m["outputs"][0]["name"], "RESULT");
  }
  for (const char* path : {"/v2/models/ocr/ready", "/v2/models/ocr/versions/1/ready"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(body_json(r)["name"], "ocr");
    EXPECT_EQ(body_json(r)["ready"], true);
  }
  expect_oip_error(c.Get("/v2/models/resnet"), 404, "resnet");
  expect_oip_error(c.Get("/v2/models/resnet/ready"), 404, "resnet");
  expect_oip_error(c.Get("/v2/models/ocr/versions/7"), 404, "7");
  expect_oip_error(c.Get("/v2/nothing/here"), 404, "route");
}

TEST_F(ServerOip, InferAsKServesClientSendsIt) {
  // kserve.InferRequest(...).to_rest(): an id, the model name, one BYTES input with base64 strings in data.
  auto c = server_->client();
  const std::string line = data("ocr/decode/line.jpg"), doc = data("engine/doc_0000.jpg");
  json req = {
      {"id", "5b8c0a7e-2f4e-4f8a-9d38-0c1f6a0b7e11"},
      {"model_name", "ocr"},
      {"inputs", {{{"name", "input-0"}, {"shape", {2}}, {"datatype", "BYTES"}, {"data", {b64(line), b64(doc)}}}}}};
  auto r = c.Post("/v2/models/ocr/infer", req.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json out = body_json(r);
  EXPECT_EQ(out["model_name"], "ocr");
  EXPECT_EQ(out["model_version"], "1");
  EXPECT_EQ(out["id"], "5b8c0a7e-2f4e-4f8a-9d38-0c1f6a0b7e11");
  ASSERT_EQ(out["outputs"].size(), 1u);
  const json& o = out["outputs"][0];
  EXPECT_EQ(o["name"], "RESULT");
  EXPECT_EQ(o["datatype"], "BYTES");
  EXPECT_EQ(o["shape"], json::array({2}));
  ASSERT_EQ(o["data"].size(), 2u);
  json first = json::parse(o["data"][0].get<std::string>());
  EXPECT_EQ(first["lines"][0]["text"], "receipt2026");
  EXPECT_EQ(first["rung"], "cpu");
  // The same as /v1/ocr for the same image.
  json second = json::parse(o["data"][1].get<std::string>());
  json v1 = body_json(c.Post("/v1/ocr", doc, "image/jpeg"));
  EXPECT_EQ(second["lines"], v1["lines"]);

  // [N, 1] shapes, nested data, options as request parameters, the version in the path.
  json nested = {{"inputs", {{{"name", "IMAGE"}, {"shape", {1, 1}}, {"datatype", "BYTES"}, {"data", {{b64(doc)}}}}}},
                 {"parameters", {{"det_only", true}}}};
  auto n = c.Post("/v2/models/ocr/versions/1/infer", nested.dump(), "application/json");
  ASSERT_TRUE(n);
  ASSERT_EQ(n->status, 200) << n->body;
  json nd = json::parse(body_json(n)["outputs"][0]["data"][0].get<std::string>());
  EXPECT_EQ(nd["lines"].size(), v1["lines"].size());
  EXPECT_EQ(nd["lines"][0]["text"], "");
  EXPECT_EQ(body_json(n)["outputs"][0]["shape"], json::array({1, 1}));
  EXPECT_FALSE(body_json(n).contains("id"));  // only echoed when given
}

TEST_F(ServerOip, InferAsTritonsHttpClientSendsIt) {
  // tritonclient.http with binary_data=True: the JSON header, then the BYTES tensor; Inference-Header-Content-Length
  // says where the JSON ends. Outputs asked binary per output (InferRequestedOutput) or for all (binary_data_output).
  auto c = server_->client();
  const std::string line = data("ocr/decode/line.jpg");
  const std::string tensor = bytes_tensor({line});
  for (bool per_output : {true, false}) {
    json header = {{"inputs",
                    {{{"name", "IMAGE"},
                      {"shape", {1}},
                      {"datatype", "BYTES"},
                      {"parameters", {{"binary_data_size", tensor.size()}}}}}}};
    if (per_output) {
      header["outputs"] = {{{"name", "RESULT"}, {"parameters", {{"binary_data", true}}}}};
    } else {
      header["parameters"] = {{"binary_data_output", true}};
    }
    const std::string h = header.dump();
    httplib::Headers hs = {{"Inference-Header-Content-Length", std::to_string(h.size())}};
    auto r = c.Post("/v2/models/ocr/infer", hs, h + tensor, "application/octet-stream");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 200) << r->body;
    const size_t json_len = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
    json out = json::parse(r->body.substr(0, json_len));
    const json& o = out["outputs"][0];
    EXPECT_EQ(o["name"], "RESULT");
    EXPECT_FALSE(o.contains("data"));
    const size_t size = o["parameters"]["binary_data_size"];
    ASSERT_EQ(json_len + size, r->body.size());
    auto elements = split_bytes_tensor(std::string_view(r->body).substr(json_len));
    ASSERT_EQ(elements.size(), 1u);
    EXPECT_EQ(json::parse(elements[0])["lines"][0]["text"], "receipt2026");
  }
  // tritonclient's request_compression_algorithm="gzip" (and gzip answers for Accept-Encoding).
  auto gz = server_->client();
  gz.set_compress(true);
  json plain = {{"inputs", {{{"name", "IMAGE"}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {b64(line)}}}}}};
  auto z = gz.Post("/v2/models/ocr/infer", plain.dump(), "application/json");
  ASSERT_TRUE(z);
  ASSERT_EQ(z->status, 200) << z->body;
  EXPECT_EQ(json::parse(body_json(z)["outputs"][0]["data"][0].get<std::string>())["lines"][0]["text"], "receipt2026");
  // A raw binary request (header length 0) gets binary back.
  httplib::Headers raw = {{"Inference-Header-Content-Length", "0"}};
  auto r = c.Post("/v2/models/ocr/infer", raw, line, "application/octet-stream");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  const size_t json_len = std::stoul(r->get_header_value("Inference-Header-Content-Length"));
  auto elements = split_bytes_tensor(std::string_view(r->body).substr(json_len));
  ASSERT_EQ(elements.size(), 1u);
  EXPECT_EQ(json::parse(elements[0])["lines"][0]["text"], "receipt2026");
}

TEST_F(ServerOip, ProtocolErrorsNameWhatIsWrong) {
  auto c = server_->client();
  const std::string img = b64(data("ocr/decode/line.jpg"));
  auto post = [&](const json& j, const std::string& path = "/v2/models/ocr/infer") {
    return c.Post(path, j.dump(), "application/json");
  };
  auto input = [&](json shape, json datatype, json d) {
    return json{{"name", "IMAGE"}, {"shape", shape}, {"datatype", datatype}, {"data", d}};
  };
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {img})}}}, "/v2/models/resnet/infer"), 404, "resnet");
  expect_oip_error(post({{"inputs", {input({1}, "FP32", {1.0})}}}), 400, "BYTES");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {img}), input({1}, "BYTES", {img})}}}), 400,
                   "exactly one input");
  expect_oip_error(post({{"inputs", json::array()}}), 400, "exactly one input");
  expect_oip_error(post({{"inputs", {input({2}, "BYTES", {img})}}}), 400, "1 were sent");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {"%%%"})}}}), 400, "base64");
  expect_oip_error(post({{"inputs", {input({4}, "BYTES", {img, img, img, img})}}}), 400, "--max-batch");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {img})}}, {"parameters", {{"det_tresh", 0.3}}}}), 400,
                   "det_tresh");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {img})}}, {"outputs", {{{"name", "BOXES"}}}}}), 400, "BOXES");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {b64(data("ocr/decode/truncated.jpg"))})}}}), 400,
                   "element 0");
  expect_oip_error(post({{"inputs", {input({1}, "BYTES", {b64(data("ocr/decode/huge_dims.png"))})}}}), 400,
                   "header declares");
  expect_oip_error(post({{"inputs", {{{"name", 7}, {"shape", {1}}, {"datatype", "BYTES"}, {"data", {img}}}}}}), 400,
                   "must be strings");
  expect_oip_error(post({{"inputs",
                          {{{"name", "IMAGE"},
                            {"shape", {1}},
                            {"datatype", "BYTES"},
                            {"data", {img}},
                            {"parameters", {{"binary_data_size", "ten"}}}}}}}),
                   400, "binary_data_size");
  expect_oip_error(post({{"id", 42}, {"inputs", {input({1}, "BYTES", {img})}}}), 400, "'id'");
  expect_oip_error(c.Post("/v2/models/ocr/infer", "{\"inputs\": [", "application/json"), 400, "JSON");
  expect_oip_error(c.Post("/v2/models/ocr/infer", "hello", "text/plain"), 415, "text/plain");
  httplib::Headers bad_len = {{"Inference-Header-Content-Length", "999999"}};
  expect_oip_error(c.Post("/v2/models/ocr/infer", bad_len, "{}", "application/octet-stream"), 400,
                   "Inference-Header-Content-Length");
  // The server serves on.
  auto ok = post({{"inputs", {input({1}, "BYTES", {img})}}});
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace steadyocr

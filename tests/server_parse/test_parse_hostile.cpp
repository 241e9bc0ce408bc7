// The server's request parsing on hostile input, without a socket (fuzz/fuzz_request.cpp drives the same functions):
// the regressions of what fuzzing found, and the decode limits' own API codes.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "pipeline/jpeg_decode.h"
#include "server/errors.h"
#include "server/oip_parse.h"
#include "server/request_parse.h"
#include "test_util.h"

namespace steadyocr::server {
namespace {

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// fuzz/regressions/fuzz_request/query_value_invalid_utf8: a query option whose value is not valid UTF-8 made the
// refusal's message (json::dump of the value) throw type_error 316 out of the parser.
TEST(ParseHostile, QueryValueWithInvalidUtf8IsRefusedNotThrown) {
  ServingModels models;
  pipeline::ImageOptions o;
  Refusal r;
  ASSERT_NO_THROW(r = parse_query_options({{"cls", "tr\xc9ue"}}, models, &o));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, "INVALID_OPTION");
  EXPECT_EQ(r->http_status, 400);
  EXPECT_TRUE(contains(r->message, "option 'cls' must be true or false (got \"tr" + kReplacement + "ue\")"))
      << r->message;
  // A multipart `options` field is parsed as JSON (which refuses bad UTF-8 itself); a number option from the query
  // with bad bytes is refused the same way.
  ASSERT_NO_THROW(r = parse_query_options({{"det_thresh", "0.\xff"}}, models, &o));
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->code, "INVALID_OPTION");
  EXPECT_TRUE(contains(r->message, kReplacement)) << r->message;
}

TEST(ParseHostile, JsonTextNeverThrows) {
  EXPECT_EQ(json_text(nlohmann::json("a\xff")), "\"a" + kReplacement + "\"");
  EXPECT_EQ(json_text(nlohmann::json(3)), "3");
}

TEST(ParseHostile, DecodeLimitsHaveTheirOwnApiCodes) {
  Status scans(StatusCode::kResourceExhausted, "JPEG has more than 100 scans",
               Finding{pipeline::kImageTooManyScans, "more than 100 scans", "raise --max-jpeg-scans"});
  ApiError e = error_from_status(scans);
  EXPECT_EQ(e.code, "IMAGE_TOO_MANY_SCANS");
  EXPECT_EQ(e.http_status, 422);
  EXPECT_EQ(e.fix, "raise --max-jpeg-scans");
  Status late(StatusCode::kResourceExhausted, "JPEG decode did not finish",
              Finding{pipeline::kImageDecodeTimeout, "decode stopped after 5000 ms", "raise --decode-deadline-ms"});
  EXPECT_EQ(error_from_status(late).code, "IMAGE_DECODE_TIMEOUT");
  EXPECT_EQ(error_from_status(late).http_status, 422);
  // Without a finding a limit stays what it was.
  EXPECT_EQ(error_from_status(resource_exhausted("too many pixels")).code, "IMAGE_TOO_MANY_PIXELS");
}

RequestBody oip_body(const std::string& data) {
  RequestBody b;
  b.content_type = "application/octet-stream";
  b.data = data;
  return b;
}

TEST(ParseHostile, OipBinaryElementsCutShortAreRefused) {
  const std::string header =
      R"({"inputs": [{"name": "IMAGE", "shape": [1], "datatype": "BYTES", "parameters": {"binary_data_size": 8}}]})";
  const std::string element = std::string("\x09\x00\x00\x00", 4) + "abcd";  // declares 9 bytes, has 4
  InferRequest r;
  Refusal e = parse_infer_request(oip_body(header + element), std::to_string(header.size()), {}, 8, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "INVALID_INFER_REQUEST");
  EXPECT_TRUE(contains(e->message, "binary BYTES element of 9 bytes is cut short")) << e->message;
  // Raw binary: the whole body after a zero-length header is the one image.
  InferRequest raw;
  EXPECT_FALSE(parse_infer_request(oip_body("\x89PNG"), std::string("0"), {}, 8, &raw).has_value());
  ASSERT_EQ(raw.images.size(), 1u);
  EXPECT_EQ(raw.images[0].bytes.size(), 4u);
  EXPECT_TRUE(raw.binary_output);
}

TEST(ParseHostile, OipHeaderLengthBeyondTheBodyIsRefused) {
  InferRequest r;
  Refusal e = parse_infer_request(oip_body("{}"), std::string("99"), {}, 8, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "INVALID_INFER_REQUEST");
  EXPECT_TRUE(contains(e->message, "Inference-Header-Content-Length is 99 for a body of 2 bytes")) << e->message;
}

// fuzz/regressions/fuzz_request/oip_shape_product_overflows: the element count of shape [2^32, 2^32] overflowed
// int64 (undefined behaviour) before the shape and batch checks.
TEST(ParseHostile, OipShapeWhoseProductOverflowsIsRefused) {
  RequestBody b;
  b.content_type = "application/json";
  b.data =
      R"({"inputs": [{"name": "IMAGE", "shape": [4294967296, 4294967296], "datatype": "BYTES", "data": ["aGk="]}]})";
  InferRequest r;
  Refusal e = parse_infer_request(b, std::nullopt, {}, 8, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "INVALID_INFER_REQUEST");  // [N, M] with M != 1
  b.data = R"({"inputs": [{"name": "IMAGE", "shape": [4294967296, 4294967296, 4294967296], "datatype": "BYTES",
               "data": ["aGk="]}]})";
  r = InferRequest{};
  e = parse_infer_request(b, std::nullopt, {}, 8, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "INVALID_INFER_REQUEST");
  b.data = R"({"inputs": [{"name": "IMAGE", "shape": [9223372036854775807], "datatype": "BYTES", "data": ["aGk="]}]})";
  r = InferRequest{};
  e = parse_infer_request(b, std::nullopt, {}, 8, &r);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->code, "BATCH_TOO_LARGE");
  EXPECT_TRUE(contains(e->message, "more than 1099511627776 images in one request, more than --max-batch 8"))
      << e->message;
}

}  // namespace
}  // namespace steadyocr::server

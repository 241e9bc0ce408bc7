// How request bodies become images and options, without a server: base64, every option and its refusals, the three
// body shapes of /v1/ocr, batches, the header checks before decoding, and the error table against docs/SERVING.md.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>

#include "server/admission.h"
#include "server/errors.h"
#include "server/request_parse.h"
#include "test_util.h"

namespace steadyocr::server {
namespace {

using json = nlohmann::json;

std::string fixture(const std::string& name) {
  std::ifstream f(testing::source_dir() + "/tests/data/ocr/decode/" + name, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(Base64, RoundTripsAndNamesTheBadCharacter) {
  const std::string raw = std::string("\x00\xff\x10steadyocr", 12);
  std::string b64 = encode_base64(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  EXPECT_EQ(b64, "AP8Qc3RlYWR5b2Ny");
  std::vector<uint8_t> out;
  EXPECT_FALSE(decode_base64(b64, &out));
  EXPECT_EQ(std::string(out.begin(), out.end()), raw);
  EXPECT_FALSE(decode_base64("AP8Q\nc3Rl YWR5b2Ny", &out));  // line breaks and spaces skipped
  EXPECT_EQ(std::string(out.begin(), out.end()), raw);
  EXPECT_FALSE(decode_base64("data:image/png;base64,AP8Qc3RlYWR5b2Ny", &out));
  EXPECT_EQ(out.size(), raw.size());
  EXPECT_FALSE(decode_base64("YQ==", &out));
  EXPECT_EQ(std::string(out.begin(), out.end()), "a");
  EXPECT_FALSE(decode_base64("YQ", &out));  // padding optional
  auto bad = decode_base64("AP8Q*3Rl", &out);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, "INVALID_BASE64");
  EXPECT_EQ(bad->http_status, 400);
  EXPECT_NE(bad->message.find("offset 4"), std::string::npos) << bad->message;
  EXPECT_TRUE(decode_base64("YQ==YQ==", &out));  // data after padding
  EXPECT_TRUE(decode_base64("Y", &out));         // half a byte
}

TEST(Options, EveryOptionIsAppliedAndCheckedNeverIgnored) {
  ServingModels m;
  m.cls = true;
  pipeline::ImageOptions o;
  EXPECT_FALSE(parse_options(json::parse(R"({"det_thresh": 0.4, "det_box_thresh": 0.7, "unclip_ratio": 2.0,
      "drop_score": 0.25, "cls": true, "det_only": true})"),
                             m, &o));
  EXPECT_FLOAT_EQ(*o.det_thresh, 0.4f);
  EXPECT_DOUBLE_EQ(*o.det_box_thresh, 0.7);
  EXPECT_DOUBLE_EQ(*o.unclip_ratio, 2.0);
  EXPECT_FLOAT_EQ(*o.drop_score, 0.25f);
  EXPECT_TRUE(*o.use_cls);
  EXPECT_EQ(*o.mode, pipeline::OcrMode::kDetOnly);

  auto refused = [&](const char* j, const char* code, const char* names) {
    pipeline::ImageOptions x;
    auto e = parse_options(json::parse(j), m, &x);
    ASSERT_TRUE(e) << j;
    EXPECT_EQ(e->code, code) << j;
    EXPECT_EQ(e->http_status, 400);
    EXPECT_NE(e->message.find(names), std::string::npos) << e->message;
  };
  refused(R"({"det_tresh": 0.4})", "UNKNOWN_OPTION", "det_tresh");
  refused(R"({"det_thresh": 1.5})", "INVALID_OPTION", "det_thresh");
  refused(R"({"det_thresh": "high"})", "INVALID_OPTION", "det_thresh");
  refused(R"({"unclip_ratio": -1})", "INVALID_OPTION", "unclip_ratio");
  refused(R"({"cls": 1})", "INVALID_OPTION", "cls");
  refused(R"({"rec_interp": "bilinear"})", "INVALID_OPTION", "rec_interp");
  refused(R"({"rec_interp": 1})", "INVALID_OPTION", "rec_interp");
  pipeline::ImageOptions interp;
  EXPECT_FALSE(parse_options(json::parse(R"({"rec_interp": "linear"})"), m, &interp));
  EXPECT_EQ(*interp.rec_interp, pipeline::RecInterp::kLinear);
  refused(R"({"det_only": true, "rec_only": true})", "INVALID_OPTION", "rec_only");

  // Options that need a model the server did not load.
  ServingModels det_only;
  det_only.mode = pipeline::OcrMode::kDetOnly;
  det_only.rec = false;
  pipeline::ImageOptions x;
  auto e = parse_options(json::parse(R"({"det_only": false})"), det_only, &x);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "OPTION_UNAVAILABLE");
  EXPECT_NE(e->fix.find("--det-only"), std::string::npos) << e->fix;
  ServingModels no_cls;
  e = parse_options(json::parse(R"({"cls": true})"), no_cls, &x);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "OPTION_UNAVAILABLE");

  // From the query string: numbers and booleans as text.
  pipeline::ImageOptions q;
  EXPECT_FALSE(parse_query_options({{"drop_score", "0.9"}, {"rec_only", "true"}}, m, &q));
  EXPECT_FLOAT_EQ(*q.drop_score, 0.9f);
  EXPECT_EQ(*q.mode, pipeline::OcrMode::kRecOnly);
  auto bad = parse_query_options({{"drop_score", "lots"}}, m, &q);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, "INVALID_OPTION");
  bad = parse_query_options({{"fast", "1"}}, m, &q);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, "UNKNOWN_OPTION");
}

TEST(Bodies, OneImageAsRawBodyMultipartOrJson) {
  ServingModels m;
  const std::string png = fixture("line_gray.png");
  ASSERT_FALSE(png.empty());
  RequestBody raw{"image/png", png, {}, {{"det_only", "1"}}};
  ImageInput in;
  EXPECT_FALSE(parse_single(raw, m, &in));
  EXPECT_EQ(in.bytes.size(), png.size());
  EXPECT_EQ(*in.options.mode, pipeline::OcrMode::kDetOnly);

  RequestBody form{"multipart/form-data; boundary=x",
                   "",
                   {{"file", "a.png", "image/png", png}, {"options", "", "", R"({"drop_score": 0.1})"}},
                   {}};
  ImageInput f;
  EXPECT_FALSE(parse_single(form, m, &f));
  EXPECT_EQ(f.name, "a.png");
  EXPECT_FLOAT_EQ(*f.options.drop_score, 0.1f);
  form.parts.push_back({"colour", "", "", "red"});
  ImageInput f2;
  auto e = parse_single(form, m, &f2);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "UNKNOWN_OPTION");
  EXPECT_NE(e->message.find("colour"), std::string::npos);

  json j = {{"image", encode_base64(reinterpret_cast<const uint8_t*>(png.data()), png.size())},
            {"options", {{"cls", false}}}};
  ImageInput b;
  EXPECT_FALSE(parse_single({"application/json", j.dump(), {}, {}}, m, &b));
  EXPECT_EQ(b.bytes.size(), png.size());
  EXPECT_FALSE(*b.options.use_cls);

  auto code_of = [&](const RequestBody& body) {
    ImageInput x;
    auto r = parse_single(body, m, &x);
    return r ? r->code : std::string("OK");
  };
  EXPECT_EQ(code_of({"text/plain", "hello", {}, {}}), "UNSUPPORTED_MEDIA_TYPE");
  EXPECT_EQ(code_of({"", "hello", {}, {}}), "UNSUPPORTED_MEDIA_TYPE");
  EXPECT_EQ(code_of({"application/json", "{not json", {}, {}}), "INVALID_JSON");
  EXPECT_EQ(code_of({"application/json", R"({"image": "@@@"})", {}, {}}), "INVALID_BASE64");
  EXPECT_EQ(code_of({"application/json", R"({"picture": "AAAA"})", {}, {}}), "INVALID_JSON");
  EXPECT_EQ(code_of({"application/json", R"({"options": {}})", {}, {}}), "MISSING_IMAGE");
  EXPECT_EQ(code_of({"application/json", R"({"image": "AAAA", "options": {"zoom": 2}})", {}, {}}), "UNKNOWN_OPTION");
  EXPECT_EQ(code_of({"image/jpeg", "", {}, {}}), "MISSING_IMAGE");
  EXPECT_EQ(code_of({"multipart/form-data; boundary=x", "", {}, {}}), "MISSING_IMAGE");
}

TEST(Bodies, BatchSlotsCarryTheirOwnErrors) {
  ServingModels m;
  const std::string png = fixture("line_gray.png");
  const std::string b64 = encode_base64(reinterpret_cast<const uint8_t*>(png.data()), png.size());
  json j = {{"images", {b64, {{"image", "###"}}, {{"image", b64}, {"name", "x"}, {"options", {{"det_only", true}}}}}},
            {"options", {{"drop_score", 0.3}}}};
  std::vector<ImageInput> out;
  EXPECT_FALSE(parse_batch({"application/json", j.dump(), {}, {}}, m, 8, &out));
  ASSERT_EQ(out.size(), 3u);
  EXPECT_FALSE(out[0].error);
  EXPECT_FLOAT_EQ(*out[0].options.drop_score, 0.3f);
  ASSERT_TRUE(out[1].error);
  EXPECT_EQ(out[1].error->code, "INVALID_BASE64");
  EXPECT_EQ(out[2].name, "x");
  EXPECT_EQ(*out[2].options.mode, pipeline::OcrMode::kDetOnly);
  EXPECT_FLOAT_EQ(*out[2].options.drop_score, 0.3f);  // the batch's options under the image's

  std::vector<ImageInput> many;
  auto e = parse_batch({"application/json", json::array({b64, b64, b64}).dump(), {}, {}}, m, 2, &many);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "BATCH_TOO_LARGE");
  std::vector<ImageInput> none;
  e = parse_batch({"application/json", R"({"images": []})", {}, {}}, m, 2, &none);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, "MISSING_IMAGE");
  std::vector<ImageInput> form;
  EXPECT_FALSE(
      parse_batch({"multipart/form-data; boundary=b", "", {{"file", "1.png", "", png}, {"file", "2.png", "", png}}, {}},
                  m, 4, &form));
  EXPECT_EQ(form.size(), 2u);
}

TEST(AdmissionMemory, PredictedBytesFollowTheDetectorInput) {
  const int64_t rec = 64ll << 20;
  // 1000 x 2000 is read at 480 x 960 (longer side 960), 100 bytes a detector pixel.
  EXPECT_EQ(predicted_image_bytes(1000, 2000, 960), 480 * 960 * 100 + rec);
  // Small pictures are not enlarged; sides round up to 32.
  EXPECT_EQ(predicted_image_bytes(100, 50, 960), 128 * 64 * 100 + rec);
  // A huge page costs what its resized input costs, not its pixels.
  EXPECT_EQ(predicted_image_bytes(20000, 20000, 960), predicted_image_bytes(960, 960, 960));
  EXPECT_GT(predicted_image_bytes(960, 960, 1920), predicted_image_bytes(960, 960, 960) - 1);
}

TEST(ImageChecks, HeaderLimitsAndTruncationBeforeDecoding) {
  pipeline::DecodeLimits limits;
  auto check = [&](const std::string& bytes) {
    auto e = check_image(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), limits);
    return e ? e->code : std::string("OK");
  };
  EXPECT_EQ(check(fixture("line_gray.png")), "OK");
  EXPECT_EQ(check(fixture("line.jpg")), "OK");
  EXPECT_EQ(check(fixture("truncated.jpg")), "IMAGE_TRUNCATED");
  EXPECT_EQ(check(fixture("huge_dims.png")), "IMAGE_TOO_LARGE");
  EXPECT_EQ(check("this is not an image at all"), "UNSUPPORTED_IMAGE_FORMAT");
  EXPECT_EQ(check(""), "MISSING_IMAGE");
  limits.max_pixels = 100;
  EXPECT_EQ(check(fixture("line_gray.png")), "IMAGE_TOO_MANY_PIXELS");
  auto e = check_image(reinterpret_cast<const uint8_t*>(fixture("huge_dims.png").data()),
                       fixture("huge_dims.png").size(), pipeline::DecodeLimits{});
  ASSERT_TRUE(e);
  EXPECT_EQ(e->http_status, 422);
  EXPECT_NE(e->message.find("header declares"), std::string::npos) << e->message;
}

TEST(ErrorTable, EveryCodeIsDocumentedInServingMd) {
  std::ifstream f(testing::source_dir() + "/docs/SERVING.md");
  std::stringstream s;
  s << f.rdbuf();
  const std::string doc = s.str();
  ASSERT_FALSE(doc.empty()) << "docs/SERVING.md missing";
  std::set<std::string> seen;
  for (const auto& c : error_codes()) {
    EXPECT_TRUE(seen.insert(c.code).second) << c.code << " listed twice";
    EXPECT_NE(doc.find("`" + std::string(c.code) + "`"), std::string::npos) << c.code << " not in docs/SERVING.md";
    EXPECT_EQ(api_error(c.code, "m").http_status, c.http_status);
  }
  for (const auto& o : option_names()) EXPECT_NE(doc.find("`" + o + "`"), std::string::npos) << o;
}

}  // namespace
}  // namespace steadyocr::server

// libFuzzer target: the server's request parsing without a socket. The input's first line picks the route and the
// Content-Type (and, for OIP, the Inference-Header-Content-Length); the rest is the body:
//
//   single <content-type>\n<body>       POST /v1/ocr              (raw image, JSON {"image", "options"})
//   batch <content-type>\n<body>        POST /v1/ocr/batch        (JSON list or {"images", "options"})
//   form <single|batch>\n<parts>        multipart parts as cpp-httplib hands them over: parts separated by "\n--\n",
//                                       each "name\nfilename\ncontent-type\ncontent"
//   oip <header-length|->\n<body>       POST /v2/models/ocr/infer (JSON, or binary tensor data extension)
//   query\n<k=v lines>                  query options of any route
//
// Every image that comes out is then checked from its header (check_image), as the routes do. A refusal must carry
// a code of the error table with its HTTP status, and a message.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/errors.h"
#include "server/oip_parse.h"
#include "server/request_parse.h"

using namespace steadyocr;
using namespace steadyocr::server;

namespace {

void check_refusal(const Refusal& r) {
  if (!r) return;
  bool known = false;
  for (const auto& c : error_codes()) known |= r->code == c.code && r->http_status == c.http_status;
  if (!known || r->message.empty()) std::abort();
}

void check_images(const std::vector<ImageInput>& images) {
  pipeline::DecodeLimits limits;
  limits.max_side = 4096;
  limits.max_pixels = 1 << 22;
  for (const ImageInput& in : images) {
    check_refusal(in.error);
    if (!in.error) check_refusal(check_image(in.bytes.data(), in.bytes.size(), limits));
  }
}

std::string_view next_line(std::string_view* rest) {
  size_t nl = rest->find('\n');
  std::string_view line = rest->substr(0, nl);
  rest->remove_prefix(nl == std::string_view::npos ? rest->size() : nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view all(reinterpret_cast<const char*>(data), size);
  std::string_view first = next_line(&all);
  const size_t sp = first.find(' ');
  const std::string_view mode = first.substr(0, sp);
  const std::string arg = sp == std::string_view::npos ? "" : std::string(first.substr(sp + 1));
  ServingModels models;
  models.cls = (size & 1) != 0;  // both with and without the angle classifier loaded
  const int max_batch = 8;

  RequestBody body;
  body.content_type = arg;
  if (mode == "single" || mode == "batch") {
    body.data = std::string(all);
    if (mode == "single") {
      ImageInput in;
      Refusal r = parse_single(body, models, &in);
      check_refusal(r);
      if (!r) check_images({in});
    } else {
      std::vector<ImageInput> images;
      Refusal r = parse_batch(body, models, max_batch, &images);
      check_refusal(r);
      if (!r) {
        if (images.size() > static_cast<size_t>(max_batch)) std::abort();
        check_images(images);
      }
    }
  } else if (mode == "form") {
    body.content_type = "multipart/form-data; boundary=x";
    while (!all.empty()) {
      size_t end = all.find("\n--\n");
      std::string_view part = all.substr(0, end);
      all.remove_prefix(end == std::string_view::npos ? all.size() : end + 4);
      BodyPart p;
      p.name = std::string(next_line(&part));
      p.filename = std::string(next_line(&part));
      p.content_type = std::string(next_line(&part));
      p.content = std::string(part);
      body.parts.push_back(std::move(p));
    }
    if (arg == "batch") {
      std::vector<ImageInput> images;
      Refusal r = parse_batch(body, models, max_batch, &images);
      check_refusal(r);
      if (!r) check_images(images);
    } else {
      ImageInput in;
      Refusal r = parse_single(body, models, &in);
      check_refusal(r);
      if (!r) check_images({in});
    }
  } else if (mode == "oip") {
    body.content_type = "application/json";
    body.data = std::string(all);
    std::optional<std::string> header_length;
    if (arg != "-") header_length = arg;
    InferRequest r;
    Refusal e = parse_infer_request(body, header_length, models, max_batch, &r);
    check_refusal(e);
    if (!e) {
      if (r.images.empty() || r.images.size() > static_cast<size_t>(max_batch)) std::abort();
      check_images(r.images);
    }
  } else if (mode == "query") {
    while (!all.empty()) {
      std::string_view line = next_line(&all);
      const size_t eq = line.find('=');
      body.query.emplace(std::string(line.substr(0, eq)),
                         eq == std::string_view::npos ? "" : std::string(line.substr(eq + 1)));
    }
    pipeline::ImageOptions o;
    check_refusal(parse_query_options(body.query, models, &o));
  } else {
    std::vector<uint8_t> out;
    check_refusal(decode_base64(all, &out));
  }
  return 0;
}

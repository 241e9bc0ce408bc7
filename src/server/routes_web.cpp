// GET / (the page to try the server, src/server/web/index.html) and GET /web/<file> (its script, its style sheet and
// the sample image), answered from the files embedded at build time (web_assets.h). `--no-web` leaves them out: 404.
#include <string>

#include "server/service.h"
#include "server/web_assets.h"

namespace steadyocr::server {

const WebAsset* find_web_asset(std::string_view name) {
  for (const WebAsset& a : web_assets()) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

const char* web_content_type(std::string_view name) {
  auto ends = [&](std::string_view ext) {
    return name.size() >= ext.size() && name.substr(name.size() - ext.size()) == ext;
  };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "text/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".jpg") || ends(".jpeg")) return "image/jpeg";
  if (ends(".png")) return "image/png";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

namespace {

// The page talks to its own server only: script, style sheet, images and requests from the same origin (nothing from
// a CDN), images also from the blob: URLs of files picked or dropped.
constexpr const char* kContentSecurityPolicy =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' blob: data:; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

// True when If-None-Match names `etag` (or is "*").
bool not_modified(const httplib::Request& req, std::string_view etag) {
  const std::string given = req.get_header_value("If-None-Match");
  return !given.empty() && (given == "*" || given.find(etag) != std::string::npos);
}

void send_asset(const httplib::Request& req, httplib::Response& res, const WebAsset& a) {
  // Revalidated on every load (with the ETag, so unchanged files cost a 304): a new binary's page is seen at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("ETag", std::string(a.etag));
  res.set_header("X-Content-Type-Options", "nosniff");
  if (a.name.size() > 5 && a.name.substr(a.name.size() - 5) == ".html") {
    res.set_header("Content-Security-Policy", kContentSecurityPolicy);
  }
  if (not_modified(req, a.etag)) {
    res.status = 304;
    return;
  }
  res.status = 200;
  res.set_content(a.bytes.data(), a.bytes.size(), web_content_type(a.name));
}

}  // namespace

void add_web_routes(httplib::Server& http, OcrService& s) {
  if (const WebAsset* index = find_web_asset("index.html")) {
    http.Get("/", [index](const httplib::Request& req, httplib::Response& res) {
      current_request().route = "/";
      send_asset(req, res, *index);
    });
  }
  http.Get(R"(/web/(.*))", [&s](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1];
    if (const WebAsset* a = find_web_asset(name)) {
      current_request().route = "/web/" + name;
      return send_asset(req, res, *a);
    }
    current_request().route = "/web/other";
    std::string files;
    for (const WebAsset& a : web_assets()) files += (files.empty() ? "" : ", ") + std::string(a.name);
    s.reply_error(res, api_error("NOT_FOUND", "no such file of the page: /web/" + name, "the files are: " + files));
  });
}

}  // namespace steadyocr::server

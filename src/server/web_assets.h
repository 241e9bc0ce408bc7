// The files of the page (`GET /`, src/server/web/) and its sample image, embedded into the binary at build time
// (cmake/EmbedFiles.cmake writes web_assets.cpp into the build tree), so an installed binary needs no data directory.
#pragma once

#include <string_view>
#include <vector>

namespace steadyocr::server {

struct WebAsset {
  std::string_view name;   // served at /web/<name> ("index.html" also at /)
  std::string_view bytes;  // the file's exact bytes
  std::string_view etag;   // "\"<sha1 of the bytes>\"", quoted as the ETag header is
};

// Every embedded file (generated).
const std::vector<WebAsset>& web_assets();

// The file named `name`, or null.
const WebAsset* find_web_asset(std::string_view name);

// Its Content-Type, from the name's extension (application/octet-stream when unknown).
const char* web_content_type(std::string_view name);

}  // namespace steadyocr::server

// The page of `steadyocr serve` (GET /, src/server/web/): its files served from the binary byte for byte with their
// types and headers, 404 under --no-web, and, where Debian's chromium is installed, the page in headless Chromium:
// the sample read on load, its lines in the DOM, and in the screenshot the boxes' colour where the server's own answer
// for the same image puts the lines (build/tests/web_screenshot.png is kept for a person to look at).
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <cstdlib>
#include <filesystem>
#include <regex>

#include "server/server_process.h"
#include "test_util.h"

namespace steadyocr {
namespace {

using json = nlohmann::json;
using testing::body_json;
using testing::read_file;
using testing::ServerProcess;

std::string web_file(const std::string& name) {
  return read_file(testing::source_dir() + "/src/server/web/" + name);
}
std::string sample_bytes() {
  return read_file(testing::source_dir() + "/examples/sample_doc.jpg");
}

struct Served {
  const char* path;
  std::string bytes;
  const char* content_type;
};
std::vector<Served> served_files() {
  return {{"/", web_file("index.html"), "text/html; charset=utf-8"},
          {"/web/app.js", web_file("app.js"), "text/javascript; charset=utf-8"},
          {"/web/style.css", web_file("style.css"), "text/css; charset=utf-8"},
          {"/web/sample.jpg", sample_bytes(), "image/jpeg"}};
}

class ServerWeb : public ::testing::Test {
 protected:
  void start(std::vector<std::string> extra = {}) {
    SO_REQUIRE_MODELS();
    std::vector<std::string> args = {"--backend", "cpu", "--threads", "2"};
    args.insert(args.end(), extra.begin(), extra.end());
    server_ = std::make_unique<ServerProcess>(args);
    ASSERT_TRUE(server_->started()) << server_->log();
    ASSERT_TRUE(server_->wait_ready()) << server_->log();
  }
  void TearDown() override {
    if (!server_) return;
    EXPECT_EQ(server_->signal_and_wait(SIGTERM, 30), 0) << server_->log();
  }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
  }
  static std::string error_code(const httplib::Result& r) {
    json j = body_json(r);
    if (!j.is_object() || !j.contains("error") || !j["error"].is_object()) return "(no error body)";
    EXPECT_EQ(r->get_header_value("X-Steadyocr-Error-Code"), j["error"]["code"].get<std::string>());
    return j["error"]["code"];
  }
  std::unique_ptr<ServerProcess> server_;
};

TEST_F(ServerWeb, ServesThePageFilesByteForByte) {
  start();
  if (HasFatalFailure() || IsSkipped()) return;
  auto c = server_->client();
  for (const Served& f : served_files()) {
    SCOPED_TRACE(f.path);
    ASSERT_FALSE(f.bytes.empty()) << "the source file is missing";
    auto r = c.Get(f.path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->get_header_value("Content-Type"), f.content_type);
    EXPECT_TRUE(r->body == f.bytes) << "served " << r->body.size() << " bytes, the file has " << f.bytes.size();
    EXPECT_EQ(r->get_header_value("Cache-Control"), "no-cache");
    EXPECT_EQ(r->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_FALSE(r->get_header_value("X-Request-Id").empty());
    EXPECT_EQ(r->get_header_value("X-Steadyocr-Rung"), "cpu");
    const std::string etag = r->get_header_value("ETag");
    EXPECT_TRUE(std::regex_match(etag, std::regex("\"[0-9a-f]{40}\""))) << etag;
    // Revalidation: the same ETag is a 304 without a body.
    auto again = c.Get(f.path, {{"If-None-Match", etag}});
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 304);
    EXPECT_TRUE(again->body.empty());
    auto other = c.Get(f.path, {{"If-None-Match", "\"0000\""}});
    ASSERT_TRUE(other);
    EXPECT_EQ(other->status, 200);
  }
  // The page's own policy: nothing but this server.
  auto page = c.Get("/");
  ASSERT_TRUE(page);
  const std::string csp = page->get_header_value("Content-Security-Policy");
  EXPECT_NE(csp.find("default-src 'none'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_NE(csp.find("connect-src 'self'"), std::string::npos) << csp;
  // Nothing refers to another host (no CDN): no absolute URL, no protocol-relative one, no CSS import.
  for (const char* name : {"index.html", "app.js", "style.css"}) {
    const std::string text = web_file(name);
    EXPECT_EQ(text.find("http:"), std::string::npos) << name;
    EXPECT_EQ(text.find("https:"), std::string::npos) << name;
    EXPECT_EQ(text.find("\"//"), std::string::npos) << name;
    EXPECT_EQ(text.find("@import"), std::string::npos) << name;
  }

  // Unknown files of the page are the server's JSON 404, naming the files there are.
  for (const char* path : {"/web/nope.js", "/web/", "/web/../server.h"}) {
    SCOPED_TRACE(path);
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(error_code(r), "NOT_FOUND") << r->body;
  }
  auto nope = c.Get("/web/nope.js");
  ASSERT_TRUE(nope);
  EXPECT_NE(body_json(nope)["error"]["fix"].get<std::string>().find("app.js"), std::string::npos) << nope->body;

  // Counted under bounded route labels.
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  for (const char* series : {R"(steadyocr_http_requests_total{route="/",status="200",outcome="OK"})",
                             R"(steadyocr_http_requests_total{route="/web/app.js",status="200",outcome="OK"})",
                             R"(steadyocr_http_requests_total{route="/web/sample.jpg",status="304",outcome="OK"})",
                             R"(steadyocr_http_requests_total{route="/web/other",status="404",outcome="NOT_FOUND"})"}) {
    EXPECT_NE(m->body.find(series), std::string::npos) << series;
  }
}

TEST_F(ServerWeb, NoWebTurnsThePageOff) {
  start({"--no-web"});
  if (HasFatalFailure() || IsSkipped()) return;
  auto c = server_->client();
  for (const char* path : {"/", "/web/app.js", "/web/style.css", "/web/sample.jpg"}) {
    SCOPED_TRACE(path);
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_EQ(error_code(r), "NOT_FOUND") << r->body;
  }
  auto ocr = c.Post("/v1/ocr", sample_bytes(), "image/jpeg");  // the API serves on
  ASSERT_TRUE(ocr);
  EXPECT_EQ(ocr->status, 200) << ocr->body;
}

// --- headless Chromium

bool chromium_installed() {
  return std::system("command -v chromium >/dev/null 2>&1") == 0;
}

std::string html_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '&')
      out += "&amp;";
    else if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else
      out += c;
  }
  return out;
}

// ">text<": `text` as an element's whole content in serialised HTML.
std::string as_content(const std::string& text) {
  std::string s = ">";
  s += html_escaped(text);
  s += "<";
  return s;
}

// The value of attribute `name` on the first <tag ...> of `html` ("" when absent).
std::string attribute(const std::string& html, const std::string& tag, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(html, m, std::regex("<" + tag + "\\b[^>]*>"))) return "";
  const std::string open = m.str(0);
  if (!std::regex_search(open, m, std::regex("\\s" + name + "=\"([^\"]*)\""))) return "";
  return m.str(1);
}

class ServerWebChromium : public ServerWeb {
 protected:
  void SetUp() override {
    if (!chromium_installed()) {
      GTEST_SKIP() << "chromium is not on PATH: install Debian's chromium package (scripts/debian-packages.txt; "
                      "scripts/setup.sh does) to test the page in a headless browser";
    }
    dir_ = ::testing::TempDir() + "/web_chromium_" + std::to_string(::getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ + "/home");
  }
  void TearDown() override {
    ServerWeb::TearDown();
    if (!dir_.empty() && !HasFailure()) std::filesystem::remove_all(dir_);
  }

  // Runs headless Chromium on the page at `query` with `action` (--dump-dom, or --screenshot=FILE); its stdout.
  // Virtual time stops while a fetch is pending, so the budget is spent only after the OCR answer came: the page is
  // drawn by then. The wall-clock limit (timeout) is for a browser that hangs.
  std::string chromium(const std::string& query, const std::string& action) {
    const std::string out = dir_ + "/stdout.txt", log = dir_ + "/chromium.log";
    const std::string cmd = "cd '" + dir_ + "' && HOME='" + dir_ + "/home' timeout -k 5 120 chromium --headless=new " +
                            "--no-sandbox --disable-gpu --no-first-run --no-default-browser-check " +
                            "--disable-extensions --disable-sync --disable-background-networking " +
                            "--disable-component-update --user-data-dir='" + dir_ + "/profile' " +
                            "--window-size=1400,1000 --force-device-scale-factor=1 --hide-scrollbars " +
                            "--virtual-time-budget=20000 " + action + " '" + url("/" + query) + "' >'" + out + "' 2>'" +
                            log + "'";
    const int rc = std::system(cmd.c_str());
    EXPECT_EQ(rc, 0) << cmd << "\n" << read_file(log);
    return read_file(out);
  }

  std::string dir_;
};

TEST_F(ServerWebChromium, DrawsTheSamplesBoxesAndListsItsText) {
  start();
  if (HasFatalFailure() || IsSkipped()) return;
  // What the server reads in the sample, asked directly: the page must show the same.
  auto c = server_->client();
  auto direct = c.Post("/v1/ocr", sample_bytes(), "image/jpeg");
  ASSERT_TRUE(direct);
  ASSERT_EQ(direct->status, 200) << direct->body;
  const json expected = body_json(direct);
  const json& lines = expected["lines"];
  ASSERT_GE(lines.size(), 5u) << direct->body;
  const double width = expected["width"], height = expected["height"];

  // One run: the DOM once drawn (done, every line's text, where the canvas is), then the screenshot. Chromium lays
  // the page out in a viewport shorter than the window (1400x857 for a 1400x1000 window) and makes it the window's
  // size for the screenshot: the page redraws (it fits the image to the window), so the image's scale in the
  // screenshot is measured from the screenshot itself, below; its place (left, top) stays.
  const std::string shot = dir_ + "/page.png";
  const std::string dom = chromium("?sample=sample.jpg", "--dump-dom --screenshot='" + shot + "'");
  ASSERT_EQ(attribute(dom, "body", "data-state"), "done") << dom;
  EXPECT_EQ(attribute(dom, "body", "data-lines"), std::to_string(lines.size()));
  for (const auto& l : lines) {
    const std::string text = l["text"];
    EXPECT_NE(dom.find("<span class=\"t\">" + html_escaped(text) + "</span>"), std::string::npos) << text;
  }
  EXPECT_NE(dom.find(as_content(expected["rung"])), std::string::npos);
  for (const char* stage : {"det", "rec", "total", "queue"}) {
    EXPECT_NE(dom.find("<th>" + std::string(stage) + "</th>"), std::string::npos) << stage;
  }
  int left = 0, top = 0, css_w = 0, css_h = 0;
  const std::string rect = attribute(dom, "canvas", "data-rect");
  ASSERT_EQ(std::sscanf(rect.c_str(), "%d,%d,%d,%d", &left, &top, &css_w, &css_h), 4) << rect;
  EXPECT_GT(css_w, 100);
  EXPECT_GT(css_h, 100);

  // The screenshot: the boxes' colour, pure rgb(0, 255, 0) (anti-aliased edges blend: a margin).
  cv::Mat png = cv::imread(shot, cv::IMREAD_COLOR);
  ASSERT_FALSE(png.empty()) << "no screenshot at " << shot << "\n" << read_file(dir_ + "/chromium.log");
  std::filesystem::create_directories(std::string(STEADYOCR_BINARY_DIR) + "/tests");
  const std::string kept = std::string(STEADYOCR_BINARY_DIR) + "/tests/web_screenshot.png";
  std::filesystem::copy_file(shot, kept, std::filesystem::copy_options::overwrite_existing);
  auto box_mask = [](const cv::Mat& bgr) {
    cv::Mat mask;
    cv::inRange(bgr, cv::Scalar(0, 200, 0), cv::Scalar(90, 255, 90), mask);
    return mask;
  };
  const cv::Mat mask = box_mask(png);
  const int box_pixels = cv::countNonZero(mask);
  // The colour is the drawing's: the sample itself holds next to none.
  const int in_sample = cv::countNonZero(box_mask(cv::imread(testing::source_dir() + "/examples/sample_doc.jpg")));
  EXPECT_LT(in_sample, 20);
  ASSERT_GT(box_pixels, 300) << "next to no box-coloured pixels in " << kept;

  // The image's scale in the screenshot, from the extent of the coloured pixels against the extent of the server's
  // boxes (a stroke reaches 1.5 px beyond its path); it must keep the image's aspect and put the image where the
  // page said the canvas is. Every box is then checked where that scale puts it.
  std::vector<cv::Point> coloured;
  cv::findNonZero(mask, coloured);
  const cv::Rect extent = cv::boundingRect(coloured);
  double qx0 = 1e9, qy0 = 1e9, qx1 = -1e9, qy1 = -1e9;
  for (const auto& l : lines) {
    for (const auto& p : l["box"]) {
      qx0 = std::min(qx0, p[0].get<double>()), qx1 = std::max(qx1, p[0].get<double>());
      qy0 = std::min(qy0, p[1].get<double>()), qy1 = std::max(qy1, p[1].get<double>());
    }
  }
  const double sx = (extent.width - 3.0) / (qx1 - qx0), sy = (extent.height - 3.0) / (qy1 - qy0);
  const double ox = extent.x + 1.5 - qx0 * sx, oy = extent.y + 1.5 - qy0 * sy;
  EXPECT_NEAR(sx / sy, 1.0, 0.02) << "the boxes' extent in the screenshot does not keep the image's aspect";
  EXPECT_NEAR(ox, left, 3) << "the boxes are not where the page put the canvas (" << rect << ")";
  EXPECT_NEAR(oy, top, 3) << "the boxes are not where the page put the canvas (" << rect << ")";
  EXPECT_LE(ox + width * sx, png.cols + 1.0) << "the image is not wholly in the screenshot";
  EXPECT_LE(oy + height * sy, png.rows + 1.0) << "the image is not wholly in the screenshot";

  std::vector<std::vector<cv::Point>> quads;
  double perimeter = 0;
  for (const auto& l : lines) {
    std::vector<cv::Point> q;
    for (const auto& p : l["box"]) {
      q.emplace_back(static_cast<int>(std::lround(ox + p[0].get<double>() * sx)),
                     static_cast<int>(std::lround(oy + p[1].get<double>() * sy)));
    }
    perimeter += cv::arcLength(q, true);
    quads.push_back(std::move(q));
  }
  // At least 3 px of stroke for each pixel of the outlines (less where anti-aliased blends fall outside the margin).
  EXPECT_GT(box_pixels, perimeter * 2) << "box-coloured pixels: " << box_pixels << " for a perimeter of " << perimeter;
  cv::Mat near(mask.size(), CV_8U, cv::Scalar(0));
  cv::polylines(near, quads, true, cv::Scalar(255), 9);  // the outlines, 4 px of tolerance either side
  cv::Mat stray;
  cv::bitwise_and(mask, ~near, stray);
  EXPECT_LT(cv::countNonZero(stray), box_pixels / 50) << "box-coloured pixels away from every line's box";
  // Each box drawn: along each outline, nearly every point has the colour within 2 px.
  for (size_t i = 0; i < quads.size(); ++i) {
    int points = 0, hits = 0;
    for (size_t k = 0; k < quads[i].size(); ++k) {
      const cv::Point a = quads[i][k], b = quads[i][(k + 1) % quads[i].size()];
      for (int t = 0; t <= 20; ++t) {
        const cv::Point p = a + (b - a) * (t / 20.0);
        ++points;
        cv::Rect around(p.x - 2, p.y - 2, 5, 5);
        around &= cv::Rect(0, 0, mask.cols, mask.rows);
        hits += cv::countNonZero(mask(around)) > 0;
      }
    }
    EXPECT_GE(hits, points * 9 / 10) << "line " << i + 1 << " (" << lines[i]["text"] << "): " << hits << " of "
                                     << points << " points of its outline drawn";
  }
  // As many separate outlines as lines (where none of the server's boxes touch another).
  cv::Mat labels, stats, centroids;
  const int n = cv::connectedComponentsWithStats(mask, labels, stats, centroids, 8);
  int regions = 0;
  for (int k = 1; k < n; ++k) regions += stats.at<int>(k, cv::CC_STAT_AREA) >= 30;
  cv::Mat drawn(mask.size(), CV_8U, cv::Scalar(0));
  cv::polylines(drawn, quads, true, cv::Scalar(255), 3);
  const int expected_regions = cv::connectedComponents(drawn, labels, 8) - 1;
  EXPECT_NEAR(regions, expected_regions, 1) << "box regions in the screenshot vs the server's " << lines.size()
                                            << " lines (" << expected_regions << " apart)";
  EXPECT_GE(expected_regions, static_cast<int>(lines.size()) * 3 / 4);
  std::printf("screenshot: %s (%d box-coloured pixels, %d box regions, %zu lines)\n", kept.c_str(), box_pixels, regions,
              lines.size());
}

TEST_F(ServerWebChromium, ShowsTheServersError) {
  start();
  if (HasFatalFailure() || IsSkipped()) return;
  // The style sheet as the "image": the page posts it with its own type, text/css, which /v1/ocr refuses.
  auto c = server_->client();
  auto direct = c.Post("/v1/ocr", web_file("style.css"), "text/css");
  ASSERT_TRUE(direct);
  ASSERT_EQ(direct->status, 415) << direct->body;
  const json e = body_json(direct)["error"];
  const std::string dom = chromium("?sample=style.css", "--dump-dom");
  EXPECT_EQ(attribute(dom, "body", "data-state"), "error") << dom;
  EXPECT_EQ(attribute(dom, "body", "data-error-code"), e["code"].get<std::string>());
  EXPECT_NE(dom.find(as_content(e["code"])), std::string::npos) << dom;
  EXPECT_NE(dom.find(html_escaped(e["message"])), std::string::npos) << dom;
  EXPECT_NE(dom.find(html_escaped(e["fix"])), std::string::npos) << dom;
  EXPECT_NE(dom.find(">HTTP 415<"), std::string::npos) << dom;
  // An option preset from the page's query goes to the server with the image: out of range, the server refuses it.
  const std::string bad_option = chromium("?sample=sample.jpg&drop_score=7", "--dump-dom");
  EXPECT_EQ(attribute(bad_option, "body", "data-state"), "error") << bad_option;
  EXPECT_EQ(attribute(bad_option, "body", "data-error-code"), "INVALID_OPTION");
  EXPECT_NE(bad_option.find("drop_score"), std::string::npos);
  // A sample the server does not have: its 404, shown the same way.
  const std::string missing = chromium("?sample=missing.jpg", "--dump-dom");
  EXPECT_EQ(attribute(missing, "body", "data-state"), "error") << missing;
  EXPECT_EQ(attribute(missing, "body", "data-error-code"), "NOT_FOUND");
}

}  // namespace
}  // namespace steadyocr

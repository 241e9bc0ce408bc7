// The server's life under pressure: start-up (503 until ready), overload (503 SERVER_BUSY answered fast), deadlines
// (504; queued work dropped, never run), readiness after a step-down, SIGTERM under load (in flight finish, new work
// refused, exit 0 within the drain), and kill -9 of the worker process under load (nothing lost, restart counted).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "pipeline/image_header.h"
#include "server/admission.h"
#include "server/server_process.h"
#include "test_util.h"

namespace steadyocr {
namespace {

using json = nlohmann::json;
using testing::body_json;
using testing::read_file;
using testing::ServerProcess;
using Steady = std::chrono::steady_clock;

std::string data(const std::string& rel) {
  return testing::test_data(rel);
}
double ms_since(Steady::time_point t) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t).count();
}
// The value of one metric line ("name{labels} value") in /metrics, -1 when absent.
double metric(const std::string& text, const std::string& series) {
  auto at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(text.substr(at + series.size() + 2));
}

class ServerLifecycle : public ::testing::Test {
 protected:
  void SetUp() override { SO_REQUIRE_MODELS(); }
};

struct Tally {
  std::mutex mu;
  std::map<int, int> by_status;
  std::map<std::string, int> by_code;
  std::vector<double> busy_ms;
  int lost = 0;  // no response at all
  void add(const httplib::Result& r, double ms) {
    std::lock_guard<std::mutex> lock(mu);
    if (!r) {
      ++lost;
      return;
    }
    ++by_status[r->status];
    const std::string code = r->get_header_value("X-Steadyocr-Error-Code");
    if (!code.empty()) ++by_code[code];
    if (code == "SERVER_BUSY") busy_ms.push_back(ms);
  }
};

TEST_F(ServerLifecycle, StartsNotReadyThenServes) {
  ServerProcess s({"--ladder", "cpu-worker,cpu", "--threads", "2"});
  ASSERT_TRUE(s.started()) << s.log();
  // The address is printed before the models load: the first answers are 503 SERVER_STARTING.
  auto c = s.client();
  auto early = c.Post("/v1/ocr", data("ocr/decode/line.jpg"), "image/jpeg");
  auto ready = c.Get("/readyz");
  ASSERT_TRUE(early && ready);
  EXPECT_EQ(early->status, 503) << early->body;
  EXPECT_EQ(early->get_header_value("X-Steadyocr-Error-Code"), "SERVER_STARTING");
  EXPECT_EQ(early->get_header_value("Retry-After"), "1");
  EXPECT_EQ(early->get_header_value("X-Steadyocr-Rung"), "none");
  EXPECT_EQ(ready->status, 503);
  EXPECT_EQ(body_json(ready)["reason"], "STARTING");
  auto oip = c.Get("/v2/health/ready");
  ASSERT_TRUE(oip);
  EXPECT_EQ(oip->status, 503);
  ASSERT_TRUE(s.wait_ready()) << s.log();
  auto ok = c.Post("/v1/ocr", data("ocr/decode/line.jpg"), "image/jpeg");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  EXPECT_EQ(ok->get_header_value("X-Steadyocr-Rung"), "cpu-worker");
  EXPECT_EQ(body_json(ok)["rung"], "cpu-worker");
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
  EXPECT_NE(s.output().find("listening on http://127.0.0.1:"), std::string::npos);
}

TEST_F(ServerLifecycle, OverloadIsRefusedFastWithRetryAfter) {
  ServerProcess s(
      {"--backend", "cpu", "--threads", "2", "--max-queue", "2", "--concurrency", "1", "--batch-images", "1"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  const std::string doc = data("engine/doc_0003.jpg");
  Tally t;
  std::vector<std::thread> clients;
  for (int k = 0; k < 12; ++k) {
    clients.emplace_back([&] {
      auto c = s.client();
      for (int i = 0; i < 6; ++i) {
        auto t0 = Steady::now();
        auto r = c.Post("/v1/ocr", doc, "image/jpeg");
        t.add(r, ms_since(t0));
        if (r && r->status == 503) {
          EXPECT_EQ(r->get_header_value("Retry-After"), "1");
        }
      }
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(t.lost, 0);
  EXPECT_GT(t.by_status[200], 0);
  EXPECT_GT(t.by_code["SERVER_BUSY"], 0);
  EXPECT_EQ(t.by_status[200] + t.by_status[503], 72) << "only 200 and 503 SERVER_BUSY";
  std::sort(t.busy_ms.begin(), t.busy_ms.end());
  ASSERT_FALSE(t.busy_ms.empty());
  const double median = t.busy_ms[t.busy_ms.size() / 2];
  const double p90 = t.busy_ms[t.busy_ms.size() * 9 / 10];
  // The server's own time for each refusal (its request log: headers read to response written) has the tight bar.
  // At the client, the time also counts how long 12 client threads and the server's connection threads wait for a
  // core that the engine's two threads keep busy (5.4 ms median at times while ctest ran another test beside it,
  // against under 5 otherwise); its bars catch what a refusal must never wait on: OCR work (an image takes over
  // 100 ms here) or a delayed ACK (40 ms).
  std::vector<double> server_ms;
  std::istringstream lines(s.log());
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    const json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.value("outcome", "") == "SERVER_BUSY" && j.contains("ms"))
      server_ms.push_back(j["ms"].get<double>());
  }
  ASSERT_EQ(server_ms.size(), t.busy_ms.size()) << "every refusal is in the request log";
  std::sort(server_ms.begin(), server_ms.end());
  const double server_median = server_ms[server_ms.size() / 2];
  std::printf("SERVER_BUSY ms: server median %.2f, client median %.2f p90 %.2f (%zu refusals)\n", server_median, median,
              p90, server_ms.size());
  EXPECT_LT(server_median, 2.0) << "the server takes " << server_median << " ms to refuse (median)";
  EXPECT_LT(median, 15.0) << "SERVER_BUSY answers take " << median << " ms at the client (median)";
  EXPECT_LT(p90, 25.0) << "SERVER_BUSY answers take " << p90 << " ms at the client (p90)";
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_GT(metric(m->body, R"(steadyocr_http_requests_total{route="/v1/ocr",status="503",outcome="SERVER_BUSY"})"), 0);
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
}

// Admission by predicted memory: with room for two pages' working memory, six engine slots never take a third; the
// rest wait in the queue (not refused) and every request is read.
TEST_F(ServerLifecycle, LargePagesWaitForMemoryInsteadOfRunningTogether) {
  const std::string doc = data("engine/doc_0003.jpg");
  auto header = pipeline::parse_image_header(reinterpret_cast<const uint8_t*>(doc.data()), doc.size());
  ASSERT_TRUE(header.is_ok());
  const int64_t one = server::predicted_image_bytes(header->width, header->height, 960);
  const int64_t budget_mb = (2 * one + (1 << 20) - 1) >> 20;  // two pages fit, three do not
  ASSERT_LT(2 * one, budget_mb << 20);
  ASSERT_GT(3 * one, budget_mb << 20);
  ServerProcess s({"--backend", "cpu", "--threads", "2", "--concurrency", "6", "--batch-images", "1", "--admit-mem-mb",
                   std::to_string(budget_mb)});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  std::vector<int> status(12, 0);
  std::vector<std::thread> clients;
  for (size_t k = 0; k < status.size(); ++k) {
    clients.emplace_back([&, k] {
      auto c = s.client();
      c.set_read_timeout(120, 0);
      auto r = c.Post("/v1/ocr", doc, "image/jpeg");
      status[k] = r ? r->status : -1;
    });
  }
  for (auto& th : clients) th.join();
  for (int st : status) EXPECT_EQ(st, 200);
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric(m->body, R"(steadyocr_admission_memory_bytes{state="budget"})"),
            static_cast<double>(budget_mb << 20));
  const double peak = metric(m->body, R"(steadyocr_admission_memory_bytes{state="peak"})");
  EXPECT_GE(peak, static_cast<double>(one));  // the probe's tiny line costs less than a page
  EXPECT_LE(peak, static_cast<double>(budget_mb << 20));
  EXPECT_GT(metric(m->body, "steadyocr_admission_memory_waits_total"), 0);
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
}

TEST_F(ServerLifecycle, WaitingRequestsDoNotHoldEveryConnectionThread) {
  // 24 requests wait for the engine (one image at a time), each holding its connection's thread: far more than a
  // fixed pool of 8 would have. Health, metrics and refusals are still answered at once. The deadline is not what
  // this test is about: 24 pages one at a time outlasted the default 30 s on a loaded CI host (the pristine CI of
  // 20560b2 answered 2 of them with DEADLINE_EXCEEDED), so it is 180 s here.
  ServerProcess s({"--backend", "cpu", "--threads", "2", "--max-queue", "23", "--concurrency", "1", "--batch-images",
                   "1", "--deadline-ms", "180000"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  const std::string doc = data("engine/doc_0003.jpg");
  Tally t;
  std::vector<std::thread> clients;
  std::atomic<int> answered{0};
  auto in_flight = [&] {
    auto m = s.client().Get("/metrics");
    return m ? metric(m->body, "steadyocr_in_flight") : -1.0;
  };
  for (int k = 0; k < 24; ++k) {
    clients.emplace_back([&] {
      t.add(s.client().Post("/v1/ocr", doc, "image/jpeg"), 0);
      ++answered;
    });
    // The first one inside the engine before the other 23 come: 23 queued + 1 running is the capacity only once one
    // runs. Sent all at once, the 24th could find 23 queued while the dispatcher had not yet taken the first (the
    // pristine CI of a857441 answered one SERVER_BUSY).
    for (int i = 0; k == 0 && i < 2000 && in_flight() < 1 && answered.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  // Every one of the 24 is admitted (queued, running or answered) before the probes below, which would otherwise
  // take the place of one still on its way (23 queued + 1 running is the capacity).
  for (int i = 0, seen = 0; i < 1000; ++i) {
    auto m = s.client().Get("/metrics");
    const auto gauge = [&](const char* name) { return m ? std::max(0.0, metric(m->body, name)) : 0.0; };  // -1: unset
    // The two gauges come from one snapshot (Admission::snapshot; separate reads counted an image moving into the
    // engine twice, and the pristine CI of bca7984 lost one of the 24 to a probe that took its place). Twice in a
    // row all the same: an answered request is in neither gauge until its client has read the answer.
    seen = m && gauge("steadyocr_queue_depth") + gauge("steadyocr_in_flight") + answered.load() >= 24 ? seen + 1 : 0;
    if (seen == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto c = s.client();
  for (int i = 0; i < 5; ++i) {
    auto t0 = Steady::now();
    auto live = c.Get("/livez");
    const double live_ms = ms_since(t0);
    t0 = Steady::now();
    auto busy = c.Post("/v1/ocr", doc, "image/jpeg");
    const double busy_ms = ms_since(t0);
    ASSERT_TRUE(live && busy);
    EXPECT_EQ(live->status, 200);
    EXPECT_LT(live_ms, 50) << "/livez behind waiting requests";
    if (busy->status == 503) {
      EXPECT_EQ(busy->get_header_value("X-Steadyocr-Error-Code"), "SERVER_BUSY");
      EXPECT_LT(busy_ms, 50);
    }
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(t.lost, 0);
  std::string codes;
  for (const auto& [code, n] : t.by_code) codes += code + " x" + std::to_string(n) + " ";
  EXPECT_EQ(t.by_status[200], 24) << "the waiting requests are all read; errors: " << codes;
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
}

TEST_F(ServerLifecycle, PastTheDeadlineQueuedWorkIsDroppedNotRun) {
  // The queue must hold more than a deadline's worth of work whatever the engine's speed: 16 images one at a time
  // behind a 150 ms deadline. doc_0003 takes about 40 ms on the cpu backend with two threads (2026-12-03; 400 ms and
  // 8 images held before the LUT preprocessing and stopped holding after it: all 8 ran within their deadline).
  constexpr int kImages = 16;
  ServerProcess s({"--backend", "cpu", "--threads", "2", "--concurrency", "1", "--batch-images", "1", "--deadline-ms",
                   "150", "--probe-interval-ms", "600000"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  const std::string doc = data("engine/doc_0003.jpg");
  auto before = s.client().Get("/metrics");
  ASSERT_TRUE(before);
  const double images_before = metric(before->body, R"(steadyocr_images_total{rung="cpu",status="ok"})");
  Tally t;
  std::vector<std::thread> clients;
  for (int k = 0; k < kImages; ++k) {
    clients.emplace_back([&] {
      auto r = s.client().Post("/v1/ocr", doc, "image/jpeg");
      t.add(r, 0);
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(t.lost, 0);
  EXPECT_GT(t.by_code["DEADLINE_EXCEEDED"], 0);
  EXPECT_EQ(t.by_status[504], t.by_code["DEADLINE_EXCEEDED"]);
  std::this_thread::sleep_for(std::chrono::seconds(3));  // a running image finishes into its discarded ticket
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  const double dropped = metric(m->body, R"(steadyocr_deadline_dropped_total{where="queue"})");
  EXPECT_GT(dropped, 0) << m->body;
  // The engine read only what was not dropped from the queue.
  const double images = metric(m->body, R"(steadyocr_images_total{rung="cpu",status="ok"})") - images_before;
  EXPECT_EQ(images + dropped, kImages) << m->body;
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
}

TEST_F(ServerLifecycle, RequireGpuMakesAStepDownNotReady) {
  // The top rung (cpu-worker stands for a GPU rung) dies on every det call, in every worker: the engine steps down to
  // cpu. Without --require-gpu that is ready (the fallback named); with it, 503 STEPPED_DOWN.
  for (bool require : {false, true}) {
    std::vector<std::string> args = {"--ladder", "cpu-worker,cpu", "--threads", "2"};
    if (require) args.push_back("--require-gpu");
    ServerProcess s(args, {"STEADYOCR_FAULT=sticky@det:1+!"});
    ASSERT_TRUE(s.started()) << s.log();
    auto c = s.client();
    auto deadline = Steady::now() + std::chrono::seconds(120);
    json r;
    int status = 0;
    while (Steady::now() < deadline) {
      auto g = c.Get("/readyz");
      if (g) {
        r = body_json(g);
        status = g->status;
        const std::string reason = r.value("reason", "");
        if (r.value("rung", "") == "cpu" && reason != "STALE" && reason != "STARTING") break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    EXPECT_EQ(r["rung"], "cpu") << r.dump();
    EXPECT_EQ(r["requested_rung"], "cpu-worker");
    ASSERT_FALSE(r["fallbacks"].empty()) << r.dump();
    EXPECT_EQ(r["fallbacks"][0]["from"], "cpu-worker");
    EXPECT_EQ(r["fallbacks"][0]["to"], "cpu");
    if (require) {
      EXPECT_EQ(status, 503) << r.dump();
      EXPECT_EQ(r["reason"], "STEPPED_DOWN");
    } else {
      EXPECT_EQ(status, 200) << r.dump();
      EXPECT_EQ(r["reason"], "READY");
    }
    EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
  }
}

TEST_F(ServerLifecycle, ADeadDeviceIsNeverReady) {
  // The only rung's device dies on every det call, in every worker; its self-test (not a request) still passes, so
  // the models load. The readiness probe finds it dead: /readyz never says ready, and OCR is refused naming why.
  ServerProcess s({"--ladder", "cpu-worker", "--threads", "2", "--probe-interval-ms", "300"},
                  {"STEADYOCR_FAULT=sticky@det:1+!"});
  ASSERT_TRUE(s.started()) << s.log();
  auto c = s.client();
  std::set<std::string> reasons;
  bool probe_failed = false;
  for (auto until = Steady::now() + std::chrono::seconds(20); Steady::now() < until;) {
    auto r = c.Get("/readyz");
    ASSERT_TRUE(r);
    ASSERT_EQ(r->status, 503) << r->body;
    json j = body_json(r);
    reasons.insert(j["reason"]);
    probe_failed |= j["last_probe"].value("ok", true) == false;
    if (probe_failed && reasons.count("NO_RUNG")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(probe_failed) << s.log();
  EXPECT_TRUE(reasons.count("NO_RUNG")) << "every rung failed";
  auto ocr = c.Post("/v1/ocr", data("ocr/decode/line.jpg"), "image/jpeg");
  ASSERT_TRUE(ocr);
  EXPECT_GE(ocr->status, 500) << ocr->body;
  EXPECT_NE(ocr->status, 200);
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
}

TEST_F(ServerLifecycle, SigtermUnderLoadFinishesInFlightRefusesNewAndExitsZero) {
  ServerProcess s(
      {"--backend", "cpu", "--threads", "2", "--concurrency", "1", "--batch-images", "1", "--drain-s", "20"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  const std::string doc = data("engine/doc_0003.jpg");
  Tally before;
  std::vector<std::thread> clients;
  for (int k = 0; k < 4; ++k) {
    clients.emplace_back([&] { before.add(s.client().Post("/v1/ocr", doc, "image/jpeg"), 0); });
  }
  // Wait until they are admitted (one running, three queued), then SIGTERM.
  for (int i = 0; i < 200; ++i) {
    auto m = s.client().Get("/metrics");
    if (m && metric(m->body, "steadyocr_http_active_requests") >= 5) break;  // the 4 and this scrape
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto t0 = Steady::now();
  ::kill(s.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto c = s.client();
  auto ready = c.Get("/readyz");
  auto late = c.Post("/v1/ocr", doc, "image/jpeg");
  if (ready) {  // the listener stays open while in-flight work finishes
    EXPECT_EQ(ready->status, 503);
    EXPECT_EQ(body_json(ready)["reason"], "DRAINING");
  }
  if (late) {
    EXPECT_EQ(late->status, 503);
    EXPECT_EQ(late->get_header_value("X-Steadyocr-Error-Code"), "SERVER_DRAINING");
    EXPECT_EQ(late->get_header_value("Connection"), "close");  // its body was never read
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(before.lost, 0);
  EXPECT_EQ(before.by_status[200], 4) << "every request in flight at SIGTERM completes";
  EXPECT_EQ(s.wait_exit(25), 0) << s.log();
  // The refused request's unread body was not parsed as another request on its connection.
  EXPECT_EQ(s.log().find("BAD_REQUEST"), std::string::npos) << s.log();
  EXPECT_LT(ms_since(t0), 21000);
  EXPECT_FALSE(s.client(2).Get("/livez")) << "nothing listens after the drain";
}

TEST_F(ServerLifecycle, DrainDeadlineAnswersWhatIsStuckAndExitsOnTime) {
  // The worker hangs on the first request's det call (the start-up probe was call 1) and the watchdog is far off: the
  // drain deadline (1 s) answers that request SERVER_DRAINING and the server exits 0 without waiting for the engine.
  ServerProcess s({"--ladder", "cpu-worker", "--threads", "2", "--drain-s", "1", "--watchdog", "300",
                   "--probe-interval-ms", "600000"},
                  {"STEADYOCR_FAULT=hang@det:2"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  const std::vector<pid_t> workers = s.workers();
  ASSERT_EQ(workers.size(), 1u);
  int stuck_status = 0;
  std::string stuck_code;
  std::thread client([&] {
    auto r = s.client().Post("/v1/ocr", data("ocr/decode/line.jpg"), "image/jpeg");
    if (!r) return;
    stuck_status = r->status;
    stuck_code = r->get_header_value("X-Steadyocr-Error-Code");
  });
  for (int i = 0; i < 200; ++i) {
    auto m = s.client().Get("/metrics");
    if (m && metric(m->body, "steadyocr_in_flight") >= 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  auto t0 = Steady::now();
  ::kill(s.pid(), SIGTERM);
  client.join();
  EXPECT_EQ(stuck_status, 503);
  EXPECT_EQ(stuck_code, "SERVER_DRAINING");
  EXPECT_EQ(s.wait_exit(10), 0) << s.log();
  EXPECT_LT(ms_since(t0), 4000);
  // The hung worker does not outlive the server (it would hold the device): it exits when its pipe closes.
  bool worker_gone = false;
  for (int i = 0; i < 100 && !worker_gone; ++i) {
    const std::string stat = read_file("/proc/" + std::to_string(workers[0]) + "/stat");
    worker_gone = stat.empty() || stat.find(") Z") != std::string::npos;
    if (!worker_gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(worker_gone) << "worker " << workers[0] << " still runs after the server exited";
  // Every log line is a JSON object, the worker process's included.
  std::istringstream log(s.log());
  int worker_lines = 0;
  for (std::string line; std::getline(log, line);) {
    json j = json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << line;
    worker_lines += j.is_object() && j.value("component", "") == "fault";
  }
  EXPECT_GT(worker_lines, 0) << "the worker's fault lines";
}

TEST_F(ServerLifecycle, KilledWorkerUnderLoadLosesNoRequestAndIsCounted) {
  ServerProcess s({"--ladder", "cpu-worker,cpu", "--threads", "2", "--max-queue", "64"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  std::vector<pid_t> workers = s.workers();
  ASSERT_EQ(workers.size(), 1u) << "one cpu-worker process";
  const std::vector<std::string> docs = {data("engine/doc_0000.jpg"), data("engine/doc_0001.jpg"),
                                         data("engine/doc_0002.jpg"), data("engine/doc_0003.jpg")};
  Tally t;
  std::atomic<int> started{0};
  std::vector<std::thread> clients;
  for (int k = 0; k < 4; ++k) {
    clients.emplace_back([&, k] {
      auto c = s.client();
      for (int i = 0; i < 5; ++i) {
        ++started;
        auto r = c.Post("/v1/ocr", docs[(k + i) % docs.size()], "image/jpeg");
        t.add(r, 0);
        if (r && r->status == 200) {
          EXPECT_EQ(body_json(r)["rung"], "cpu-worker");
        }
      }
    });
  }
  while (started < 6) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_EQ(::kill(workers[0], SIGKILL), 0);
  for (auto& th : clients) th.join();
  EXPECT_EQ(t.lost, 0);
  EXPECT_EQ(t.by_status[200], 20) << "zero lost requests";
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_GE(metric(m->body, R"(steadyocr_worker_restarts_total{rung="cpu-worker"})"), 1) << m->body;
  EXPECT_GE(metric(m->body, R"(steadyocr_worker_losses_total{rung="cpu-worker"})"), 1) << m->body;
  EXPECT_EQ(metric(m->body, R"(steadyocr_rung_in_use{rung="cpu-worker",backend="cpu"})"), 1) << m->body;
  auto after = s.workers();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], workers[0]);
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
  EXPECT_TRUE(s.workers().empty());
}

}  // namespace
}  // namespace steadyocr

namespace steadyocr {
namespace {

// The CUDA_VISIBLE_DEVICES a process was started with ("" when none).
std::string visible_devices_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/environ", std::ios::binary);
  std::string env((std::istreambuf_iterator<char>(in)), {});
  const std::string key = std::string("CUDA_VISIBLE_DEVICES=");
  for (size_t pos = 0; pos < env.size();) {
    const size_t end = env.find('\0', pos);
    const std::string kv = env.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
    if (kv.rfind(key, 0) == 0) return kv.substr(key.size());
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return "";
}

// Two GPUs (the cpu-worker rung standing in for each): a worker per GPU pinned by CUDA_VISIBLE_DEVICES; a device that
// stays bad on GPU 1 takes GPU 1 out of service alone — every request answered 200 from GPU 0, /readyz ready with
// GPU 1 out and why, /metrics per GPU.
TEST_F(ServerLifecycle, OneBadGpuOfTwoLeavesServiceAloneAndLosesNoRequest) {
  // GPU 1 must still be out of service when /readyz is read: no re-probe in this test's time (the default 5 s came
  // before the end on a slow host, 2026-12-07, and GPU 1 was back in service).
  ServerProcess s(
      {"--ladder", "cpu-worker,cpu", "--gpus", "0,1", "--threads", "2", "--max-queue", "64", "--reprobe-ms", "600000"},
      {"STEADYOCR_FAULT=gpu1/sticky@det:1!"});
  ASSERT_TRUE(s.started() && s.wait_ready()) << s.log();
  std::set<std::string> pinned;
  for (pid_t w : s.workers()) pinned.insert(visible_devices_of(w));
  EXPECT_TRUE(pinned.count("0")) << "GPU 0's worker sees device 0 only";
  const std::vector<std::string> docs = {data("engine/doc_0000.jpg"), data("engine/doc_0001.jpg"),
                                         data("engine/doc_0002.jpg"), data("engine/doc_0003.jpg")};
  Tally t;
  std::vector<std::thread> clients;
  std::atomic<int> on_gpu0{0};
  for (int k = 0; k < 4; ++k) {
    clients.emplace_back([&, k] {
      auto c = s.client();
      for (int i = 0; i < 4; ++i) {
        auto r = c.Post("/v1/ocr", docs[(k + i) % docs.size()], "image/jpeg");
        t.add(r, 0);
        if (r && r->status == 200) {
          json b = body_json(r);
          EXPECT_EQ(b["rung"], "cpu-worker") << r->body;
          on_gpu0 += b.value("gpu", "") == "0";
        }
      }
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(t.lost, 0);
  EXPECT_EQ(t.by_status[200], 16) << "zero lost requests";
  EXPECT_EQ(on_gpu0, 16) << "GPU 1 read nothing: its device faults on every call";
  auto ready = s.client().Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 200) << ready->body;
  json rb = json::parse(ready->body, nullptr, false);
  ASSERT_TRUE(rb.contains("gpus")) << ready->body;
  ASSERT_EQ(rb["gpus"].size(), 2u) << ready->body;
  EXPECT_TRUE(rb["gpus"][0]["in_service"].get<bool>()) << ready->body;
  EXPECT_EQ(rb["gpus"][0]["device"], "0");
  EXPECT_FALSE(rb["gpus"][1]["in_service"].get<bool>()) << ready->body;
  ASSERT_FALSE(rb["gpus"][1]["out_of_service"].empty()) << ready->body;
  EXPECT_EQ(rb["gpus"][1]["out_of_service"][0]["reason"], "DEVICE_FAULT") << ready->body;
  auto m = s.client().Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(metric(m->body, R"(steadyocr_gpu_in_service{gpu="0"})"), 1) << m->body;
  EXPECT_EQ(metric(m->body, R"(steadyocr_gpu_in_service{gpu="1"})"), 0) << m->body;
  EXPECT_GE(metric(m->body, R"(steadyocr_gpu_images_total{gpu="0",status="ok"})"), 16) << m->body;
  EXPECT_GE(metric(m->body, R"(steadyocr_gpu_rerouted_total{gpu="1"})"), 1) << m->body;
  EXPECT_EQ(s.signal_and_wait(SIGTERM, 30), 0);
  // The workers' own lines name their GPU: GPU 1's fault lines say "gpu":"1", and no line of GPU 0's worker is one.
  std::istringstream log(s.log());
  int gpu1_faults = 0, gpu0_faults = 0, requests_on_gpu0 = 0;
  for (std::string line; std::getline(log, line);) {
    json j = json::parse(line, nullptr, false);
    if (j.is_object() && j.value("component", "") == "http" && j.value("route", "") == "/v1/ocr") {
      requests_on_gpu0 += j.value("gpu", "") == "0";
    }
    if (!j.is_object() || j.value("component", "") != "fault") continue;
    gpu1_faults += j.value("gpu", "") == "1";
    gpu0_faults += j.value("gpu", "") == "0";
  }
  EXPECT_GT(gpu1_faults, 0) << s.log();
  EXPECT_EQ(gpu0_faults, 0);
  EXPECT_EQ(requests_on_gpu0, 16) << "each request's log line names the GPU that read it";
  EXPECT_TRUE(s.workers().empty());
}

}  // namespace
}  // namespace steadyocr

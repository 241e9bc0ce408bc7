#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "engine/supervisor.h"
#include "test_util.h"

namespace steadyocr::engine {
namespace {

using json = nlohmann::json;

SupervisorOptions options(std::vector<std::string> extra = {}) {
  SupervisorOptions o;
  o.name = "test";
  o.argv = {SO_TEST_WORKER};
  for (auto& e : extra) o.argv.push_back(e);
  o.job_timeout_ms = 1500;
  o.max_attempts = 2;
  o.startup_timeout_ms = 10000;
  return o;
}

Message job(const std::string& op, const std::string& payload = "data") {
  return Message{json{{"op", op}}.dump(), payload};
}

int reply_pid(const Message& m) {
  return json::parse(m.header).value("pid", -1);
}

TEST(Supervisor, RunsJobsAndReportsJobErrorsWithoutRetrying) {
  Supervisor s(options());
  ASSERT_TRUE(s.start().is_ok());
  auto r = s.call(job("echo", "hello"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->payload, "hello");
  auto e = s.call(job("error"));
  ASSERT_TRUE(e.is_ok());
  EXPECT_EQ(json::parse(e->header).value("_error", ""), "bad job");
  EXPECT_EQ(s.stats().retries, 0u);
  EXPECT_EQ(s.stats().worker_starts, 1u);
}

TEST(Supervisor, RetriesOnANewWorkerAfterACrash) {
  std::string marker = ::testing::TempDir() + "/crash_once_marker";
  std::remove(marker.c_str());
  auto o = options();
  o.env = {{"TEST_WORKER_MARKER", marker}};
  Supervisor s(o);
  auto ready = s.start();
  ASSERT_TRUE(ready.is_ok());
  int first_pid = json::parse(*ready).value("pid", -1);
  auto r = s.call(job("crash_once", "payload-1"));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_EQ(r->payload, "payload-1");
  EXPECT_NE(reply_pid(*r), first_pid);  // answered by the restarted worker
  auto st = s.stats();
  EXPECT_EQ(st.retries, 1u);
  EXPECT_EQ(st.worker_losses, 1u);
  EXPECT_EQ(st.worker_starts, 2u);
  bool saw_exit = false;
  for (auto& ev : s.drain_events()) saw_exit |= ev.kind == "worker_exited";
  EXPECT_TRUE(saw_exit);
  EXPECT_TRUE(s.healthy());
}

TEST(Supervisor, StickyFaultKillsOnlyTheWorkerAndGivesUpAfterMaxAttempts) {
  Supervisor s(options());
  ASSERT_TRUE(s.start().is_ok());
  auto r = s.call(job("fault"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeviceFault);
  EXPECT_EQ(s.stats().worker_losses, 2u);
  // The supervisor still serves healthy jobs afterwards.
  auto ok = s.call(job("echo", "after"));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->payload, "after");
}

TEST(Supervisor, WatchdogKillsAHungWorker) {
  Supervisor s(options());
  ASSERT_TRUE(s.start().is_ok());
  auto t0 = std::chrono::steady_clock::now();
  auto r = s.call(job("hang"));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(secs, 10.0);
  EXPECT_EQ(s.stats().hangs, 2u);
  EXPECT_TRUE(s.call(job("echo")).is_ok());
}

TEST(Supervisor, ConcurrentCallersGetTheirOwnReplies) {
  Supervisor s(options());
  ASSERT_TRUE(s.start().is_ok());
  std::vector<std::thread> threads;
  std::vector<std::string> got(16);
  for (int i = 0; i < 16; ++i) {
    threads.emplace_back([&, i] {
      auto r = s.call(job("echo", "job-" + std::to_string(i)));
      if (r.is_ok()) got[i] = r->payload;
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 16; ++i) EXPECT_EQ(got[i], "job-" + std::to_string(i));
}

TEST(Supervisor, StartFailuresSayWhy) {
  Supervisor refused(options({"--refuse"}));
  auto r = refused.start();
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("no device for this test"), std::string::npos) << r.status().message();
  Supervisor died(options({"--die-at-start"}));
  auto d = died.start();
  ASSERT_FALSE(d.is_ok());
  EXPECT_NE(d.status().message().find("exited with code 9"), std::string::npos) << d.status().message();
  SupervisorOptions missing = options();
  missing.argv = {"/nonexistent/worker"};
  Supervisor m(missing);
  auto mr = m.start();
  ASSERT_FALSE(mr.is_ok());
  EXPECT_NE(mr.status().message().find("code 127"), std::string::npos) << mr.status().message();
}

}  // namespace
}  // namespace steadyocr::engine

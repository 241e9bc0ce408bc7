// Co-tenancy: parallel regions sized to the cores other processes leave free (core/cpu_share.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/cpu_share.h"
#include "core/metrics.h"
#include "core/parallel.h"

namespace steadyocr {
namespace {

TEST(CpuShare, ParsesTheRunnableCountOfLoadavg) {
  int r = -1;
  EXPECT_TRUE(cpu_share::parse_loadavg("0.52 0.58 0.59 3/1234 5678\n", &r));
  EXPECT_EQ(r, 3);
  EXPECT_TRUE(cpu_share::parse_loadavg("12.00 9.10 8.00 17/20001 1", &r));
  EXPECT_EQ(r, 17);
  for (const char* bad : {"", "0.1 0.2 0.3", "0.1 0.2 0.3 x/12 5", "0.1 0.2 0.3 /12 5", "0.1 0.2 0.3 -1/12 5"}) {
    r = 99;
    EXPECT_FALSE(cpu_share::parse_loadavg(bad, &r)) << "'" << bad << "'";
    EXPECT_EQ(r, 99) << "'" << bad << "'";
  }
}

TEST(CpuShare, TheTeamIsTheFreeCoresAtLeastOneAtMostWanted) {
  // Our own running threads are not someone else's load; the caller always runs.
  EXPECT_EQ(cpu_share::busy_elsewhere({1, 1}), 0);
  EXPECT_EQ(cpu_share::busy_elsewhere({2, 1}), 1);
  EXPECT_EQ(cpu_share::busy_elsewhere({3, 2}), 1);
  EXPECT_EQ(cpu_share::busy_elsewhere({1, 3}), 0);  // samples are not atomic: never below 0
  EXPECT_EQ(cpu_share::busy_elsewhere({2, 0}), 1);  // no own task seen running: the caller still is
  EXPECT_EQ(cpu_share::threads_for(2, 2, 0), 2);
  EXPECT_EQ(cpu_share::threads_for(2, 2, 1), 1);
  EXPECT_EQ(cpu_share::threads_for(2, 2, 5), 1);
  EXPECT_EQ(cpu_share::threads_for(8, 16, 4), 8);
  EXPECT_EQ(cpu_share::threads_for(16, 16, 4), 12);
  EXPECT_EQ(cpu_share::threads_for(1, 16, 0), 1);
  EXPECT_EQ(cpu_share::threads_for(4, 2, 0), 4);  // oversubscribing is the user's choice while nobody competes
  EXPECT_EQ(cpu_share::threads_for(4, 2, 1), 1);
}

TEST(CpuShare, OffOrOneThreadKeepsWhatWasAsked) {
  std::string why;
  EXPECT_FALSE(cpu_share::applies(1, &why));
  EXPECT_EQ(why, "one thread wanted");
  cpu_share::set_enabled(false);
  EXPECT_FALSE(cpu_share::applies(4, &why));
  EXPECT_EQ(why, "turned off (STEADYOCR_SHARE_CORES=off)");
  EXPECT_EQ(cpu_share::threads_now(4), 4);
  cpu_share::set_enabled(true);
}

// Every core of the machine given a busy process of its own: after a few samples the team is one thread, the change
// is counted, and it grows back once they stop. (Other tests running beside this one only add load, so the first
// half cannot pass by chance; the second half waits for the machine to calm down and says so when it does not.)
TEST(CpuShare, BusyProcessesOnEveryCoreShrinkTheTeamAndItGrowsBack) {
  const int cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  std::string why;
  if (cores < 2 || !cpu_share::applies(cores, &why)) {
    GTEST_SKIP() << "needs 2+ cores and sampling (" << (cores < 2 ? "one core" : why) << ")";
  }
  cpu_share::reset_for_testing();
  const double shrunk0 = metrics::value("steadyocr_cpu_thread_changes_total", {{"to", "fewer"}});
  std::vector<pid_t> busy;
  for (int i = 0; i < cores; ++i) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (volatile unsigned x = 0;; x = x + 1) {
      }
    }
    busy.push_back(pid);
  }
  int threads = cores;
  for (int i = 0; i < 40 && threads > 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    threads = cpu_share::threads_now(cores);
  }
  for (pid_t p : busy) kill(p, SIGKILL);
  for (pid_t p : busy) waitpid(p, nullptr, 0);
  EXPECT_EQ(threads, 1) << cores << " busy processes on " << cores << " cores";
  EXPECT_EQ(metrics::value("steadyocr_cpu_thread_changes_total", {{"to", "fewer"}}) - shrunk0, 1.0);
  EXPECT_EQ(metrics::value("steadyocr_cpu_threads"), 1.0);
  // Freed: one sample without the load is enough. Under a parallel ctest other tests may hold cores for a while.
  for (int i = 0; i < 200 && threads == 1; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    threads = cpu_share::threads_now(cores);
  }
  if (threads == 1) GTEST_SKIP() << "the machine stayed busy for 6 s after the busy processes ended";
  EXPECT_GT(threads, 1);
  cpu_share::reset_for_testing();
}

}  // namespace
}  // namespace steadyocr

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "core/proc_children.h"

namespace steadyocr {
namespace {

const ChildProcess* find_child(const std::vector<ChildProcess>& all, pid_t pid) {
  auto it = std::find_if(all.begin(), all.end(), [pid](const ChildProcess& c) { return c.pid == pid; });
  return it == all.end() ? nullptr : &*it;
}

TEST(ChildProcesses, ListsAChildWithItsCpuTime) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Busy for 300 ms of wall time, then asleep until killed.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile unsigned long spin = 0;
    while (std::chrono::steady_clock::now() < until) ++spin;
    for (;;) ::pause();
  }
  // Read until the child sleeps (its spin over), for at most 10 s on a loaded machine.
  std::vector<ChildProcess> all;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  do {
    ::usleep(50 * 1000);
    all = child_processes(::getpid());
    const ChildProcess* c = find_child(all, child);
    if (c != nullptr && c->state == 'S' && c->cpu_ms > 0) break;
  } while (std::chrono::steady_clock::now() < give_up);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  const ChildProcess* c = find_child(all, child);
  ASSERT_NE(c, nullptr) << "the forked child is not among this process's children";
  EXPECT_EQ(c->state, 'S');  // asleep in pause()
  // 300 ms of spinning: at least one clock tick of CPU, and no more than the spin's wall time plus a few ticks.
  EXPECT_GT(c->cpu_ms, 0.0);
  EXPECT_LT(c->cpu_ms, 400.0);
  // Not a child of the child: nothing lists this test process under its own pid.
  EXPECT_EQ(find_child(child_processes(child), ::getpid()), nullptr);
}

TEST(ChildProcesses, NoneForAProcessWithoutChildren) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    for (;;) ::pause();
  }
  EXPECT_TRUE(child_processes(child).empty());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  // After it was waited for it is gone from the list.
  EXPECT_EQ(find_child(child_processes(::getpid()), child), nullptr);
}

}  // namespace
}  // namespace steadyocr

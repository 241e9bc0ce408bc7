// Thread names: what the kernel shows for a named thread (top -H, /proc/PID/task/TID/comm), the 15-byte cut, and
// OpenMP threads started from a named thread carrying its name (scripts/serve_load.sh pins so-engine by name).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <omp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "core/thread_name.h"

namespace steadyocr {
namespace {

std::string comm_of_this_thread() {
  std::ifstream f("/proc/self/task/" + std::to_string(::syscall(SYS_gettid)) + "/comm");
  std::string s;
  std::getline(f, s);
  return s;
}

TEST(ThreadName, TheKernelShowsTheNameAndCutsItAt15Bytes) {
  std::string shown, read_back, cut;
  std::thread([&] {
    name_this_thread("so-test");
    shown = comm_of_this_thread();
    read_back = this_thread_name();
    name_this_thread("so-a-name-longer-than-fifteen");
    cut = comm_of_this_thread();
  }).join();
  EXPECT_EQ(shown, "so-test");
  EXPECT_EQ(read_back, "so-test");
  EXPECT_EQ(cut, "so-a-name-longe");
}

// libgomp (GCC's OpenMP, which the build uses) gives every thread that starts a parallel region its own team, cloned
// from it; LLVM's libomp (the clang builds under the sanitizers) keeps one pool for all, so its threads keep the name
// of whichever thread first made them.
TEST(ThreadName, OpenMpThreadsStartedFromANamedThreadCarryItsName) {
  Dl_info runtime{};
  if (::dladdr(reinterpret_cast<void*>(&omp_get_num_threads), &runtime) && runtime.dli_fname &&
      !std::strstr(runtime.dli_fname, "libgomp")) {
    GTEST_SKIP() << "OpenMP runtime " << runtime.dli_fname
                 << " shares one pool of threads among all threads (only libgomp starts a team per thread)";
  }
  std::set<std::string> names;
  int team = 0;
  std::thread([&] {
    name_this_thread("so-named-team");
    std::mutex mu;
#pragma omp parallel num_threads(3)
    {
      const std::string name = comm_of_this_thread();
      {
        std::lock_guard<std::mutex> lock(mu);
        names.insert(name);
      }
#pragma omp single
      team = omp_get_num_threads();
    }
  }).join();
  ASSERT_GE(team, 2) << "OpenMP gave a team of one: nothing to check";
  EXPECT_EQ(names, std::set<std::string>{"so-named-team"});
}

}  // namespace
}  // namespace steadyocr

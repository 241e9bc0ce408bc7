// SerialScope: a thread that already runs one job among many keeps its parallel_for work to itself.
// ThreadShareScope: a thread that leads one of several groups takes its share of the threads.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/cpu_share.h"
#include "core/parallel.h"

namespace steadyocr {
namespace {

std::set<std::thread::id> threads_used(int64_t n) {
  std::mutex mu;
  std::set<std::thread::id> ids;
  parallel_for(n, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  parallel_for_each(n, [&](int64_t) {
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  return ids;
}

TEST(SerialScope, RunsParallelLoopsInlineWhileAliveAndNests) {
  const int saved = num_threads();
  set_num_threads(4);
  {
    SerialScope outer;
    {
      SerialScope inner;
      EXPECT_EQ(threads_used(1000), std::set<std::thread::id>{std::this_thread::get_id()});
    }
    // Still inside the outer scope.
    EXPECT_EQ(threads_used(1000), std::set<std::thread::id>{std::this_thread::get_id()});
  }
  // Other threads are not affected by a scope on this one.
  std::atomic<bool> other_serial{true};
  {
    SerialScope here;
    std::thread t([&] { other_serial = threads_used(1000).size() == 1; });
    t.join();
  }
  if (omp_get_num_procs() > 1) {
    EXPECT_FALSE(other_serial);
  }
  set_num_threads(saved);
}

TEST(ThreadShareScope, EachGroupTakesItsShareAndRunsAreNotDividedAgain) {
  const int saved = num_threads();
  cpu_share::set_enabled(false);  // the share of --threads as given, whatever else this machine runs
  set_num_threads(8);
  EXPECT_EQ(threads_now(), 8);
  EXPECT_EQ(threads_for_run(2), 4);  // no groups: the runs in progress divide the threads
  {
    ThreadShareScope share(4);
    EXPECT_EQ(threads_now(), 2);
    EXPECT_EQ(threads_for_run(4), 2);  // the group's share already accounts for the others
    {
      ThreadShareScope more(16);
      EXPECT_EQ(threads_now(), 1);  // never below one
    }
    EXPECT_EQ(threads_now(), 2);
    // Another thread is not in this one's group.
    int other = 0;
    std::thread t([&] { other = threads_now(); });
    t.join();
    EXPECT_EQ(other, 8);
    // A parallel loop started by this thread uses at most its share.
    if (omp_get_num_procs() > 1) {
      EXPECT_LE(threads_used(1000).size(), 2u);
    }
  }
  EXPECT_EQ(threads_now(), 8);
  // Two calls at once, each with two groups: four group threads alive share the 8 threads, 2 each (not 4).
  constexpr int kThreads = 4;
  std::atomic<int> entered{0}, left{0};
  std::vector<int> seen(kThreads, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      ThreadShareScope share(2);
      ++entered;
      while (entered.load() < kThreads) std::this_thread::yield();
      seen[i] = threads_now();
      ++left;
      while (left.load() < kThreads) std::this_thread::yield();  // all still alive while each reads
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(seen, std::vector<int>(kThreads, 2));
  {
    ThreadShareScope share(2);  // alone again: its own call's share
    EXPECT_EQ(threads_now(), 4);
  }
  set_num_threads(saved);
  cpu_share::set_enabled(true);
}

}  // namespace
}  // namespace steadyocr

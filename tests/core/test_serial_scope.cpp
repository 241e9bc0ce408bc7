// SerialScope: a thread that already runs one job among many keeps its parallel_for work to itself.
#include <gtest/gtest.h>

#include <omp.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

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

}  // namespace
}  // namespace steadyocr

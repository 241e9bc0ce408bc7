// The watchdog under layers 3-4: a check process that hangs is killed at its deadline and reported, a crash
// is reported with its signal, and output is captured.
#include <gtest/gtest.h>

#include "doctor/child.h"

namespace steadyocr::doctor {
namespace {

TEST(DoctorChild, CapturesOutputAndExitCode) {
  ChildResult r = run_child({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, 10000);
  ASSERT_TRUE(r.started) << r.start_error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST(DoctorChild, ExtraEnvironmentReachesTheChild) {
  ChildResult r =
      run_child({"/bin/sh", "-c", "printf %s \"$SO_DOCTOR_TEST_VAR\""}, 10000, {{"SO_DOCTOR_TEST_VAR", "x y"}});
  EXPECT_EQ(r.out, "x y");
}

TEST(DoctorChild, HangIsKilledAtTheDeadline) {
  // The grandchild shares the process group and dies with it; the pipe would otherwise stay open.
  ChildResult r = run_child({"/bin/sh", "-c", "sleep 30 & sleep 30"}, 500);
  ASSERT_TRUE(r.started);
  EXPECT_TRUE(r.timed_out);
  EXPECT_EQ(r.signal, 9);
  EXPECT_LT(r.elapsed_ms, 5000);
}

TEST(DoctorChild, ChildThatClosesItsPipesButLingersIsKilled) {
  ChildResult r = run_child({"/bin/sh", "-c", "exec >/dev/null 2>&1; sleep 30"}, 500);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.elapsed_ms, 5000);
}

TEST(DoctorChild, CrashReportsTheSignal) {
  ChildResult r = run_child({"/bin/sh", "-c", "kill -SEGV $$"}, 10000);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, 11);
}

TEST(DoctorChild, MissingProgramCannotStart) {
  ChildResult r = run_child({"/nonexistent/steadyocr"}, 1000);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.start_error.find("/nonexistent/steadyocr"), std::string::npos);
}

}  // namespace
}  // namespace steadyocr::doctor

// `steadyocr serve` as a command: bad flags and files exit 2 naming them, a port in use exits 2 naming it, models that
// cannot load exit 1 naming the file; nothing is left listening.
#include <gtest/gtest.h>

#include <fstream>

#include "cli/cli_run.h"
#include "server/server_process.h"
#include "test_util.h"

namespace steadyocr {
namespace {

using testing::run_steadyocr;

TEST(ServeCommand, BadFlagsAndFilesExitTwoNamingThem) {
  auto missing = run_steadyocr("serve --port 0 --models /nonexistent/models");
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/models"), std::string::npos) << missing.err;
  EXPECT_NE(missing.err.find("scripts/setup.sh"), std::string::npos) << missing.err;
  EXPECT_EQ(run_steadyocr("serve --max-queue 0").code, 2);
  EXPECT_EQ(run_steadyocr("serve --port 70000").code, 2);
  EXPECT_EQ(run_steadyocr("serve --log-format xml").code, 2);
  EXPECT_EQ(run_steadyocr("serve --no-such-flag").code, 2);
  auto help = run_steadyocr("serve --help");
  EXPECT_EQ(help.code, 0);
  for (const char* flag : {"--max-queue", "--deadline-ms", "--max-body-mb", "--max-batch", "--drain-s", "--det-only",
                           "--require-gpu", "--backend", "--no-web"}) {
    EXPECT_NE(help.out.find(flag), std::string::npos) << flag;
  }
}

TEST(ServeCommand, APortInUseExitsTwoNamingIt) {
  SO_REQUIRE_MODELS();
  testing::ServerProcess first({"--backend", "cpu", "--threads", "1"});
  ASSERT_TRUE(first.started()) << first.log();
  auto second = run_steadyocr("serve --backend cpu --models " + testing::models_dir() + " --port " +
                              std::to_string(first.port()));
  EXPECT_EQ(second.code, 2) << second.err;
  EXPECT_NE(second.err.find("cannot listen on 127.0.0.1:" + std::to_string(first.port())), std::string::npos)
      << second.err;
  EXPECT_TRUE(first.wait_ready()) << "the first server is untouched";
}

TEST(ServeCommand, ModelsThatCannotLoadExitNamingTheFile) {
  SO_REQUIRE_MODELS();
  const std::string junk = ::testing::TempDir() + "/serve_junk_det.onnx";
  std::ofstream(junk) << "not an onnx model";
  // Under `timeout`: the server must exit by itself (it once stayed accepting when the engine failed at once).
  for (int i = 0; i < 3; ++i) {
    auto r = run_steadyocr("serve --port 0 --backend cpu --models " + testing::models_dir() + " --det-model " + junk,
                           "timeout 60");
    EXPECT_NE(r.code, 124) << "still running after 60 s";
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find(junk), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("listening on"), std::string::npos) << "it listened (503 SERVER_STARTING) while loading";
  }
}

}  // namespace
}  // namespace steadyocr

// core/disk_cache.h (what identifies this build, atomic writes, bounded directories) and core/content_hash.h.
#include "core/content_hash.h"
#include "core/disk_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>

namespace steadyocr {
namespace {

namespace fs = std::filesystem;

TEST(DiskCache, BuildIdentityIsStableHexAndCoversThisBuild) {
  const std::string& id = build_identity();
  ASSERT_EQ(id.size(), 16u);
  EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  EXPECT_EQ(&build_identity(), &id);
  EXPECT_NE(id, "0000000000000000");
}

TEST(ContentHash, DependsOnBytesAndSeed) {
  using namespace std::string_view_literals;
  EXPECT_EQ(hash_bytes("model"sv), hash_bytes("model"sv));
  EXPECT_NE(hash_bytes("model"sv), hash_bytes("modem"sv));
  EXPECT_NE(hash_bytes("model"sv, 1), hash_bytes("model"sv, 2));
  EXPECT_NE(hash_bytes(""sv), hash_bytes(std::string(1, '\0')));
  const std::string bytes = "model";
  EXPECT_EQ(hash_bytes(bytes), hash_bytes(bytes.data(), bytes.size()));
}

TEST(DiskCache, AtomicWritesAndPruning) {
  const fs::path dir = fs::temp_directory_path() / ("so_disk_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const std::string p = (dir / "a" / "b.ok").string();
  ASSERT_TRUE(write_file_atomically(p, "one"));
  ASSERT_TRUE(write_file_atomically(p, "two"));
  std::stringstream got;
  got << std::ifstream(p).rdbuf();
  EXPECT_EQ(got.str(), "two");
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir / "a")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "no temporary file left behind";
  // A directory that cannot be made (a file is in the way).
  EXPECT_FALSE(write_file_atomically((dir / "a" / "b.ok" / "c").string(), "x"));
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(write_file_atomically((dir / "p" / std::to_string(i)).string(), "x"));
    fs::last_write_time(dir / "p" / std::to_string(i), fs::file_time_type::clock::now() - std::chrono::hours(10 - i));
  }
  prune_directory((dir / "p").string(), 4);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(fs::exists(dir / "p" / std::to_string(i)), i >= 2) << i;
  prune_directory((dir / "missing").string(), 1);  // nothing to do, no error
  fs::remove_all(dir);
}

TEST(DiskCache, DirectoryFromTheEnvironment) {
  const char* saved = std::getenv("STEADYOCR_CACHE_DIR");
  const std::string keep = saved ? saved : "";
  ::setenv("STEADYOCR_CACHE_DIR", "off", 1);
  EXPECT_EQ(cache_dir_from_environment(), "");
  ::setenv("STEADYOCR_CACHE_DIR", "/tmp/x", 1);
  EXPECT_EQ(cache_dir_from_environment(), "/tmp/x");
  if (saved) {
    ::setenv("STEADYOCR_CACHE_DIR", keep.c_str(), 1);
  } else {
    ::unsetenv("STEADYOCR_CACHE_DIR");
  }
}

}  // namespace
}  // namespace steadyocr

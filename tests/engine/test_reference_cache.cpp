// The self-test's reference outputs kept between processes (engine/reference_cache.h): found only for the same model
// bytes, input and build; a broken file is a miss; a rung that disagrees with a kept output is judged again against a
// fresh one, so a wrong file cannot fail a good rung (nor pass a bad one).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/content_hash.h"
#include "core/disk_cache.h"
#include "core/npy.h"
#include "engine/faults.h"
#include "engine/reference_cache.h"
#include "engine/rung.h"
#include "pipeline/pipeline.h"
#include "test_util.h"

namespace steadyocr::engine {
namespace {

namespace fs = std::filesystem;

class ReferenceCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("so_refcache_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // The digest the importer gives a model file holding `bytes` (graph::Graph::source_digest).
  static uint64_t model(const std::string& bytes) { return hash_bytes(bytes); }
  fs::path dir_;
};

Tensor filled(Shape s, float v) {
  Tensor t = Tensor::empty(DType::kF32, std::move(s));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = v + 0.25f * static_cast<float>(i % 7);
  return t;
}

TEST_F(ReferenceCacheTest, FoundOnlyForTheSameModelBytesAndInput) {
  ReferenceCache cache((dir_ / "c").string());
  const uint64_t m = model("model bytes, version 1");
  const Tensor x = filled({2, 3, 4}, 1.f), y = filled({2, 5}, -3.f);
  EXPECT_FALSE(cache.find(m, "rec", x).has_value());
  cache.keep(m, "rec", x, y);
  auto got = cache.find(m, "rec", x);
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->shape(), y.shape());
  for (int64_t i = 0; i < y.numel(); ++i) EXPECT_EQ(got->data<float>()[i], y.data<float>()[i]) << i;
  EXPECT_FALSE(cache.find(m, "det", x).has_value());                                // another stage
  EXPECT_FALSE(cache.find(m, "rec", filled({2, 3, 4}, 1.5f)).has_value());          // another input
  EXPECT_FALSE(cache.find(m, "rec", filled({2, 4, 3}, 1.f)).has_value());           // same bytes, another shape
  EXPECT_FALSE(cache.find(model("model bytes, version 2"), "rec", x).has_value());  // the file changed
  // A graph not read from a file (digest 0) has nothing kept for it.
  cache.keep(0, "rec", x, y);
  EXPECT_FALSE(cache.find(0, "rec", x).has_value());
  EXPECT_EQ(cache.path_for(0, "rec", x), "");
}

TEST_F(ReferenceCacheTest, TheDirectoryKeepsTheMostRecentOutputsOnly) {
  ReferenceCache cache((dir_ / "c").string());
  const Tensor y = filled({2, 5}, -3.f);
  for (int i = 0; i < 40; ++i) cache.keep(model("model " + std::to_string(i)), "rec", filled({2, 3}, 1.f), y);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir_ / "c" / "reference")) files += e.is_regular_file();
  EXPECT_EQ(files, 32u);
  EXPECT_TRUE(cache.find(model("model 39"), "rec", filled({2, 3}, 1.f)).has_value());
}

TEST_F(ReferenceCacheTest, NoDirectoryKeepsNothingAndABrokenFileIsAMiss) {
  const uint64_t m = model("bytes");
  const Tensor x = filled({2, 3}, 0.f), y = filled({2, 9}, 1.f);
  ReferenceCache none("");
  none.keep(m, "rec", x, y);
  EXPECT_FALSE(none.find(m, "rec", x).has_value());
  EXPECT_EQ(none.path_for(m, "rec", x), "");

  ReferenceCache cache((dir_ / "c").string());
  const std::string path = cache.path_for(m, "rec", x);
  ASSERT_NE(path, "");
  cache.keep(m, "rec", x, y);
  ASSERT_TRUE(fs::exists(path));
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "\x93NUMPY broken";
  EXPECT_FALSE(cache.find(m, "rec", x).has_value());
  ASSERT_TRUE(save_npy(path, filled({3, 9}, 1.f)).is_ok());  // a batch that is not the input's
  EXPECT_FALSE(cache.find(m, "rec", x).has_value());
  // A directory that cannot be made (a file is in the way): keeping fails quietly, finding misses.
  std::ofstream((dir_ / "file").string()) << "x";
  ReferenceCache blocked((dir_ / "file" / "sub").string());
  blocked.keep(m, "rec", x, y);
  EXPECT_FALSE(blocked.find(m, "rec", x).has_value());
}

TEST_F(ReferenceCacheTest, TheSelfTestKeepsReusesAndDistrustsAWrongFile) {
  SO_REQUIRE_MODELS();
  EngineOptions o;
  o.models = pipeline::model_paths_in(testing::models_dir());
  o.self_test = true;
  o.cache_dir = (dir_ / "c").string();
  auto injector = make_injector({}, false);
  std::string first, second, third;
  ASSERT_TRUE(build_rung_pipeline("cpu", o, injector, &first).is_ok());
  EXPECT_EQ(first.find("reference kept"), std::string::npos) << first;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir_ / "c" / "reference")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 2u) << "det and rec";
  ASSERT_TRUE(build_rung_pipeline("cpu", o, injector, &second).is_ok());
  EXPECT_NE(second.find("det [1,3,96,320] nmse="), std::string::npos) << second;
  EXPECT_NE(second.find("reference kept"), std::string::npos) << second;
  // Wrong kept outputs (right shape, every value off): the rung is judged against fresh ones, passes, and the files
  // hold the reference's outputs again.
  std::vector<Tensor> good;
  for (const auto& f : files) {
    auto t = load_npy(f.string());
    ASSERT_TRUE(t.is_ok());
    good.push_back(*t);
    Tensor bad = Tensor::empty(DType::kF32, t->shape());
    for (int64_t i = 0; i < bad.numel(); ++i) bad.data<float>()[i] = t->data<float>()[i] + 0.5f;
    ASSERT_TRUE(save_npy(f.string(), bad).is_ok());
  }
  ASSERT_TRUE(build_rung_pipeline("cpu", o, injector, &third).is_ok());
  EXPECT_EQ(third.find("reference kept"), std::string::npos) << third;
  for (size_t k = 0; k < files.size(); ++k) {
    auto t = load_npy(files[k].string());
    ASSERT_TRUE(t.is_ok());
    ASSERT_EQ(t->shape(), good[k].shape());
    for (int64_t i = 0; i < t->numel(); ++i) ASSERT_EQ(t->data<float>()[i], good[k].data<float>()[i]) << files[k];
  }
}

}  // namespace
}  // namespace steadyocr::engine

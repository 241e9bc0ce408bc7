// The CUDA plugin loader, runnable everywhere: where the plugin or a GPU is missing it must say why, the cuda
// backends must not be listed, and the main binary must not link CUDA. Version and ABI mismatches are refused.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "backends/cuda/plugin_abi.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda_plugin.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

void dummy_build(SoPluginBuildInfo*) {}
int dummy_runtime(SoPluginRuntimeInfo*) {
  return 1;
}
int dummy_device(int, SoPluginDeviceInfo*, char*, size_t) {
  return 1;
}
void* dummy_create(int, const char*, size_t, char*, size_t) {
  return nullptr;
}
void dummy_destroy(void*) {}
int dummy_check(const char*, const char*, char*, size_t) {
  return 1;
}
int dummy_fault(const char*, char*, size_t) {
  return 0;
}

SteadyocrPluginApi complete_table(const std::string& abi) {
  static std::string keep;
  keep = abi;
  SteadyocrPluginApi api{};
  api.api_version = STEADYOCR_PLUGIN_API_VERSION;
  api.abi_tag = keep.c_str();
  api.get_build_info = dummy_build;
  api.query_runtime = dummy_runtime;
  api.query_device = dummy_device;
  api.create_backend = dummy_create;
  api.destroy_backend = dummy_destroy;
  api.run_check = dummy_check;
  api.set_fault = dummy_fault;
  return api;
}

TEST(CudaPlugin, AcceptsMatchingTable) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda.so");
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(CudaPlugin, RefusesApiVersionMismatch) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  api.api_version = 999;
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda.so");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("version 999"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("version " + std::to_string(STEADYOCR_PLUGIN_API_VERSION)), std::string::npos);
  EXPECT_NE(s.message().find("/x/libsteadyocr_cuda.so"), std::string::npos);
}

TEST(CudaPlugin, RefusesAbiMismatch) {
  SteadyocrPluginApi api = complete_table("gcc-1 cxx11abi=0 c++0 steadyocr-0.0.0");
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda.so");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("ABI"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(plugin_abi_tag()), std::string::npos) << s.message();
}

TEST(CudaPlugin, RefusesIncompleteTableAndNull) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  api.create_backend = nullptr;
  EXPECT_FALSE(runtime::check_plugin_api(&api, "p").is_ok());
  EXPECT_FALSE(runtime::check_plugin_api(nullptr, "p").is_ok());
}

TEST(CudaPlugin, CandidatesStartWithTheEnvironmentVariable) {
  const char* old = std::getenv("STEADYOCR_CUDA_PLUGIN");
  std::string saved = old ? old : "";
  setenv("STEADYOCR_CUDA_PLUGIN", "/nonexistent/libsteadyocr_cuda.so", 1);
  auto c = runtime::cuda_plugin_candidates();
  ASSERT_GE(c.size(), 2u);
  EXPECT_EQ(c[0], "/nonexistent/libsteadyocr_cuda.so");
  EXPECT_EQ(c.back(), "libsteadyocr_cuda.so");  // finally the loader's own search path
  if (old) {
    setenv("STEADYOCR_CUDA_PLUGIN", saved.c_str(), 1);
  } else {
    unsetenv("STEADYOCR_CUDA_PLUGIN");
  }
}

// Whatever this machine has, the registry and the loader agree, and a missing piece is explained.
TEST(CudaPlugin, StatusExplainsAvailability) {
  const auto& st = runtime::cuda_plugin_status();
  auto names = runtime::available_backends();
  const bool listed = std::find(names.begin(), names.end(), "cuda-fp32") != names.end();
  EXPECT_EQ(listed, st.loaded && st.device_count > 0);
  if (listed) {
    EXPECT_EQ(names[0], "cuda-fp16");
    EXPECT_EQ(names[1], "cuda-fp32");
    return;
  }
  auto b = runtime::create_backend("cuda-fp32");
  ASSERT_FALSE(b.is_ok());
  EXPECT_EQ(b.status().code(), StatusCode::kUnavailable);
  EXPECT_FALSE(b.status().message().empty());
  if (!st.loaded) {
    EXPECT_FALSE(st.error.empty());
    EXPECT_FALSE(st.tried.empty());
  } else {
    // Loaded but no device: the reason comes from the CUDA runtime (e.g. no driver).
    EXPECT_FALSE(st.device_error.empty());
    EXPECT_NE(b.status().message().find("no usable CUDA device"), std::string::npos) << b.status().message();
    EXPECT_GT(st.build.cuda_runtime_version, 0);
    EXPECT_GT(st.build.cudnn_version, 0);
  }
  std::printf("cuda plugin: loaded=%d path=%s devices=%d error=%s device_error=%s\n", st.loaded, st.path.c_str(),
              st.device_count, st.error.c_str(), st.device_error.c_str());
}

TEST(CudaPlugin, MainBinaryDoesNotLinkCuda) {
  const std::string exe = std::string(STEADYOCR_BINARY_DIR) + "/steadyocr";
  if (!file_exists(exe)) GTEST_SKIP() << exe << " not built";
  FILE* p = popen(("ldd " + exe + " 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof(buf), p)) out += buf;
  pclose(p);
  for (const char* lib : {"libcuda.so", "libcudart", "libcudnn", "libcublas"}) {
    EXPECT_EQ(out.find(lib), std::string::npos) << exe << " links " << lib << ":\n" << out;
  }
}

}  // namespace
}  // namespace steadyocr::testing

// The CUDA plugin loader, runnable everywhere: where the plugin or a GPU is missing it must say why, the cuda
// backends must not be listed, and the main binary must not link CUDA. Version and ABI mismatches are refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cuda/backend_config.h"
#include "backends/cuda/plugin_abi.h"
#include "graph/ir.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda_plugin.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

void dummy_build(SoPluginBuildInfo*) {}
int dummy_runtime(SoPluginRuntimeInfo*) {
  return 1;
}
int dummy_device(int, SoPluginDeviceInfo*, SoPluginStatus*) {
  return 1;
}
int dummy_create(const SoBackendConfig*, void**, char*, size_t, void*, SoPluginStatus*) {
  return 1;
}
void dummy_destroy(void*) {}
int dummy_supports(void*, const void*) {
  return 0;
}
int dummy_prepare(void*, const void*, void**, SoPluginStatus*) {
  return 1;
}
int dummy_run(void*, const void*, void*, SoPluginStatus*) {
  return 1;
}
size_t dummy_workspace(void*) {
  return 0;
}
int dummy_check(const char*, const char*, char*, size_t) {
  return 1;
}
int dummy_fault(const char*, SoPluginStatus*) {
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
  api.supports = dummy_supports;
  api.prepare = dummy_prepare;
  api.run = dummy_run;
  api.workspace_bytes = dummy_workspace;
  api.destroy_prepared = dummy_destroy;
  api.run_check = dummy_check;
  api.set_fault = dummy_fault;
  api.last_profile = [](void*, SoRunProfile* out) { *out = SoRunProfile{}; };
  api.prepare_symbolic = dummy_prepare;
  api.last_plan_ms = [](void*) { return 0.0; };
  api.runs_concurrently = [](void*) { return 0; };
  return api;
}

TEST(CudaPlugin, BackendNamesAndTheCudnnSwitch) {
  // The four CUDA backend names and what they ask of the plugin; anything else is not a CUDA backend.
  std::string precision;
  bool cudnn = false;
  ASSERT_TRUE(runtime::parse_cuda_backend_name("cuda-fp32", &precision, &cudnn));
  EXPECT_EQ(precision, "fp32");
  EXPECT_TRUE(cudnn);
  ASSERT_TRUE(runtime::parse_cuda_backend_name("cuda-fp16-nocudnn", &precision, &cudnn));
  EXPECT_EQ(precision, "fp16");
  EXPECT_FALSE(cudnn);
  ASSERT_TRUE(runtime::parse_cuda_backend_name("cuda-fp32-nocudnn", &precision, &cudnn));
  EXPECT_EQ(precision, "fp32");
  EXPECT_FALSE(cudnn);
  for (const char* bad : {"cuda", "cuda-fp8", "cuda-fp32-", "cuda-fp32-cudnn", "cpu", "cuda-fp16nocudnn"}) {
    EXPECT_FALSE(runtime::parse_cuda_backend_name(bad, &precision, &cudnn)) << bad;
  }
  // The switch crosses the plugin boundary (an appended field of SoBackendConfig) both ways.
  cuda::BackendConfig c;
  EXPECT_TRUE(c.cudnn);
  c.cudnn = false;
  SoBackendConfig a = cuda::to_abi(c);
  EXPECT_EQ(a.cudnn, 0);
  EXPECT_FALSE(cuda::from_abi(a).cudnn);
  c.cudnn = true;
  EXPECT_TRUE(cuda::from_abi(cuda::to_abi(c)).cudnn);
  // So does the way runs wait for their stream, by the names STEADYOCR_CUDA_SYNC takes.
  for (cuda::SyncWait w : {cuda::SyncWait::kAuto, cuda::SyncWait::kSpin, cuda::SyncWait::kBlock}) {
    cuda::SyncWait parsed = cuda::SyncWait::kAuto;
    ASSERT_TRUE(cuda::parse_sync_wait(cuda::sync_wait_name(w), &parsed));
    EXPECT_EQ(parsed, w);
    c.sync_wait = w;
    EXPECT_EQ(cuda::from_abi(cuda::to_abi(c)).sync_wait, w);
  }
  cuda::SyncWait untouched = cuda::SyncWait::kBlock;
  for (const char* bad : {"", "Spin", "blocking", "yield"}) EXPECT_FALSE(cuda::parse_sync_wait(bad, &untouched)) << bad;
  EXPECT_FALSE(cuda::parse_sync_wait(nullptr, &untouched));
  EXPECT_EQ(untouched, cuda::SyncWait::kBlock);
}

TEST(CudaPlugin, AcceptsMatchingTable) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda13.so");
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(CudaPlugin, RefusesApiVersionMismatch) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  api.api_version = 999;
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda13.so");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("version 999"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("version " + std::to_string(STEADYOCR_PLUGIN_API_VERSION)), std::string::npos);
  EXPECT_NE(s.message().find("/x/libsteadyocr_cuda13.so"), std::string::npos);
}

TEST(CudaPlugin, RefusesAbiMismatch) {
  SteadyocrPluginApi api = complete_table("gcc-1 cxx11abi=0 c++0 steadyocr-0.0.0");
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda13.so");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("ABI"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(plugin_abi_tag()), std::string::npos) << s.message();
}

// The same compiler and release built from other sources: an op added to the IR (e.g. ImageLut before Identity)
// renumbers OpKind, and such a plugin read a u8 picture's ImageLut node as Identity on the H200 (2026-12-03).
TEST(CudaPlugin, RefusesAPluginOfAnotherOpTable) {
  const std::string tag = plugin_abi_tag();
  const size_t ir = tag.find(" ir-");
  ASSERT_NE(ir, std::string::npos) << tag;
  ASSERT_EQ(tag.size(), ir + 4 + 16) << tag;
  std::string other = tag;
  other.back() = other.back() == '0' ? '1' : '0';
  SteadyocrPluginApi api = complete_table(other);
  Status s = runtime::check_plugin_api(&api, "/x/libsteadyocr_cuda13.so");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("same build"), std::string::npos) << s.message();
}

TEST(CudaPlugin, RefusesIncompleteTableAndNull) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  api.create_backend = nullptr;
  EXPECT_FALSE(runtime::check_plugin_api(&api, "p").is_ok());
  EXPECT_FALSE(runtime::check_plugin_api(nullptr, "p").is_ok());
  api = complete_table(plugin_abi_tag());  // version 5's entries are required too
  api.runs_concurrently = nullptr;
  EXPECT_FALSE(runtime::check_plugin_api(&api, "p").is_ok());
}

// Restores STEADYOCR_CUDA_PLUGIN when a test is done with it.
class PluginEnv {
 public:
  explicit PluginEnv(const char* value) {
    const char* old = std::getenv("STEADYOCR_CUDA_PLUGIN");
    had_ = old != nullptr;
    if (old) saved_ = old;
    if (value) {
      setenv("STEADYOCR_CUDA_PLUGIN", value, 1);
    } else {
      unsetenv("STEADYOCR_CUDA_PLUGIN");
    }
  }
  ~PluginEnv() {
    if (had_) {
      setenv("STEADYOCR_CUDA_PLUGIN", saved_.c_str(), 1);
    } else {
      unsetenv("STEADYOCR_CUDA_PLUGIN");
    }
  }

 private:
  bool had_ = false;
  std::string saved_;
};

// The plugin is picked by the driver's CUDA version, read before loading (NVIDIA's rules: a CUDA 13 build needs a
// CUDA 13 driver, R580+; a CUDA 11.x build runs on every driver of CUDA 11.0 or later).
TEST(CudaPluginChoice, ByDriverVersion) {
  runtime::CudaPluginChoice c13 = runtime::choose_cuda_plugins(13000);
  ASSERT_EQ(c13.files, (std::vector<std::string>{"libsteadyocr_cuda13.so", "libsteadyocr_cuda11.so"}));
  EXPECT_EQ(c13.finding, "");
  EXPECT_EQ(c13.reason, "the driver supports CUDA 13.0: libsteadyocr_cuda13.so (the newest plugin)");
  EXPECT_EQ(runtime::choose_cuda_plugins(13020).files.front(), "libsteadyocr_cuda13.so");  // minor version compat.

  for (int driver : {12090, 12020, 12040, 11040, 11000}) {
    runtime::CudaPluginChoice c = runtime::choose_cuda_plugins(driver);
    ASSERT_EQ(c.files, (std::vector<std::string>{"libsteadyocr_cuda11.so"})) << driver;
    EXPECT_EQ(c.finding, "") << driver;
    EXPECT_NE(c.reason.find("libsteadyocr_cuda13.so needs a driver of R580 (CUDA 13.0) or newer"), std::string::npos)
        << c.reason;
  }
  EXPECT_EQ(runtime::choose_cuda_plugins(12020).reason,
            "the driver supports CUDA 12.2: libsteadyocr_cuda11.so (libsteadyocr_cuda13.so needs a driver of R580 "
            "(CUDA 13.0) or newer)");

  runtime::CudaPluginChoice old = runtime::choose_cuda_plugins(10020);
  EXPECT_TRUE(old.files.empty());
  EXPECT_EQ(old.finding, "L2_DRIVER_TOO_OLD");
  EXPECT_NE(old.reason.find("the driver supports CUDA 10.2"), std::string::npos) << old.reason;
  EXPECT_NE(old.reason.find("update the NVIDIA driver to R450.80.02 (CUDA 11.0) or newer"), std::string::npos)
      << old.reason;

  runtime::CudaPluginChoice unknown = runtime::choose_cuda_plugins(0);  // no libcuda: newest first, the load decides
  EXPECT_EQ(unknown.files, (std::vector<std::string>{"libsteadyocr_cuda13.so", "libsteadyocr_cuda11.so"}));
  EXPECT_EQ(unknown.finding, "");
}

TEST(CudaPluginChoice, CandidatesInEachPlaceBestFirst) {
  PluginEnv env(nullptr);
  auto c = runtime::cuda_plugin_candidates(runtime::choose_cuda_plugins(12020));
  ASSERT_FALSE(c.empty());
  for (const auto& p : c) EXPECT_NE(p.find("libsteadyocr_cuda11.so"), std::string::npos) << p;  // 13 is never tried
  EXPECT_EQ(c.back(), "libsteadyocr_cuda11.so");  // finally the loader's own search path
  auto both = runtime::cuda_plugin_candidates(runtime::choose_cuda_plugins(13000));
  auto first11 = std::find_if(both.begin(), both.end(),
                              [](const std::string& p) { return p.find("cuda11") != std::string::npos; });
  ASSERT_NE(first11, both.end());
  for (auto it = both.begin(); it != first11; ++it) EXPECT_NE(it->find("libsteadyocr_cuda13.so"), std::string::npos);
  EXPECT_EQ(*(first11 - 1), "libsteadyocr_cuda13.so");  // every place for 13 (and the loader's path) before any 11
}

// --cuda-plugin PATH (STEADYOCR_CUDA_PLUGIN): a file pins that plugin, whatever the driver; a folder is searched first.
TEST(CudaPluginChoice, TheEnvironmentVariablePinsOrSearches) {
  {
    PluginEnv env("/nonexistent/libsteadyocr_cuda11.so");
    auto c = runtime::cuda_plugin_candidates(runtime::choose_cuda_plugins(13000));
    EXPECT_EQ(c, (std::vector<std::string>{"/nonexistent/libsteadyocr_cuda11.so"}));
  }
  {
    std::string dir = ::testing::TempDir();
    PluginEnv env(dir.c_str());
    auto c = runtime::cuda_plugin_candidates(runtime::choose_cuda_plugins(13000));
    ASSERT_GE(c.size(), 2u);
    EXPECT_EQ(c[0], dir + "/libsteadyocr_cuda13.so");
  }
}

// Sets (or unsets, for null) one environment variable for a scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (old) saved_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), saved_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  bool had_ = false;
  std::string saved_;
};

// The STEADYOCR_CUDA_* switches: every spelling of on and off is taken, and a value a switch does not know keeps its
// default and is named in a warning (before, OWN_CONV=off or DEBUG_SYNC=true were silently ignored).
TEST(CudaPlugin, EnvironmentSwitchesTakeOnOffAndNameWhatTheyDoNotKnow) {
  const cuda::BackendConfig defaults;
  {
    ScopedEnv a("STEADYOCR_CUDA_DEBUG_SYNC", "true"), b("STEADYOCR_CUDA_OWN_CONV", "off"),
        c("STEADYOCR_CUDA_CUDNN", "0"), d("STEADYOCR_CUDA_GRAPHS", "false"), e("STEADYOCR_CUDA_CALIBRATE", "on"),
        f("STEADYOCR_CUDA_ARENAS", "per-plan"), g("STEADYOCR_CUDA_PROFILE_OPS", "40"),
        h("STEADYOCR_CUDA_CUDNN_HANDLES", "4"), i("STEADYOCR_CUDA_SYNC", "block");
    const cuda::BackendConfig o = runtime::cuda_environment_overrides();
    EXPECT_TRUE(o.debug_sync);
    EXPECT_FALSE(o.own_conv);
    EXPECT_FALSE(o.cudnn);
    EXPECT_FALSE(o.cuda_graphs);
    EXPECT_TRUE(o.calibrate);
    EXPECT_TRUE(o.own_arenas);
    EXPECT_EQ(o.profile_ops, 40);
    EXPECT_EQ(o.cudnn_handles, 4);
    EXPECT_EQ(o.sync_wait, cuda::SyncWait::kBlock);
  }
  {
    ScopedEnv a("STEADYOCR_CUDA_GRAPHS", "maybe"), b("STEADYOCR_CUDA_CUDNN_HANDLES", "lots"),
        c("STEADYOCR_CUDA_PROFILE_OPS", "-3"), d("STEADYOCR_CUDA_ARENAS", "shared"), e("STEADYOCR_CUDA_SYNC", "yield");
    ::testing::internal::CaptureStderr();
    const cuda::BackendConfig o = runtime::cuda_environment_overrides();
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(o.cuda_graphs, defaults.cuda_graphs);
    EXPECT_EQ(o.cudnn_handles, defaults.cudnn_handles);
    EXPECT_EQ(o.profile_ops, defaults.profile_ops);
    EXPECT_EQ(o.own_arenas, defaults.own_arenas);
    EXPECT_EQ(o.sync_wait, defaults.sync_wait);
    for (const char* named :
         {"STEADYOCR_CUDA_GRAPHS=maybe", "STEADYOCR_CUDA_CUDNN_HANDLES=lots", "STEADYOCR_CUDA_PROFILE_OPS=-3",
          "STEADYOCR_CUDA_ARENAS=shared", "STEADYOCR_CUDA_SYNC=yield"}) {
      EXPECT_NE(err.find(named), std::string::npos) << named << " not named in: " << err;
    }
  }
}

// Whatever this machine has, the registry and the loader agree, and a missing piece is explained.
TEST(CudaPlugin, StatusExplainsAvailability) {
  const auto& st = runtime::cuda_plugin_status();
  auto names = runtime::available_backends();
  const bool listed = std::find(names.begin(), names.end(), "cuda-fp32-nocudnn") != names.end();
  EXPECT_EQ(listed, st.loaded && st.device_count > 0);
  if (listed) {
    // Best first; the cuDNN backends only where the plugin found a usable cuDNN.
    std::vector<std::string> want = {"cuda-fp32-nocudnn", "cuda-fp16-nocudnn"};
    if (st.runtime.cudnn_version > 0) want.insert(want.begin(), {"cuda-fp32", "cuda-fp16"});
    ASSERT_GE(names.size(), want.size());
    EXPECT_EQ(std::vector<std::string>(names.begin(), names.begin() + static_cast<long>(want.size())), want);
    std::printf("cuda plugin %s: %s; cuDNN %d (%s)\n", st.path.c_str(), st.choice.c_str(), st.runtime.cudnn_version,
                st.runtime.cudnn_path);
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

// The host side of the boundary against a table of fakes: the config arrives field by field, every call goes
// through the table, and a failure comes back as a Status with its code and finding.
struct FakePlugin {
  static inline SoBackendConfig seen{};
  static inline std::string precision, fault_spec;
  static inline int backends_destroyed = 0, prepared_destroyed = 0;
  static inline int token = 0;

  static int create(const SoBackendConfig* c, void** backend, char* name, size_t name_len, void* info,
                    SoPluginStatus*) {
    seen = *c;
    precision = c->precision;
    fault_spec = c->fault_spec;
    *backend = &token;
    std::snprintf(name, name_len, "cuda-fake");
    static_cast<DeviceInfo*>(info)->name = "Fake GPU";
    return 0;
  }
  static void destroy_backend(void*) { ++backends_destroyed; }
  static int supports(void*, const void* node) {
    return static_cast<const graph::Node*>(node)->op == graph::OpKind::kConv ? 1 : 0;
  }
  static int prepare(void*, const void* graph, void** prepared, SoPluginStatus* st) {
    if (static_cast<const graph::Graph*>(graph)->name() == "lost") {
      st->code = static_cast<int>(StatusCode::kDeviceFault);
      std::snprintf(st->finding, sizeof(st->finding), "L3_STICKY_FAULT");
      std::snprintf(st->message, sizeof(st->message), "cuda failed: cudaErrorIllegalAddress (700)");
      return st->code;
    }
    *prepared = &token;
    return 0;
  }
  static int run(void*, const void* inputs, void* outputs, SoPluginStatus*) {
    *static_cast<std::vector<Tensor>*>(outputs) = *static_cast<const std::vector<Tensor>*>(inputs);
    return 0;
  }
  static void destroy_prepared(void*) { ++prepared_destroyed; }
};

TEST(CudaPlugin, HostReachesThePluginOnlyThroughTheTable) {
  SteadyocrPluginApi api = complete_table(plugin_abi_tag());
  api.create_backend = FakePlugin::create;
  api.destroy_backend = FakePlugin::destroy_backend;
  api.supports = FakePlugin::supports;
  api.prepare = FakePlugin::prepare;
  api.run = FakePlugin::run;
  api.destroy_prepared = FakePlugin::destroy_prepared;
  cuda::BackendConfig config = runtime::cuda_backend_config("fp16", size_t{64} << 20, 1);
  config.lanes = 6;
  config.debug_sync = true;
  config.own_conv = false;
  config.fault_spec = "oom@rec:2";
  config.cudnn_handles = 3;
  {
    auto b = runtime::create_plugin_backend(&api, config);
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ((*b)->name(), "cuda-fake");
    EXPECT_EQ((*b)->device_info().name, "Fake GPU");
    EXPECT_EQ(FakePlugin::seen.struct_size, sizeof(SoBackendConfig));
    EXPECT_EQ(FakePlugin::precision, "fp16");
    EXPECT_EQ(FakePlugin::seen.memory_budget_bytes, size_t{64} << 20);
    EXPECT_EQ(FakePlugin::seen.device, 1);
    EXPECT_EQ(FakePlugin::seen.lanes, 6);
    EXPECT_EQ(FakePlugin::seen.debug_sync, 1);
    EXPECT_EQ(FakePlugin::seen.own_conv, 0);
    EXPECT_EQ(FakePlugin::seen.cudnn_handles, 3);
    EXPECT_EQ(cuda::from_abi(FakePlugin::seen).cudnn_handles, 3);
    EXPECT_EQ(FakePlugin::fault_spec, "oom@rec:2");

    graph::Graph g;
    graph::Value* x = g.add_value("x", DType::kF32, {1, 1, 4, 4});
    graph::Value* w = g.add_constant("w", Tensor::zeros(DType::kF32, {1, 1, 1, 1}));
    graph::Value* y = g.add_value("y", DType::kF32, {1, 1, 4, 4});
    graph::Node* conv = g.add_node(graph::OpKind::kConv, "c", {x, w}, {y}, graph::ConvAttrs{});
    graph::Node* relu = g.add_node(graph::OpKind::kRelu, "r", {y}, {g.add_value("z", DType::kF32, {1, 1, 4, 4})});
    EXPECT_TRUE((*b)->supports(*conv));
    EXPECT_FALSE((*b)->supports(*relu));

    auto p = (*b)->prepare(g);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    Tensor in = testing::random_tensor({1, 1, 4, 4}, 1);
    std::vector<Tensor> out;
    ASSERT_TRUE((*p)->run({in}, &out).is_ok());
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(out[0].raw(), in.raw());

    g.set_name("lost");
    auto lost = (*b)->prepare(g);
    ASSERT_FALSE(lost.is_ok());
    EXPECT_EQ(lost.status().code(), StatusCode::kDeviceFault);
    EXPECT_NE(lost.status().message().find("cudaErrorIllegalAddress"), std::string::npos);
    ASSERT_TRUE(lost.status().finding().has_value()) << lost.status().message();
    EXPECT_EQ(lost.status().finding()->code, "L3_STICKY_FAULT") << lost.status().message();
  }
  EXPECT_EQ(FakePlugin::backends_destroyed, 1);
  EXPECT_EQ(FakePlugin::prepared_destroyed, 1);
}

TEST(CudaPlugin, StatusFromThePluginKeepsCodeAndFinding) {
  SoPluginStatus st{};
  EXPECT_TRUE(runtime::status_from_plugin(st).is_ok());
  st.code = static_cast<int>(StatusCode::kOutOfMemory);
  std::snprintf(st.finding, sizeof(st.finding), "L3_OUT_OF_MEMORY");
  std::snprintf(st.message, sizeof(st.message), "cudaErrorMemoryAllocation");
  Status s = runtime::status_from_plugin(st);
  EXPECT_EQ(s.code(), StatusCode::kOutOfMemory);
  EXPECT_EQ(s.message(), "cudaErrorMemoryAllocation");
  ASSERT_TRUE(s.finding().has_value());
  EXPECT_EQ(s.finding()->code, "L3_OUT_OF_MEMORY");
  st.code = 9999;  // a code this binary does not know
  EXPECT_EQ(runtime::status_from_plugin(st).code(), StatusCode::kInternal);
}

// The real plugin's table, on whatever this machine has: bad calls come back as statuses, never as exceptions or
// crashes, and without a device creating a backend says why.
TEST(CudaPlugin, RealTableAnswersEveryCallWithAStatus) {
  const SteadyocrPluginApi* api = runtime::cuda_plugin_api();
  if (!api) GTEST_SKIP() << "CUDA plugin not loaded: " << runtime::cuda_plugin_status().error;
  SoPluginStatus st{};
  void* handle = nullptr;
  char name[64] = {0};
  EXPECT_EQ(api->create_backend(nullptr, &handle, name, sizeof(name), nullptr, &st),
            static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_GT(std::strlen(st.message), 0u);
  EXPECT_EQ(handle, nullptr);
  EXPECT_EQ(api->supports(nullptr, nullptr), 0);
  st = SoPluginStatus{};
  EXPECT_EQ(api->run(nullptr, nullptr, nullptr, &st), static_cast<int>(StatusCode::kInvalidArgument));
  st = SoPluginStatus{};
  EXPECT_EQ(api->set_fault("explode@det:1", &st), static_cast<int>(StatusCode::kInvalidArgument));
  EXPECT_NE(std::string(st.message).find("illegal_address"), std::string::npos) << st.message;
  st = SoPluginStatus{};
  EXPECT_EQ(api->set_fault("", &st), 0);
  if (runtime::cuda_plugin_status().device_count > 0) return;  // the GPU tests cover creation
  cuda::BackendConfig config = runtime::cuda_backend_config("fp32");
  SoBackendConfig abi = cuda::to_abi(config);
  DeviceInfo info;
  st = SoPluginStatus{};
  EXPECT_NE(api->create_backend(&abi, &handle, name, sizeof(name), &info, &st), 0);
  EXPECT_NE(st.code, 0);
  EXPECT_GT(std::strlen(st.message), 0u);
  EXPECT_GT(std::strlen(st.finding), 0u) << st.message;
  EXPECT_EQ(handle, nullptr);
  std::printf("create_backend without a device: code %d, finding %s: %s\n", st.code, st.finding, st.message);
  SoPluginDeviceInfo dev{};
  st = SoPluginStatus{};
  EXPECT_NE(api->query_device(0, &dev, &st), 0);
  EXPECT_GT(std::strlen(st.message), 0u);
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

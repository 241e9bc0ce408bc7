// The knowledge base: it parses, every code the doctor can emit has an entry, and docs/DOCTOR.md covers it.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "doctor/knowledge_base.h"

namespace steadyocr::doctor {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Every finding code that appears as a string literal in the doctor's sources and the plugin's checks.
std::set<std::string> codes_in_sources() {
  std::set<std::string> codes;
  std::regex code_re("\"((L[1-4]|PLUGIN|DOCTOR)_[A-Z0-9_]+)\"");
  for (const char* file :
       {"src/doctor/layer1_visibility.cpp", "src/doctor/layer2_abi.cpp", "src/doctor/device_runner.cpp",
        "src/doctor/internal_check.cpp", "src/doctor/backend_checks.cpp", "src/doctor/backend_workers.cpp",
        "src/backends/cuda/diagnostics.cpp", "src/backends/cuda/diagnostics_conv.cpp",
        "src/backends/cuda/diagnostics_streams.cpp", "src/doctor/vulkan_chain.cpp", "src/runtime/vulkan_plugin.cpp",
        "src/backends/vulkan/vk_api.cpp", "src/backends/vulkan/device.cpp", "src/backends/vulkan/backend.cpp",
        "src/backends/vulkan/plugin.cpp"}) {
    std::string text = read_file(std::string(STEADYOCR_SOURCE_DIR) + "/" + file);
    EXPECT_FALSE(text.empty()) << file;
    for (std::sregex_iterator it(text.begin(), text.end(), code_re), end; it != end; ++it) codes.insert((*it)[1]);
  }
  return codes;
}

TEST(DoctorKnowledgeBase, EmbeddedParses) {
  const KnowledgeBase& kb = KnowledgeBase::builtin();
  EXPECT_EQ(kb.schema_version(), 1);
  EXPECT_GE(kb.entries().size(), 40u);
  for (const auto& [code, e] : kb.entries()) {
    EXPECT_GE(e.level, 1) << code;
    EXPECT_LE(e.level, 4) << code;
    EXPECT_FALSE(e.remediation.empty()) << code;
  }
}

TEST(DoctorKnowledgeBase, EveryEmittedCodeHasAnEntry) {
  const KnowledgeBase& kb = KnowledgeBase::builtin();
  auto codes = codes_in_sources();
  EXPECT_GE(codes.size(), 40u);
  for (const auto& c : codes) EXPECT_NE(kb.find(c), nullptr) << c << " is emitted but has no knowledge-base entry";
}

TEST(DoctorKnowledgeBase, CoversTheClassicFailureClasses) {
  const KnowledgeBase& kb = KnowledgeBase::builtin();
  std::set<std::string> classes;
  for (const auto& [code, e] : kb.entries()) classes.insert(e.failure_class);
  for (const char* c : {"no_driver", "driver_too_old", "container_no_gpu", "stub_libcuda", "cudnn_missing",
                        "cudnn_wrong_major", "cudnn_older_minor", "cublas_missing", "no_kernel_image",
                        "cudnn_not_supported", "out_of_memory", "stream_hang", "sticky_fault", "silent_cpu_fallback"})
    EXPECT_TRUE(classes.count(c)) << "no code for failure class " << c;
}

TEST(DoctorKnowledgeBase, DocsListEveryCode) {
  std::string doc = read_file(std::string(STEADYOCR_SOURCE_DIR) + "/docs/DOCTOR.md");
  ASSERT_FALSE(doc.empty()) << "docs/DOCTOR.md missing";
  for (const auto& [code, e] : KnowledgeBase::builtin().entries())
    EXPECT_NE(doc.find("`" + code + "`"), std::string::npos) << code << " is not documented in docs/DOCTOR.md";
}

TEST(DoctorKnowledgeBase, Placeholders) {
  nlohmann::json ev = {{"cudnn_loaded", "9.14"}, {"n", 3}, {"list", {"a", "b"}}};
  EXPECT_EQ(fill_placeholders("cuDNN {cudnn_loaded} x{n} [{list}] {missing} {not a name}", ev),
            "cuDNN 9.14 x3 [a, b] (unknown) {not a name}");
  CheckResult c = finding(1, "libcuda", CheckStatus::kFail, "L1_NO_DRIVER", "none",
                          {{"dlopen_error", "libcuda.so.1: cannot open shared object file"}});
  annotate(c, KnowledgeBase::builtin());
  EXPECT_EQ(c.failure_class, "no_driver");
  EXPECT_NE(c.remediation.find("dlopen said: libcuda.so.1: cannot open shared object file"), std::string::npos);
  CheckResult unknown = finding(1, "x", CheckStatus::kFail, "L9_NOPE", "?");
  annotate(unknown, KnowledgeBase::builtin());
  EXPECT_NE(unknown.remediation.find("no knowledge-base entry"), std::string::npos);
}

TEST(DoctorKnowledgeBase, ParseErrorsNameTheEntry) {
  auto r = KnowledgeBase::parse(R"({"classes":{"a":"A"},"codes":{"X_1":{"level":1,"severity":"fail","class":"a"}}})");
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("X_1"), std::string::npos);
  r = KnowledgeBase::parse("not json");
  EXPECT_FALSE(r.is_ok());
}

}  // namespace
}  // namespace steadyocr::doctor

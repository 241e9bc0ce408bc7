// Model files are input too: crafted ONNX files (built here with the protobuf API) whose declared sizes pass the
// limits, whose graph has a cycle or a dangling input, or whose ops are unknown are refused, naming the node.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "graph/onnx_import.h"
#include "onnx_builder.h"
#include "test_util.h"

namespace steadyocr::graph {
namespace {

using testing::OnnxBuilder;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

TEST(ImportHostile, CycleNamesBothNodes) {
  OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Add", {"x", "z"}, {"y"}, "first");  // reads z, which the next node computes from y
  b.node("Relu", {"y"}, {"z"}, "second");
  b.output("z");
  auto g = import_onnx_bytes(b.bytes(), "cycle.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = g.status().message();
  EXPECT_TRUE(contains(m, "model cycle.onnx: node 'first' (Add) reads 'z', which only the later node 'second'")) << m;
  EXPECT_TRUE(contains(m, "cycle")) << m;
}

TEST(ImportHostile, NodeReadingItsOwnOutputIsACycle) {
  OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Add", {"x", "y"}, {"y"}, "loop");
  b.output("y");
  auto g = import_onnx_bytes(b.bytes(), "self.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_TRUE(contains(g.status().message(), "node 'loop' (Add) reads 'y', which only the node itself produces"))
      << g.status().message();
}

TEST(ImportHostile, DanglingInputNamesNodeAndValue) {
  OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Relu", {"x"}, {"y"}, "ok");
  b.node("Mul", {"y", "ghost"}, {"z"}, "reader");
  b.output("z");
  auto g = import_onnx_bytes(b.bytes(), "dangling.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(g.status().message(), "node 'reader' (Mul) reads 'ghost', a dangling input"))
      << g.status().message();
}

TEST(ImportHostile, UnknownOpNamesTheNode) {
  OnnxBuilder b(13);
  b.input("x", {4});
  b.node("Relu", {"x"}, {"y"}, "fine");
  b.node("TotallyNotAnOp", {"y"}, {"z"}, "evil_7");
  b.output("z");
  auto g = import_onnx_bytes(b.bytes(), "unknown.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
  EXPECT_TRUE(contains(g.status().message(), "node 'evil_7' uses op 'TotallyNotAnOp'")) << g.status().message();
}

TEST(ImportHostile, DeclaredTensorOverTheLimitIsRefusedBeforeAllocating) {
  // 300 MB of floats declared in a Constant node, none present: refused by the declared size, under a 256 MB limit.
  OnnxBuilder b(13);
  b.input("x", {4});
  auto* n = b.node("Constant", {}, {"w"}, "big_const");
  auto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::FLOAT);
  a->mutable_t()->add_dims(75'000'000);
  b.node("Add", {"x", "w"}, {"y"});
  b.output("y");
  ImportOptions o;
  o.max_tensor_bytes = int64_t{256} << 20;
  auto g = import_onnx_bytes(b.bytes(), "big.onnx", o);
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  const std::string& m = g.status().message();
  EXPECT_TRUE(contains(m, "Constant node 'big_const' declares 75000000 elements of 4 bytes")) << m;
  EXPECT_TRUE(contains(m, "over the limit of 268435456 bytes per tensor")) << m;
  // Under the default limit (1 GiB) the same file gets past the size check and fails on its missing data instead.
  auto d = import_onnx_bytes(b.bytes(), "big.onnx");
  EXPECT_EQ(d.status().code(), StatusCode::kDataLoss) << d.status().to_string();
}

TEST(ImportHostile, HugeGraphInputDimensionIsRefused) {
  OnnxBuilder b(13);
  b.input("x", {1, 3, int64_t{1} << 40, 8});
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  auto g = import_onnx_bytes(b.bytes(), "wide.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(contains(g.status().message(), "graph input 'x' declares dimension 1099511627776, over the limit"))
      << g.status().message();
  b = OnnxBuilder(13);
  b.input("x", {1, 3, 960, 960});  // the real detector's largest input stays well inside
  b.node("Relu", {"x"}, {"y"});
  b.output("y");
  EXPECT_TRUE(import_onnx_bytes(b.bytes(), "ok.onnx").is_ok());
}

// What fuzz_onnx found, each file run through the importer: a clean refusal naming the cause, never a crash or
// undefined behaviour (the sanitizer build of scripts/fuzz_ci.sh runs these too).
TEST(ImportHostile, FuzzRegressionResizeScaleOverflow) {
  // A Resize whose constant scales (1e21) ask for an output far past any int64: the float-to-int conversion of the
  // shape inference was undefined behaviour.
  std::ifstream f(testing::source_dir() + "/fuzz/regressions/fuzz_onnx/resize_scale_overflows_int64", std::ios::binary);
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  auto g = import_onnx_bytes(ss.str(), "resize.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(g.status().message(), "makes the output")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "elements long")) << g.status().message();
}

TEST(ImportHostile, FuzzRegressionResizeSizesAsFloat) {
  // A Resize whose sizes input is a float tensor (ONNX says int64) holding 2.6e32: read as integers it was a
  // float-to-int64 conversion out of range (undefined behaviour; fuzz_onnx, 16-fork run on the GPU machine's host).
  std::ifstream f(testing::source_dir() + "/fuzz/regressions/fuzz_onnx/resize_sizes_float_past_int64",
                  std::ios::binary);
  ASSERT_TRUE(f.good());
  std::stringstream ss;
  ss << f.rdbuf();
  auto g = import_onnx_bytes(ss.str(), "resize.onnx");
  ASSERT_FALSE(g.is_ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(contains(g.status().message(), "sizes is f32, expected i64")) << g.status().message();
  EXPECT_TRUE(contains(g.status().message(), "resize")) << g.status().message();
}

}  // namespace
}  // namespace steadyocr::graph

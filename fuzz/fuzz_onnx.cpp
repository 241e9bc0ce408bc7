// libFuzzer target: ONNX import of arbitrary bytes (protobuf parse, tensors, op mapping, shape inference and the
// verifier). A refusal must say something; a graph that imports must pass the verifier.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "core/log.h"
#include "graph/onnx_import.h"
#include "graph/verifier.h"

using namespace steadyocr;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  graph::ImportOptions options;
  options.max_file_bytes = 1 << 20;
  options.max_tensor_bytes = 64 << 20;  // the fuzzer's memory limit is 2 GB
  options.max_input_dim = 4096;
  auto g = graph::import_onnx_bytes(std::string(reinterpret_cast<const char*>(data), size), "fuzz.onnx", options);
  if (g.is_ok()) {
    if (!graph::verify(*g).is_ok()) std::abort();
  } else if (g.status().message().empty() || g.status().code() == StatusCode::kInternal) {
    std::abort();
  }
  return 0;
}

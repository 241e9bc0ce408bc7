// ONNX model import (Debian's libonnx protobuf definitions) into our IR.
#pragma once

#include <string>

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

struct ImportOptions {
  size_t max_file_bytes = size_t{2} << 30;      // refuse larger files before parsing
  int64_t max_tensor_bytes = int64_t{1} << 30;  // per initializer or Constant, from its declared dims
  int64_t max_input_dim = int64_t{1} << 20;     // per declared dimension of a graph input
};

// Loads an ONNX file: Constant nodes and initialisers become constant Values; every other node maps to
// one IR op with typed attributes. An unsupported op, attribute value or opset is an kUnsupported
// error naming the op, the node and the model file. Model files are input too: a tensor declared larger than
// max_tensor_bytes, or a graph input dimension over max_input_dim, is kResourceExhausted; a node reading a value
// that only a later node (or itself) produces is a cycle, one reading a value nothing produces a dangling input
// (kInvalidArgument naming both nodes, or the node and the value).
Result<Graph> import_onnx(const std::string& path, const ImportOptions& options = {});
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_name,
                                const ImportOptions& options = {});

}  // namespace steadyocr::graph

// ONNX model import (Debian's libonnx protobuf definitions) into our IR.
#pragma once

#include <string>

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

struct ImportOptions {
  size_t max_file_bytes = size_t{2} << 30;  // refuse larger files before parsing
};

// Loads an ONNX file: Constant nodes and initialisers become constant Values; every other node maps to
// one IR op with typed attributes. An unsupported op, attribute value or opset is an kUnsupported
// error naming the op, the node and the model file.
Result<Graph> import_onnx(const std::string& path, const ImportOptions& options = {});
Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_name,
                                const ImportOptions& options = {});

}  // namespace steadyocr::graph

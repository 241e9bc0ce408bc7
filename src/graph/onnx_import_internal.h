// Shared between onnx_import.cpp (file, graph, tensors) and onnx_import_ops.cpp (one mapper per ONNX op).
// Not part of the public interface.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"

namespace steadyocr::graph::onnx_detail {

// Everything a node mapper needs to know about the model being imported.
struct ImportContext {
  Graph* graph = nullptr;
  std::string model_name;  // file name for messages
  int64_t opset = 0;       // ai.onnx opset version
  std::unordered_map<std::string, Value*> values;
  // Which node of the file declares each output (a read of a value not yet produced names it: a cycle or a graph
  // out of topological order, not a dangling input).
  std::unordered_map<std::string, std::string> declared_by;
  int64_t max_tensor_bytes = int64_t{1} << 30;
  int64_t max_input_dim = int64_t{1} << 20;
};

// Typed access to one node's attributes; a wrong attribute type is remembered and reported by status().
class NodeAttributes {
 public:
  explicit NodeAttributes(const onnx::NodeProto& node);

  bool has(const std::string& name) const { return by_name_.count(name) != 0; }
  int64_t get_int(const std::string& name, int64_t fallback);
  float get_float(const std::string& name, float fallback);
  std::string get_string(const std::string& name, const std::string& fallback);
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> fallback = {});
  std::vector<float> get_floats(const std::string& name, std::vector<float> fallback = {});
  const onnx::TensorProto* get_tensor(const std::string& name);
  // Names of attributes that were present but never read (for "unsupported attribute" checks).
  std::vector<std::string> unread() const;
  const Status& status() const { return status_; }

 private:
  const onnx::AttributeProto* find(const std::string& name, onnx::AttributeProto::AttributeType type);
  std::unordered_map<std::string, const onnx::AttributeProto*> by_name_;
  std::unordered_map<std::string, bool> read_;
  Status status_;
};

// The per-node state handed to an op mapper.
struct NodeContext {
  ImportContext* ctx = nullptr;
  const onnx::NodeProto* proto = nullptr;
  std::string name;            // node name (generated when the model leaves it empty)
  std::vector<Value*> inputs;  // resolved inputs, nullptr for omitted optional ones
  NodeAttributes* attrs = nullptr;

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  // "model det.onnx: node 'n' (Conv): " prefix for messages.
  std::string where() const;
  Status unsupported_attr(const std::string& what) const;
  Status invalid(const std::string& what) const;
  // Adds one IR node whose outputs are the ONNX node's first `n_outputs` outputs (names kept).
  Result<Node*> emit(OpKind op, std::vector<Value*> inputs, OpAttrs attrs, size_t n_outputs = 1);
  // Adds an IR node with one fresh intermediate output (for ops that map to two IR nodes).
  Result<Node*> emit_intermediate(OpKind op, const std::string& suffix, std::vector<Value*> inputs, OpAttrs attrs);
  // Adds a constant Value derived from this node's name.
  Value* add_constant(const std::string& suffix, Tensor t);
  // Fails when an optional output beyond the first `n` is used by the model (we produce only `n`).
  Status require_unused_outputs_from(size_t n) const;
  // The constant tensor of input i; error naming `role` when it is missing or not constant.
  Result<Tensor> constant_input(size_t i, const std::string& role) const;
};

// Fails unless the node has between `min` and `max` inputs (trailing omitted optionals aside) and the first
// `min` are present.
Status expect_inputs(NodeContext& c, size_t min, size_t max);
// Marks attributes we accept but whose value does not change inference results.
void ignore_attrs(NodeContext& c, std::initializer_list<const char*> names);
// Resize (opset 10, 11+) and Upsample (opset 7-9), in onnx_import_resize.cpp.
Status map_resize(NodeContext& c);
Status map_upsample(NodeContext& c);

// Converts an ONNX tensor (raw_data or typed fields) into a host tensor. `what` names it in messages.
// `max_bytes`: the limit on the declared size, checked before anything is allocated (kResourceExhausted).
Result<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& what,
                                 int64_t max_bytes = int64_t{1} << 30);
// Our element type for an ONNX TensorProto::DataType; false when we have none.
bool dtype_from_onnx(int32_t onnx_type, DType* out);
// Maps one ONNX node (not Constant) into IR nodes appended to ctx.graph.
Status import_node(ImportContext& ctx, const onnx::NodeProto& node, const std::string& node_name);
// "Add, AveragePool, ..." for the unsupported-op message.
std::string supported_ops_list();

}  // namespace steadyocr::graph::onnx_detail

// ONNX model import: file and protobuf checks, opsets, tensors, graph inputs/outputs. The per-op mapping
// lives in onnx_import_ops.cpp.
#include "graph/onnx_import.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "core/content_hash.h"
#include "graph/onnx_import_internal.h"
#include "graph/shape_inference.h"
#include "graph/verifier.h"

namespace steadyocr::graph {
namespace onnx_detail {
namespace {

// Tensors larger than this are refused: no single weight in an OCR model comes close.
constexpr int64_t kMaxTensorElements = int64_t{1} << 32;

const char* attr_type_name(onnx::AttributeProto::AttributeType t) {
  switch (t) {
    case onnx::AttributeProto::FLOAT:
      return "float";
    case onnx::AttributeProto::INT:
      return "int";
    case onnx::AttributeProto::STRING:
      return "string";
    case onnx::AttributeProto::TENSOR:
      return "tensor";
    case onnx::AttributeProto::FLOATS:
      return "floats";
    case onnx::AttributeProto::INTS:
      return "ints";
    case onnx::AttributeProto::GRAPH:
      return "graph";
    default:
      return "other";
  }
}

// How many values the typed field for `type` holds.
size_t typed_count(const onnx::TensorProto& t) {
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      return static_cast<size_t>(t.float_data_size());
    case onnx::TensorProto::DOUBLE:
      return static_cast<size_t>(t.double_data_size());
    case onnx::TensorProto::INT64:
      return static_cast<size_t>(t.int64_data_size());
    default:
      return static_cast<size_t>(t.int32_data_size());  // INT32, FLOAT16, BFLOAT16, UINT8, BOOL
  }
}

}  // namespace

bool dtype_from_onnx(int32_t onnx_type, DType* out) {
  switch (onnx_type) {
    case onnx::TensorProto::FLOAT:
    case onnx::TensorProto::DOUBLE:  // converted to f32 on import
      *out = DType::kF32;
      return true;
    case onnx::TensorProto::FLOAT16:
      *out = DType::kF16;
      return true;
    case onnx::TensorProto::BFLOAT16:
      *out = DType::kBF16;
      return true;
    case onnx::TensorProto::INT64:
      *out = DType::kI64;
      return true;
    case onnx::TensorProto::INT32:
      *out = DType::kI32;
      return true;
    case onnx::TensorProto::UINT8:
      *out = DType::kU8;
      return true;
    case onnx::TensorProto::BOOL:
      *out = DType::kBool;
      return true;
    default:
      return false;
  }
}

Result<Tensor> tensor_from_proto(const onnx::TensorProto& t, const std::string& what, int64_t max_bytes) {
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    return unsupported(
        fmt::format("{} stores its data in an external file, which steadyocr does not support; "
                    "re-export the model with weights embedded",
                    what));
  }
  DType dtype;
  if (!dtype_from_onnx(t.data_type(), &dtype)) {
    return unsupported(fmt::format("{} has element type {} ({}), which steadyocr does not support", what,
                                   onnx::TensorProto::DataType_Name(t.data_type()), t.data_type()));
  }
  Shape shape;
  int64_t numel = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) return invalid_argument(fmt::format("{} has a negative dimension {}", what, d));
    if (d > 0 && numel > kMaxTensorElements / d) {
      return invalid_argument(fmt::format("{} is too large ({} dims)", what, t.dims_size()));
    }
    numel *= d;
    shape.push_back(d);
  }
  const bool is_double = t.data_type() == onnx::TensorProto::DOUBLE;
  const size_t src_elem = is_double ? 8 : dtype_size(dtype);
  if (numel > max_bytes / static_cast<int64_t>(std::max(src_elem, dtype_size(dtype)))) {
    return resource_exhausted(
        fmt::format("{} declares {} elements of {} bytes, over the limit of {} bytes per tensor "
                    "(no weight of an OCR model comes close): the model file is corrupt or "
                    "hostile; fetch it again",
                    what, numel, src_elem, max_bytes));
  }
  const auto n = static_cast<size_t>(numel);
  // Sizes are checked against the data actually present before allocating, so a corrupt header cannot ask
  // for more memory than the file holds.
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (raw.size() != n * src_elem) {
      return data_loss(fmt::format("{} {} needs {} bytes of data but has {} (corrupt or truncated model)", what,
                                   shape_str(shape), n * src_elem, raw.size()));
    }
    Tensor out = Tensor::empty(dtype, shape);
    if (is_double) {
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, raw.data() + i * 8, 8);
        out.data<float>()[i] = static_cast<float>(v);
      }
    } else if (n) {
      std::memcpy(out.raw(), raw.data(), raw.size());  // ONNX raw data is little-endian, as is every host we run on
    }
    return out;
  }
  if (typed_count(t) != n) {
    return data_loss(fmt::format("{} {} needs {} values but has {} (corrupt or truncated model)", what,
                                 shape_str(shape), n, typed_count(t)));
  }
  Tensor out = Tensor::empty(dtype, shape);
  switch (t.data_type()) {
    case onnx::TensorProto::FLOAT:
      for (size_t i = 0; i < n; ++i) out.data<float>()[i] = t.float_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::DOUBLE:
      for (size_t i = 0; i < n; ++i) out.data<float>()[i] = static_cast<float>(t.double_data(static_cast<int>(i)));
      break;
    case onnx::TensorProto::INT64:
      for (size_t i = 0; i < n; ++i) out.data<int64_t>()[i] = t.int64_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::INT32:
      for (size_t i = 0; i < n; ++i) out.data<int32_t>()[i] = t.int32_data(static_cast<int>(i));
      break;
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      for (size_t i = 0; i < n; ++i) {
        out.data<uint16_t>()[i] = static_cast<uint16_t>(t.int32_data(static_cast<int>(i)));
      }
      break;
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::BOOL:
      for (size_t i = 0; i < n; ++i) out.data<uint8_t>()[i] = static_cast<uint8_t>(t.int32_data(static_cast<int>(i)));
      break;
    default:
      return internal_error(fmt::format("{}: unhandled element type {}", what, t.data_type()));
  }
  return out;
}

// ---- NodeAttributes ----

NodeAttributes::NodeAttributes(const onnx::NodeProto& node) {
  for (const auto& a : node.attribute()) by_name_[a.name()] = &a;
}

const onnx::AttributeProto* NodeAttributes::find(const std::string& name, onnx::AttributeProto::AttributeType type) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return nullptr;
  read_[name] = true;
  const onnx::AttributeProto* a = it->second;
  // Old exporters leave `type` unset; accept the attribute when its payload matches.
  onnx::AttributeProto::AttributeType actual = a->type();
  if (actual == onnx::AttributeProto::UNDEFINED) {
    if (a->has_i()) actual = onnx::AttributeProto::INT;
    if (a->has_f()) actual = onnx::AttributeProto::FLOAT;
    if (a->has_s()) actual = onnx::AttributeProto::STRING;
    if (a->has_t()) actual = onnx::AttributeProto::TENSOR;
    if (a->ints_size()) actual = onnx::AttributeProto::INTS;
    if (a->floats_size()) actual = onnx::AttributeProto::FLOATS;
  }
  if (actual != type) {
    if (status_.is_ok()) {
      status_ = invalid_argument(
          fmt::format("attribute '{}' is {} but must be {}", name, attr_type_name(actual), attr_type_name(type)));
    }
    return nullptr;
  }
  return a;
}

int64_t NodeAttributes::get_int(const std::string& name, int64_t fallback) {
  const auto* a = find(name, onnx::AttributeProto::INT);
  return a ? a->i() : fallback;
}

float NodeAttributes::get_float(const std::string& name, float fallback) {
  const auto* a = find(name, onnx::AttributeProto::FLOAT);
  return a ? a->f() : fallback;
}

std::string NodeAttributes::get_string(const std::string& name, const std::string& fallback) {
  const auto* a = find(name, onnx::AttributeProto::STRING);
  return a ? a->s() : fallback;
}

std::vector<int64_t> NodeAttributes::get_ints(const std::string& name, std::vector<int64_t> fallback) {
  const auto* a = find(name, onnx::AttributeProto::INTS);
  if (!a) return fallback;
  return {a->ints().begin(), a->ints().end()};
}

std::vector<float> NodeAttributes::get_floats(const std::string& name, std::vector<float> fallback) {
  const auto* a = find(name, onnx::AttributeProto::FLOATS);
  if (!a) return fallback;
  return {a->floats().begin(), a->floats().end()};
}

const onnx::TensorProto* NodeAttributes::get_tensor(const std::string& name) {
  const auto* a = find(name, onnx::AttributeProto::TENSOR);
  return a ? &a->t() : nullptr;
}

std::vector<std::string> NodeAttributes::unread() const {
  std::vector<std::string> out;
  for (const auto& [name, a] : by_name_) {
    if (!read_.count(name)) out.push_back(name);
  }
  return out;
}

// ---- NodeContext ----

std::string NodeContext::where() const {
  return fmt::format("model {}: node '{}' ({})", ctx->model_name, name, proto->op_type());
}

Status NodeContext::unsupported_attr(const std::string& what) const {
  return unsupported(fmt::format("{} uses {}, which steadyocr does not support", where(), what));
}

Status NodeContext::invalid(const std::string& what) const {
  return invalid_argument(fmt::format("{}: {}", where(), what));
}

Result<Node*> NodeContext::emit(OpKind op, std::vector<Value*> ins, OpAttrs attrs, size_t n_outputs) {
  if (static_cast<size_t>(proto->output_size()) < n_outputs || proto->output(0).empty()) {
    return invalid(fmt::format("has {} outputs, expected at least {}", proto->output_size(), n_outputs));
  }
  std::vector<Value*> outs;
  for (size_t i = 0; i < n_outputs; ++i) {
    const std::string& oname = proto->output(static_cast<int>(i));
    if (ctx->values.count(oname)) {
      return invalid(fmt::format("output '{}' is already produced by an earlier node or input", oname));
    }
    Value* v = ctx->graph->add_value(oname);
    ctx->values[oname] = v;
    outs.push_back(v);
  }
  Node* n = ctx->graph->add_node(op, name, std::move(ins), std::move(outs), std::move(attrs));
  Status s = infer_node(*n);
  if (!s.is_ok()) return Status(s.code(), fmt::format("model {}: {}", ctx->model_name, s.message()));
  return n;
}

Result<Node*> NodeContext::emit_intermediate(OpKind op, const std::string& suffix, std::vector<Value*> ins,
                                             OpAttrs attrs) {
  Value* v = ctx->graph->add_value(ctx->graph->unique_name(name + "/" + suffix));
  Node* n = ctx->graph->add_node(op, name + "/" + suffix, std::move(ins), {v}, std::move(attrs));
  Status s = infer_node(*n);
  if (!s.is_ok()) return Status(s.code(), fmt::format("model {}: {}", ctx->model_name, s.message()));
  return n;
}

Value* NodeContext::add_constant(const std::string& suffix, Tensor t) {
  return ctx->graph->add_constant(ctx->graph->unique_name(name + "/" + suffix), std::move(t));
}

Status NodeContext::require_unused_outputs_from(size_t n) const {
  for (int i = static_cast<int>(n); i < proto->output_size(); ++i) {
    if (!proto->output(i).empty()) {
      // Whether a later node reads it is unknown yet; a declared extra output is enough to refuse.
      return unsupported(
          fmt::format("{} declares output {} ('{}'), which steadyocr does not compute (inference "
                      "form only)",
                      where(), i, proto->output(i)));
    }
  }
  return Status::ok();
}

Result<Tensor> NodeContext::constant_input(size_t i, const std::string& role) const {
  Value* v = input(i);
  if (!v) return invalid(fmt::format("input {} ({}) is missing", i, role));
  if (!v->is_constant()) {
    return unsupported(
        fmt::format("{} computes its {} (input '{}') at run time; steadyocr needs it to be a "
                    "constant in the model",
                    where(), role, v->name));
  }
  return v->constant;
}

}  // namespace onnx_detail

namespace {

using onnx_detail::ImportContext;

std::string base_name(const std::string& path) {
  auto pos = path.find_last_of('/');
  return pos == std::string::npos ? path : path.substr(pos + 1);
}

Status add_graph_input(ImportContext& ctx, const onnx::ValueInfoProto& in) {
  const std::string& m = ctx.model_name;
  if (in.name().empty()) return invalid_argument(fmt::format("model {}: a graph input has no name", m));
  if (ctx.values.count(in.name())) {
    return invalid_argument(fmt::format("model {}: graph input '{}' is declared twice", m, in.name()));
  }
  if (!in.type().has_tensor_type()) {
    return unsupported(
        fmt::format("model {}: graph input '{}' is not a tensor, which steadyocr does not support", m, in.name()));
  }
  const auto& tt = in.type().tensor_type();
  DType dtype;
  if (!onnx_detail::dtype_from_onnx(tt.elem_type(), &dtype) || tt.elem_type() == onnx::TensorProto::DOUBLE) {
    return unsupported(fmt::format("model {}: graph input '{}' has element type {}, which steadyocr does not support",
                                   m, in.name(), onnx::TensorProto::DataType_Name(tt.elem_type())));
  }
  if (!tt.has_shape()) {
    return unsupported(fmt::format(
        "model {}: graph input '{}' has no declared rank; steadyocr needs the rank of each input", m, in.name()));
  }
  Shape shape;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      if (d.dim_value() < 0) {
        return invalid_argument(
            fmt::format("model {}: graph input '{}' has a negative dimension {}", m, in.name(), d.dim_value()));
      }
      if (d.dim_value() > ctx.max_input_dim) {
        return resource_exhausted(fmt::format(
            "model {}: graph input '{}' declares dimension {}, over the limit of {}: the model file is corrupt "
            "or hostile; fetch it again",
            m, in.name(), d.dim_value(), ctx.max_input_dim));
      }
      shape.push_back(d.dim_value());
    } else {
      shape.push_back(-1);  // dim_param or unset: known only once specialised
    }
  }
  Value* v = ctx.graph->add_value(in.name(), dtype, shape);
  ctx.values[in.name()] = v;
  ctx.graph->inputs().push_back(v);
  return Status::ok();
}

Status add_constant_node(ImportContext& ctx, const onnx::NodeProto& node, const std::string& node_name) {
  const std::string where = fmt::format("model {}: Constant node '{}'", ctx.model_name, node_name);
  if (node.output_size() != 1 || node.output(0).empty()) {
    return invalid_argument(fmt::format("{} must have exactly one output", where));
  }
  onnx_detail::NodeAttributes attrs(node);
  Tensor t;
  if (const onnx::TensorProto* tp = attrs.get_tensor("value")) {
    ASSIGN_OR_RETURN(t, onnx_detail::tensor_from_proto(*tp, where, ctx.max_tensor_bytes));
  } else if (attrs.has("value_float")) {
    t = Tensor::scalar_f32(attrs.get_float("value_float", 0.f));
  } else if (attrs.has("value_floats")) {
    auto v = attrs.get_floats("value_floats");
    t = Tensor::from_floats({static_cast<int64_t>(v.size())}, v);
  } else if (attrs.has("value_int")) {
    t = Tensor::from_int64s({}, {attrs.get_int("value_int", 0)});
  } else if (attrs.has("value_ints")) {
    auto v = attrs.get_ints("value_ints");
    t = Tensor::from_int64s({static_cast<int64_t>(v.size())}, v);
  } else {
    return unsupported(
        fmt::format("{} has no value/value_float(s)/value_int(s) attribute (sparse or string "
                    "constants are not supported)",
                    where));
  }
  if (!attrs.status().is_ok()) return invalid_argument(fmt::format("{}: {}", where, attrs.status().message()));
  const std::string& out = node.output(0);
  if (ctx.values.count(out)) return invalid_argument(fmt::format("{}: output '{}' is produced twice", where, out));
  ctx.values[out] = ctx.graph->add_constant(out, std::move(t));
  return Status::ok();
}

Status build_graph(ImportContext& ctx, const onnx::GraphProto& g) {
  const std::string& m = ctx.model_name;
  for (const auto& init : g.initializer()) {
    if (init.name().empty()) return invalid_argument(fmt::format("model {}: an initializer has no name", m));
    if (ctx.values.count(init.name())) {
      return invalid_argument(fmt::format("model {}: initializer '{}' is declared twice", m, init.name()));
    }
    ASSIGN_OR_RETURN(Tensor t,
                     onnx_detail::tensor_from_proto(init, fmt::format("model {}: initializer '{}'", m, init.name()),
                                                    ctx.max_tensor_bytes));
    ctx.values[init.name()] = ctx.graph->add_constant(init.name(), std::move(t));
  }
  for (const auto& in : g.input()) {
    if (ctx.values.count(in.name()) && ctx.values[in.name()]->is_constant()) continue;  // initializer, not an input
    RETURN_IF_ERROR(add_graph_input(ctx, in));
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string node_name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    for (const std::string& out : node.output()) ctx.declared_by.emplace(out, node_name);
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string node_name = node.name().empty() ? fmt::format("{}_{}", node.op_type(), i) : node.name();
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return unsupported(
          fmt::format("model {}: node '{}' uses op '{}' from domain '{}', which steadyocr does not "
                      "support (only the default ai.onnx domain is)",
                      m, node_name, node.op_type(), node.domain()));
    }
    if (node.op_type() == "Constant") {
      RETURN_IF_ERROR(add_constant_node(ctx, node, node_name));
    } else {
      RETURN_IF_ERROR(onnx_detail::import_node(ctx, node, node_name));
    }
  }
  if (g.output_size() == 0) return invalid_argument(fmt::format("model {}: the graph declares no outputs", m));
  for (const auto& out : g.output()) {
    auto it = ctx.values.find(out.name());
    if (it == ctx.values.end()) {
      return invalid_argument(
          fmt::format("model {}: graph output '{}' is not produced by any node, input or initializer", m, out.name()));
    }
    ctx.graph->outputs().push_back(it->second);
  }
  ctx.graph->remove_dead();
  return Status::ok();
}

}  // namespace

Result<Graph> import_onnx_bytes(const std::string& bytes, const std::string& model_name, const ImportOptions& options) {
  if (bytes.empty()) return invalid_argument(fmt::format("model {}: the file is empty", model_name));
  if (bytes.size() > options.max_file_bytes) {
    return resource_exhausted(fmt::format("model {}: {} bytes is over the {}-byte limit for model files", model_name,
                                          bytes.size(), options.max_file_bytes));
  }
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return data_loss(
        fmt::format("model {}: not a valid ONNX protobuf ({} bytes): the file is truncated, corrupt or "
                    "not an ONNX model; fetch it again",
                    model_name, bytes.size()));
  }
  if (model.ir_version() <= 0 || !model.has_graph()) {
    return invalid_argument(
        fmt::format("model {}: not an ONNX model (no IR version or no graph); check the file", model_name));
  }
  int64_t opset = 0;
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  }
  if (opset == 0) {
    return invalid_argument(fmt::format("model {}: declares no opset for the default ai.onnx domain", model_name));
  }
  if (opset < 7 || opset > 18) {
    return unsupported(
        fmt::format("model {}: uses ai.onnx opset {}, which steadyocr does not support (supported: "
                    "7 to 18); convert the model with onnx.version_converter",
                    model_name, opset));
  }
  Graph graph;
  // The file name, not the ONNX graph name ("Model from PaddlePaddle."): it is what users recognise in messages.
  graph.set_name(model_name);
  graph.set_source_digest(hash_bytes(bytes));
  ImportContext ctx;
  ctx.graph = &graph;
  ctx.model_name = model_name;
  ctx.opset = opset;
  ctx.max_tensor_bytes = options.max_tensor_bytes;
  ctx.max_input_dim = options.max_input_dim;
  RETURN_IF_ERROR(build_graph(ctx, model.graph()));
  Status v = verify(graph);
  if (!v.is_ok())
    return Status(v.code(), fmt::format("model {}: imported graph fails verification: {}", model_name, v.message()));
  return graph;
}

Result<Graph> import_onnx(const std::string& path, const ImportOptions& options) {
  const std::string name = base_name(path);
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return not_found(fmt::format("model {}: file not found at '{}' ({})", name, path, std::strerror(errno)));
  }
  if (S_ISDIR(st.st_mode)) return invalid_argument(fmt::format("model {}: '{}' is a directory", name, path));
  if (static_cast<size_t>(st.st_size) > options.max_file_bytes) {
    return resource_exhausted(fmt::format("model {}: {} bytes is over the {}-byte limit for model files", name,
                                          st.st_size, options.max_file_bytes));
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found(fmt::format("model {}: cannot open '{}' ({})", name, path, std::strerror(errno)));
  // One read of the size stat() gave (a stream copy through a growing buffer cost ~10 % of a cold 1-image run).
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  f.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (f.bad() || f.gcount() != static_cast<std::streamsize>(bytes.size())) {
    return data_loss(
        fmt::format("model {}: read error on '{}' ({} of {} bytes read; the file changed while it was "
                    "read?)",
                    name, path, f.gcount(), bytes.size()));
  }
  return import_onnx_bytes(bytes, name, options);
}

}  // namespace steadyocr::graph

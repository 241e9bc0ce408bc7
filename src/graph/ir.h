// The graph IR: a Graph owns Values and Nodes; each Node carries a typed attribute struct for its op.
// After shape specialisation every Value has a static shape, so backends plan from Value shapes alone.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/symbolic.h"

namespace steadyocr::graph {

enum class OpKind : uint8_t {
  kConv,           // in: x, w, [b], [residual]  y = act(conv(x, w) + b + residual)
  kConvTranspose,  // in: x, w, [b]              y = act(deconv(x, w) + b)
  kBatchNorm,      // in: x, scale, bias, mean, var (inference form)
  kAdd,            // binary ops broadcast like NumPy
  kSub,
  kMul,
  kDiv,
  kPow,
  kSqrt,
  kRelu,  // activations share ActAttrs; act.kind matches the op
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kClip,
  kGlobalAveragePool,
  kAveragePool,
  kMaxPool,
  kResize,  // in: x (scales/sizes resolved into attrs at import or specialisation)
  kConcat,
  kReshape,  // in: x, [shape]; once specialised the output Value's shape is authoritative
  kTranspose,
  kMatMul,  // NumPy matmul semantics (batch broadcast)
  kSoftmax,
  kReduceMean,
  kSqueeze,
  kUnsqueeze,
  kShape,
  kCast,
  kSlice,
  kLayerNorm,  // in: x, scale, [bias]  over the trailing axes from `axis`
  // steadyocr's own, no ONNX op: y[..., 0] = the largest of x[..., :] over the last axis, y[..., 1] = its index (the
  // first on ties) as f32 (exact below 2^24). Appended to the recogniser by the runtime (ModelOptions::top1_output)
  // so that only what the CTC decoder reads leaves the device.
  kTop1,
  // steadyocr's own, no ONNX op: in x u8 [N, H, W, C] (a picture as decoded, channels last), lut f32 [C, 256];
  // y f32 [N, C, H, W] = lut[c][x[n, h, w, c]]. Prepended to the detector by the runtime (ModelOptions::image_lut) so
  // that a picture crosses to the device as bytes and is normalised there, with the host's own table (the same floats).
  // A masked picture has one channel more than the table, x u8 [N, H, W, C + 1]: where its last byte is 0 every value
  // of that pixel is 0 (the recogniser's zero padding, which no byte's table value is).
  kImageLut,
  kIdentity,
  kCount
};

const char* op_name(OpKind op);
// Parses our op name (same spelling as ONNX where one exists); false when unknown.
bool op_from_name(const std::string& name, OpKind* out);

enum class ActKind : uint8_t { kNone, kRelu, kSigmoid, kHardSigmoid, kHardSwish, kClip };
const char* act_name(ActKind a);

// A pointwise activation. HardSigmoid: clamp(alpha*x+beta, 0, 1); Clip: clamp(x, alpha, beta);
// HardSwish: x * clamp(x/6 + 1/2, 0, 1).
struct Activation {
  ActKind kind = ActKind::kNone;
  float alpha = 0.f;
  float beta = 0.f;

  float apply(float x) const;
  bool operator==(const Activation&) const = default;
  std::string describe() const;
  static Activation relu() { return {ActKind::kRelu, 0.f, 0.f}; }
  static Activation sigmoid() { return {ActKind::kSigmoid, 0.f, 0.f}; }
  static Activation hard_sigmoid(float alpha, float beta) { return {ActKind::kHardSigmoid, alpha, beta}; }
  static Activation hard_swish() { return {ActKind::kHardSwish, 0.f, 0.f}; }
  static Activation clip(float lo, float hi) { return {ActKind::kClip, lo, hi}; }
};

struct ConvAttrs {
  std::array<int64_t, 2> kernel{0, 0};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  int64_t group = 1;
  Activation act;
};

struct ConvTransposeAttrs {
  std::array<int64_t, 2> kernel{0, 0};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 2> dilations{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  std::array<int64_t, 2> output_padding{0, 0};
  int64_t group = 1;
  Activation act;
};

struct BatchNormAttrs {
  float epsilon = 1e-5f;
};

struct ActAttrs {
  Activation act;
};

struct PoolAttrs {
  std::array<int64_t, 2> kernel{1, 1};
  std::array<int64_t, 2> strides{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};  // top, left, bottom, right
  bool ceil_mode = false;
  bool count_include_pad = false;  // AveragePool only
};

enum class ResizeMode : uint8_t { kNearest, kLinear };
enum class ResizeCoord : uint8_t { kHalfPixel, kAsymmetric, kAlignCorners, kPytorchHalfPixel };
enum class ResizeNearest : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  ResizeCoord coord = ResizeCoord::kHalfPixel;
  ResizeNearest nearest = ResizeNearest::kRoundPreferFloor;
  std::vector<float> scales;   // per axis; empty when `sizes` is used
  std::vector<int64_t> sizes;  // per axis; empty when `scales` is used
};

struct AxisAttrs {  // Concat
  int64_t axis = 0;
};

struct SoftmaxAttrs {
  int64_t axis = -1;
  // opset < 13: the input is flattened to 2-D at `axis` and softmax runs over all trailing axes.
  bool flatten_trailing = true;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;  // empty = reverse
};

struct ReduceAttrs {
  std::vector<int64_t> axes;  // empty = all
  bool keepdims = true;
};

struct AxesAttrs {  // Squeeze / Unsqueeze
  std::vector<int64_t> axes;
};

struct SliceAttrs {
  std::vector<int64_t> starts, ends, axes, steps;
};

struct CastAttrs {
  DType to = DType::kF32;
};

struct ReshapeAttrs {
  std::vector<int64_t> shape;  // ONNX target (0 = copy, -1 = infer); empty when taken from input 1
  bool allowzero = false;
};

struct LayerNormAttrs {
  int64_t axis = -1;
  float epsilon = 1e-5f;
};

using OpAttrs = std::variant<std::monostate, ConvAttrs, ConvTransposeAttrs, BatchNormAttrs, ActAttrs, PoolAttrs,
                             ResizeAttrs, AxisAttrs, SoftmaxAttrs, TransposeAttrs, ReduceAttrs, AxesAttrs, SliceAttrs,
                             CastAttrs, ReshapeAttrs, LayerNormAttrs>;

// One pointwise stage of a fused epilogue: a node that fuse_epilogues absorbed into a Conv, ConvTranspose or
// MatMul, kept as it was (op, attributes, operands, names) so that expand_epilogues can give it back to a backend
// that runs stages one by one, and tagged with what it does to the running value so that a backend fusing it
// needs no pattern matching of its own.
struct EpilogueStage {
  enum class Role : uint8_t {
    kPointwise,     // an activation, Sqrt or BatchNorm (constant parameters) of the running value
    kScalar,        // Add/Sub/Mul/Div/Pow of the running value and a constant scalar
    kPerChannel,    // Add/Sub/Mul/Div of the running value and a constant varying along the channel axis only
    kResidual,      // Add of the running value and a computed tensor of the same shape
    kSwishScale,    // Mul of the running value by a constant scalar k, read only by the kSwishGate after it
    kSwishGate,     // Sigmoid of the running value (or of the kSwishScale before it), read only by kSwishProduct
    kSwishProduct,  // running value * the kSwishGate: with the two stages before, x * sigmoid(k * x)
  };
  struct Operand {
    enum class Kind : uint8_t { kHead, kStage, kInput } kind = Kind::kHead;
    // kStage: an earlier stage's result; kInput: an input of the fused node (a constant or the residual).
    int index = 0;
  };
  Role role = Role::kPointwise;
  OpKind op = OpKind::kIdentity;
  OpAttrs attrs;
  std::vector<Operand> operands;  // the absorbed node's inputs, in order
  std::string node;               // the absorbed node's name
  std::string value;              // its output's name (the last stage's is the fused node's output)
};

struct Epilogue {
  std::vector<EpilogueStage> stages;  // run in order after the node's own result (a Conv's: bias, residual, act)
  size_t own_inputs = 0;              // inputs before the stages' operands (Conv: 4, ConvTranspose: 3, MatMul: 2)
  size_t original_inputs = 0;         // how many the node had before fusion (expansion restores it)
  int channel_axis = 1;               // the axis kPerChannel constants vary along
  std::string head;                   // the name of the node's own result before fusion
  bool empty() const { return stages.empty(); }
};

struct Node;

struct Value {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;      // -1 for a dimension not known yet, <= -2 a symbol of the graph's SymbolTable (graph/symbolic.h)
  Tensor constant;  // defined() for initialisers and folded values
  // An integer tensor of rank 0 or 1 computed from shapes alone (Shape, and the slicing and arithmetic on it), when
  // its elements are known as dims, static or symbolic, before run time: what symbolic specialisation folds the
  // exported Shape->Slice->Concat->Reshape chains into (a Reshape target then becomes its attribute).
  std::vector<int64_t> shape_data;
  bool has_shape_data = false;
  Node* producer = nullptr;

  bool is_constant() const { return constant.defined(); }
  bool has_static_shape() const;
};

struct Node {
  std::string name;
  OpKind op = OpKind::kIdentity;
  std::vector<Value*> inputs;  // nullptr for an omitted optional input
  std::vector<Value*> outputs;
  OpAttrs attrs;
  Epilogue epilogue;  // pointwise stages fused after the result (Conv, ConvTranspose, MatMul); usually empty

  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  Value* output(size_t i = 0) const { return i < outputs.size() ? outputs[i] : nullptr; }
  template <typename A>
  const A& attr() const {
    return std::get<A>(attrs);
  }
  template <typename A>
  A& attr() {
    return std::get<A>(attrs);
  }
  // "Conv 'name'" for messages.
  std::string describe() const;
};

class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;

  // Deep copy of the structure; constant tensors share storage (passes replace constants, never mutate).
  Graph clone() const;

  Value* add_value(std::string name, DType dtype = DType::kF32, Shape shape = {});
  Value* add_constant(std::string name, Tensor t);
  Node* add_node(OpKind op, std::string name, std::vector<Value*> inputs, std::vector<Value*> outputs,
                 OpAttrs attrs = {});
  // A name not used by any value yet, derived from `base`.
  std::string unique_name(const std::string& base);

  // Detaches and deletes the node; its outputs lose their producer (remove_dead() drops them).
  void remove_node(Node* n);
  // Moves `n` to just after `anchor` in the node order.
  void move_after(Node* n, const Node* anchor);
  // Every use of `from` (node inputs and graph outputs) now reads `to`.
  void replace_all_uses(Value* from, Value* to);
  std::vector<Node*> consumers(const Value* v) const;
  bool is_graph_output(const Value* v) const;
  // Orders nodes so producers come first (topological_order below); fails on a cycle.
  Status toposort();
  // Drops nodes whose outputs feed nothing, and values nothing refers to. Returns how many nodes went.
  size_t remove_dead();

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }
  std::vector<Value*>& inputs() { return inputs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  std::vector<Value*>& outputs() { return outputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* find_value(const std::string& name) const;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  // A digest of the model file's bytes (core/content_hash.h hash_bytes, taken by the importer; 0 for a graph built
  // in code): the key of what caches keep for this model.
  uint64_t source_digest() const { return source_digest_; }
  void set_source_digest(uint64_t d) { source_digest_ = d; }
  // The expressions of the graph's symbolic dims (null until symbolic specialisation made one). Clones share it: it
  // only grows, at load, and evaluating it reads it.
  SymbolTable* symbols() const { return symbols_.get(); }
  SymbolTable& make_symbols();
  // For a graph whose shapes are all static again (graph::instantiate): it reads no symbol.
  void forget_symbols() { symbols_.reset(); }
  // Number of compute nodes (constants are values, not nodes).
  size_t node_count() const { return nodes_.size(); }
  std::map<std::string, int> op_histogram() const;
  // Total bytes of constant tensors referenced by nodes.
  size_t constant_bytes() const;

 private:
  std::string name_;
  uint64_t source_digest_ = 0;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  std::map<std::string, Value*> by_name_;
  uint64_t name_counter_ = 0;
  std::shared_ptr<SymbolTable> symbols_;
};

// How the one topological sort below takes ready nodes. kBreadthFirst: first in, first out (the original order
// stays among independent nodes; Graph::toposort). kDepthFirst: last in, first out, starting from the first node
// and each node's readers in order, so a chain runs to its end before a sibling branch starts (short live ranges).
enum class TopoOrder : uint8_t { kBreadthFirst, kDepthFirst };

// The tree's one topological sort: Kahn's algorithm; fails on a cycle. Graph::toposort and the backends'
// schedules (backends/common/schedule.h) use it.
Result<std::vector<Node*>> topological_order(const Graph& g, TopoOrder order = TopoOrder::kBreadthFirst);
// Whether every node reads only graph inputs, constants and values of nodes before it.
bool is_topologically_ordered(const Graph& g);

// Gives `n`'s epilogue stages back as the nodes they were, right after `n` (same names, operands and order), for
// a backend that runs them one by one or could not fuse them. Returns the nodes made.
std::vector<Node*> expand_epilogue(Graph& g, Node* n);
// expand_epilogue for every node; returns how many nodes had one.
size_t expand_epilogues(Graph& g);

}  // namespace steadyocr::graph

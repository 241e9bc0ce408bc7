// Graph rewrites. Each pass is a small rule that reports whether it changed the graph; the pass
// manager runs the verifier after every pass.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/status.h"
#include "graph/ir.h"

namespace steadyocr::graph {

// Evaluates `node` on constant inputs (inputs[i] null for an omitted optional input) into `outputs`, allocated
// from the node's output Values. graph/ knows no backend: the caller hands one in (the runtime builds it on the
// reference kernels). An error leaves the node for run time.
using NodeEvaluator =
    std::function<Status(const Node& node, const std::vector<const Tensor*>& inputs, std::vector<Tensor>* outputs)>;

struct PassOptions {
  bool fold_batchnorm = true;
  bool fuse_activations = true;
  bool fuse_layernorm = true;
  bool fuse_residual = true;
  bool fuse_epilogues = true;  // the pointwise chains after convolutions and matmuls (fuse_epilogues)
  // The verifier after each pass (and at the end of specialize); off, the caller verifies the final graph itself.
  bool verify_each = true;
  // How constant folding evaluates a node. Without one only what needs no kernel folds (Shape of a static
  // shape, constant Reshape targets), which leaves a graph with computed constants the backends then run.
  NodeEvaluator evaluate;
  size_t max_fold_bytes = size_t{64} << 20;  // nodes whose outputs are larger stay unfolded
};

// Sets the graph inputs' shapes, propagates shapes, and folds every node whose inputs are all
// constant (the exported Shape/Slice/Cast/Concat chains disappear) with `options.evaluate`. Fails when a shape is
// invalid for the model (e.g. wrong channel count), naming the input and the expected shape.
Status specialize(Graph& graph, const std::vector<Shape>& input_shapes, const PassOptions& options = {});

// Specialisation on symbols instead of numbers, once per model: each free (-1) dim of an input becomes a symbol of the
// graph's SymbolTable (graph/symbolic.h), shapes propagate as expressions of them, and the shape chains fold into them
// (graph/shape_data.h). Then optimize() runs on the result as on a static graph. Fails (kUnsupported) when a value's
// shape stays unknown, so that the caller keeps the per-shape path for such a model.
Status specialize_symbolic(Graph& graph, const PassOptions& options = {});

// The static graph for `input_shapes` of a graph specialised symbolically (and optimised): its symbols evaluated and
// written into every shape and Reshape target, nothing else run (microseconds to a fraction of a millisecond, where
// the passes took milliseconds). Fails when the shapes do not fit the model or break an assumption made on the symbols
// (SymbolTable::evaluate); specialize() then gives the precise error, or the shape its own graph.
Result<Graph> instantiate(const Graph& graph, const std::vector<Shape>& input_shapes);

// Evaluates constant subgraphs with `options.evaluate`, skipping nodes whose outputs exceed
// `options.max_fold_bytes`.
Result<bool> fold_constants(Graph& graph, const PassOptions& options);
Result<bool> fold_batchnorm(Graph& graph);  // Conv(+b) -> BatchNorm  =>  Conv with scaled weights, bias
// Conv -> Mul/Add/Sub/Div by a constant scalar or per-channel [C,1,1] tensor => Conv with new weights/bias (the
// "learnable affine" blocks of PP-LCNetV3). Runs under PassOptions::fold_batchnorm.
Result<bool> fold_conv_affine(Graph& graph);
// Mul/Add/Sub/Div by a constant scalar or per-channel tensor feeding only a Conv without padding => Conv with
// new weights/bias (the affine after each activation in PP-LCNetV3, before its pointwise convs). Runs under
// PassOptions::fold_batchnorm.
Result<bool> fold_conv_input_affine(Graph& graph);
Result<bool> fuse_hardswish(Graph& graph);        // x*clip(x+3,0,6)/6 and x*HardSigmoid(1/6,1/2)(x) => HardSwish
Result<bool> fuse_conv_activation(Graph& graph);  // Conv/ConvTranspose -> Relu|HardSwish|HardSigmoid|Sigmoid|Clip
Result<bool> fuse_layernorm(Graph& graph);        // ReduceMean/Sub/Pow/ReduceMean/Add/Sqrt/Div/Mul/Add => LayerNorm
Result<bool> fuse_conv_residual(Graph& graph);    // Conv(act none) -> Add(other) => Conv with residual input
Result<bool> eliminate_identities(Graph& graph);  // Identity, no-op Reshape/Squeeze chains on static shapes
// Conv/ConvTranspose/MatMul -> pointwise chain (activations, Sqrt, BatchNorm, constant scalar or per-channel
// arithmetic, one residual Add, swish) => the chain as the node's epilogue stages (Node::epilogue).
struct PassOptions;
Result<bool> fuse_epilogues(Graph& graph, const PassOptions& options);

struct PassReport {
  struct Step {
    std::string pass;
    bool changed = false;
    size_t nodes_after = 0;
  };
  size_t nodes_before = 0;
  std::vector<Step> steps;
  std::string describe() const;  // "Conv+BN fold: 672 -> 610 nodes ..."
};

// Runs the enabled passes in a fixed order (after specialize), verifying after each.
Status optimize(Graph& graph, const PassOptions& options = {}, PassReport* report = nullptr);

}  // namespace steadyocr::graph

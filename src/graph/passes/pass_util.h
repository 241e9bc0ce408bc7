// Small helpers the rewrite rules share: use counts, constant operands, node removal during a sweep.
#pragma once

#include <unordered_set>
#include <vector>

#include "graph/ir.h"

namespace steadyocr::graph::pass_util {

// Number of reads of `v` (each input slot counts) plus one if it is a graph output.
size_t use_count(const Graph& g, const Value* v);
// The node that is the only reader of `v` (read through exactly one input slot), or null when `v` has other
// readers, is read twice, or is a graph output. Fusions require this of every intermediate they swallow.
Node* sole_consumer(const Graph& g, const Value* v);
// For a two-input node reading `x`, the other operand (null when `x` is not an operand or is both).
Value* other_operand(const Node* n, const Value* x);
// True when `v` is a constant f32 tensor with exactly one element; stores it in `out`.
bool constant_scalar(const Value* v, float* out);
// True when `v` is a constant f32 scalar within `tol` of `target`.
bool scalar_near(const Value* v, float target, float tol);
// True when `v` is a constant f32 tensor.
bool constant_f32(const Value* v);

// Values of constant `c` per channel of an NCHW tensor with `channels` channels: a scalar, or [C,1,1] /
// [1,C,1,1]. False when `c` broadcasts along other axes too (then it is no per-channel affine map).
bool per_channel(const Value* c, int64_t channels, std::vector<double>* out);

// Node snapshot for one sweep; nodes removed during the sweep are skipped.
class Sweep {
 public:
  explicit Sweep(const Graph& g);
  const std::vector<Node*>& nodes() const { return nodes_; }
  bool removed(const Node* n) const { return removed_.count(n) != 0; }
  // Removes `n` from the graph and remembers it so the sweep skips it.
  void remove(Graph& g, Node* n);

 private:
  std::vector<Node*> nodes_;
  std::unordered_set<const Node*> removed_;
};

// Makes `producer` write `to` in place of its output `from` (`to` must have no other producer).
void redirect_output(Node* producer, Value* from, Value* to);

// Rescales the output channels of a Conv/ConvTranspose weight: a new tensor w'[oc...] = w[oc...] * scale[oc]
// computed in double. The input tensor is not touched (it may share storage with a clone's).
Tensor scale_output_channels(const Node& conv, const Tensor& weight, const std::vector<double>& scale);
// Number of output channels of a Conv/ConvTranspose whose weight has `weight_shape`.
int64_t output_channels(const Node& conv, const Shape& weight_shape);

}  // namespace steadyocr::graph::pass_util

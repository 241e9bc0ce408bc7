// Symbolic dimensions: the sizes a model's values take as expressions of its inputs' free dimensions (batch N, height
// H, width W), so that the passes run once per model, at load, on a graph whose shapes are those expressions, and a
// new input shape only evaluates them (microseconds) instead of running the passes again.
//
// A dimension in a Shape is static (>= 0), unknown (-1) or symbolic (<= -2): the symbol's expression lives in the
// graph's SymbolTable. Expressions are hash-consed and kept in a canonical form, so two values computed alike
// (a 3x3 convolution of stride 1 with padding 1 keeps H; two such paths give the same symbol) have equal Shapes,
// and the passes' shape comparisons need no change. Code that reads `d < 0` as "not known here" stays correct.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::graph {

constexpr int64_t kUnknownDim = -1;
inline bool is_symbolic(int64_t d) {
  return d <= -2;
}
// Whether every dim of `s` is static or symbolic (none unknown).
bool is_resolved(const Shape& s);
bool has_symbols(const Shape& s);

// The values of a table's symbols for one set of input shapes (SymbolTable::evaluate); index by symbol.
class SymbolValues {
 public:
  // `d` with its value: static dims as they are, symbols evaluated; -1 stays -1.
  int64_t dim(int64_t d) const { return is_symbolic(d) ? values_[static_cast<size_t>(-d - 2)] : d; }
  Shape shape(const Shape& s) const;

 private:
  friend class SymbolTable;
  std::vector<int64_t> values_;
};

class SymbolTable {
 public:
  // The symbol for axis `axis` of graph input `input` (its dims are bound at evaluation).
  int64_t input(int input, int axis);

  // Arithmetic on dims: static operands fold, -1 (unknown) makes the result unknown, symbols give symbols. A static
  // result below zero is no dimension: it comes back unknown (shape inference reports the static case itself).
  int64_t add(int64_t a, int64_t b);
  int64_t sub(int64_t a, int64_t b);
  int64_t mul(int64_t a, int64_t b);
  int64_t floor_div(int64_t a, int64_t b);  // b > 0 when evaluated
  int64_t ceil_div(int64_t a, int64_t b);
  int64_t min(int64_t a, int64_t b);
  int64_t max(int64_t a, int64_t b);
  // With a constant of any sign (a padding total less a kernel extent is negative).
  int64_t add_const(int64_t a, int64_t c);
  int64_t mul_const(int64_t a, int64_t c);
  int64_t floor_div_const(int64_t a, int64_t c);  // c > 0
  // floor(a * scale) as ONNX Resize computes an output size from a float scale.
  int64_t floor_scale(int64_t a, float scale);

  // What must hold for the shapes the graph was inferred under (a broadcast of two symbols, a MatMul's inner dims,
  // a Reshape's element count): evaluation fails when an input shape breaks one, and the caller then takes the
  // plain path, whose shape inference names the conflict.
  void assume_equal(int64_t a, int64_t b);
  // `d` as a product: multiplies *constant by its constant factors and appends its other factors to `syms`.
  void factors(int64_t d, int64_t* constant, std::vector<int64_t>* syms) const;
  void assume_divisible(int64_t a, int64_t b);
  void assume_at_least(int64_t a, int64_t k);  // a window must fit its (padded) input: span >= 0

  // Binds the inputs' dims and evaluates every symbol; fails when an assumption does not hold, a division is by a
  // non-positive value, or an input symbol's axis is missing.
  Status evaluate(const std::vector<Shape>& inputs, SymbolValues* out) const;

  size_t size() const { return exprs_.size(); }
  bool contains(int64_t d) const { return is_symbolic(d) && static_cast<size_t>(-d - 2) < exprs_.size(); }
  // "W", "(H-1)/2+1"; a static dim as its number, -1 as "?".
  std::string describe(int64_t d) const;
  std::string describe(const Shape& s) const;

 private:
  // Operands: dims (a symbol, or a static dim where the op allows it), except the *C ops' b, a constant of any sign;
  // kInput: input index and axis; kFloorScale: b is the scale's bits.
  enum class Op : uint8_t { kInput, kAdd, kSub, kMul, kFloorDiv, kMin, kMax, kAddC, kMulC, kFloorDivC, kFloorScale };
  struct Expr {
    Op op;
    int64_t a = 0, b = 0;
    bool operator==(const Expr&) const = default;
  };
  struct ExprHash {
    size_t operator()(const Expr& e) const;
  };
  struct Assumption {
    enum class Kind : uint8_t { kEqual, kDivisible, kAtLeast } kind = Kind::kEqual;  // a == b, a % b == 0, a >= b
    int64_t a = 0, b = 0;  // kAtLeast: b is a constant of any sign
    bool operator==(const Assumption&) const = default;
  };
  int64_t intern(Expr e);
  const Expr* expr_of(int64_t d) const { return is_symbolic(d) ? &exprs_[static_cast<size_t>(-d - 2)] : nullptr; }
  std::string describe_expr(int64_t d, int depth) const;

  std::vector<Expr> exprs_;
  std::unordered_map<Expr, int64_t, ExprHash> index_;
  std::vector<Assumption> assumptions_;
};

}  // namespace steadyocr::graph

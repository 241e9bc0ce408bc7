// Internal to the oneDNN CPU backend: our vectorised elementwise engine. A program loads operand 0, then
// applies a chain of unary and binary steps (binary operands broadcast by stride 0) in cache-sized tiles,
// so a chain like Mul(k) -> Add(b) -> HardSwish -> Mul(x) reads and writes memory once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace steadyocr::cpu {

enum class EwOp : uint8_t {
  // binary: acc = acc (op) operand; the R forms swap the sides: acc = operand (op) acc
  kAdd,
  kSub,
  kRSub,
  kMul,
  kDiv,
  kRDiv,
  kPow,
  kRPow,
  // unary
  kRelu,
  kSigmoid,
  kHardSigmoid,  // clamp(alpha*x + beta, 0, 1)
  kHardSwish,    // x * clamp(x/6 + 1/2, 0, 1)
  kClip,         // clamp(x, alpha, beta)
  kSqrt,
  kLinear,  // alpha*x + beta
  kSwish,   // x * sigmoid(alpha*x)
  kSquare,
};

bool ew_is_binary(EwOp op);
const char* ew_name(EwOp op);

struct EwStep {
  EwOp op = EwOp::kLinear;
  int operand = -1;  // binary steps: index into the program's operands
  float alpha = 0.f, beta = 0.f;
};

class EwProgram {
 public:
  // `dims`: the output's physical dims (the output is dense over them). `strides[i]`: element strides of
  // operand i over `dims` (0 where it broadcasts). Operand 0 is loaded first, then `steps` run in order.
  static EwProgram compile(const std::vector<int64_t>& dims, const std::vector<std::vector<int64_t>>& strides,
                           std::vector<EwStep> steps);
  // Runs on the calling thread's OpenMP team (parallel over tiles). `out` may alias operand 0 when that
  // operand is dense over `dims` (in-place).
  void run(const std::vector<const float*>& operands, float* out) const;
  int64_t numel() const { return numel_; }
  std::string describe() const;  // "load+mul+add+hardswish"

 private:
  void run_tile(const std::vector<const float*>& operands, float* out, int64_t outer, int64_t r0, int64_t rn,
                int64_t l0, int64_t ln) const;

  std::vector<int64_t> outer_dims_;                  // dims above the [R, L] tile, outermost first
  std::vector<std::vector<int64_t>> outer_strides_;  // per operand, then the output's
  int64_t rows_ = 1, cols_ = 1;                      // the tile dims R, L
  int64_t row_chunk_ = 1, col_chunk_ = 1;
  std::vector<int64_t> srow_, scol_;  // per operand strides over R and L
  std::vector<EwStep> steps_;
  int64_t numel_ = 0;
};

}  // namespace steadyocr::cpu

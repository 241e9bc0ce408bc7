#include "graph/symbolic.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>

namespace steadyocr::graph {
namespace {

bool is_static(int64_t d) {
  return d >= 0;
}

// Floor division for any signs (C++ truncates toward zero).
int64_t floor_div_int(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// A static result below zero is no dimension.
int64_t static_dim(int64_t v) {
  return v >= 0 ? v : kUnknownDim;
}

// Static arithmetic that overflows gives no dimension either (a hostile file's sizes).
int64_t checked_add(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? kUnknownDim : static_dim(r);
}
int64_t checked_mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? kUnknownDim : static_dim(r);
}

}  // namespace

bool is_resolved(const Shape& s) {
  return std::none_of(s.begin(), s.end(), [](int64_t d) { return d == kUnknownDim; });
}

bool has_symbols(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](int64_t d) { return is_symbolic(d); });
}

Shape SymbolValues::shape(const Shape& s) const {
  Shape out(s.size());
  for (size_t i = 0; i < s.size(); ++i) out[i] = dim(s[i]);
  return out;
}

size_t SymbolTable::ExprHash::operator()(const Expr& e) const {
  size_t h = static_cast<size_t>(e.op);
  h = h * 1000003u ^ std::hash<int64_t>()(e.a);
  h = h * 1000003u ^ std::hash<int64_t>()(e.b);
  return h;
}

int64_t SymbolTable::intern(Expr e) {
  auto it = index_.find(e);
  if (it != index_.end()) return it->second;
  const int64_t d = -static_cast<int64_t>(exprs_.size()) - 2;
  exprs_.push_back(e);
  index_.emplace(e, d);
  return d;
}

int64_t SymbolTable::input(int input, int axis) {
  return intern({Op::kInput, input, axis});
}

int64_t SymbolTable::add(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  if (is_static(a) && is_static(b)) return checked_add(a, b);
  if (is_static(a)) return add_const(b, a);
  if (is_static(b)) return add_const(a, b);
  if (a < b) std::swap(a, b);  // commutative: one order
  return intern({Op::kAdd, a, b});
}

int64_t SymbolTable::add_const(int64_t a, int64_t c) {
  if (a == kUnknownDim) return kUnknownDim;
  if (is_static(a)) return checked_add(a, c);
  if (c == 0) return a;
  const Expr* e = expr_of(a);
  int64_t sum = 0;
  if (e->op == Op::kAddC && !__builtin_add_overflow(e->b, c, &sum)) return add_const(e->a, sum);  // (x+c1)+c2
  return intern({Op::kAddC, a, c});
}

int64_t SymbolTable::sub(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  if (a == b) return 0;
  if (is_static(a) && is_static(b)) return static_dim(a - b);
  if (is_static(b)) return add_const(a, -b);
  // (x + c) - x = c
  if (const Expr* e = expr_of(a); e && e->op == Op::kAddC && e->a == b) return static_dim(e->b);
  return intern({Op::kSub, a, b});
}

int64_t SymbolTable::mul(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  if (is_static(a) && is_static(b)) return checked_mul(a, b);
  if (is_static(a)) return mul_const(b, a);
  if (is_static(b)) return mul_const(a, b);
  if (a < b) std::swap(a, b);
  return intern({Op::kMul, a, b});
}

int64_t SymbolTable::mul_const(int64_t a, int64_t c) {
  if (a == kUnknownDim) return kUnknownDim;
  if (is_static(a)) return checked_mul(a, c);
  if (c == 0) return 0;
  if (c == 1) return a;
  const Expr* e = expr_of(a);
  int64_t prod = 0;
  if (e->op == Op::kMulC && !__builtin_mul_overflow(e->b, c, &prod)) return mul_const(e->a, prod);
  return intern({Op::kMulC, a, c});
}

int64_t SymbolTable::floor_div(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim || b == 0) return kUnknownDim;
  if (is_static(b)) return floor_div_const(a, b);
  if (a == b) return 1;
  if (const Expr* e = expr_of(a); e && e->op == Op::kMul && (e->a == b || e->b == b)) {
    return e->a == b ? e->b : e->a;  // (x * y) / y = x
  }
  return intern({Op::kFloorDiv, a, b});
}

int64_t SymbolTable::floor_div_const(int64_t a, int64_t c) {
  if (a == kUnknownDim || c <= 0) return kUnknownDim;
  if (is_static(a)) return floor_div_int(a, c);
  if (c == 1) return a;
  const Expr* e = expr_of(a);
  int64_t prod = 0;
  if (e->op == Op::kFloorDivC && !__builtin_mul_overflow(e->b, c, &prod)) {
    return floor_div_const(e->a, prod);  // floor(floor(x / a) / b) = floor(x / ab) for positive a, b
  }
  // (x * k) / c = x * (k / c) when c divides k
  if (e->op == Op::kMulC && e->b % c == 0) return mul_const(e->a, e->b / c);
  // (x * k + j) / c = x * (k / c) + j / c when c divides both
  if (e->op == Op::kAddC && e->b % c == 0) {
    const Expr* m = expr_of(e->a);
    if (m->op == Op::kMulC && m->b % c == 0) return add_const(mul_const(m->a, m->b / c), e->b / c);
  }
  return intern({Op::kFloorDivC, a, c});
}

int64_t SymbolTable::ceil_div(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim || b == 0) return kUnknownDim;
  if (is_static(b)) return floor_div_const(add_const(a, b - 1), b);
  return floor_div(add_const(add(a, b), -1), b);
}

int64_t SymbolTable::min(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  if (is_static(a) && is_static(b)) return std::min(a, b);
  if (a == b) return a;
  if (a < b) std::swap(a, b);
  return intern({Op::kMin, a, b});
}

int64_t SymbolTable::max(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return kUnknownDim;
  if (is_static(a) && is_static(b)) return std::max(a, b);
  if (a == b) return a;
  if (a < b) std::swap(a, b);
  return intern({Op::kMax, a, b});
}

int64_t SymbolTable::floor_scale(int64_t a, float scale) {
  if (a == kUnknownDim) return kUnknownDim;
  if (is_static(a)) return static_dim(static_cast<int64_t>(std::floor(static_cast<double>(a) * scale)));
  const double s = scale;
  if (s == std::floor(s) && s >= 0 && s < 65536) return mul_const(a, static_cast<int64_t>(s));
  return intern({Op::kFloorScale, a, static_cast<int64_t>(std::bit_cast<uint32_t>(scale))});
}

void SymbolTable::factors(int64_t d, int64_t* constant, std::vector<int64_t>* syms) const {
  if (!is_symbolic(d)) {
    *constant *= d;
    return;
  }
  const Expr& e = *expr_of(d);
  if (e.op == Op::kMulC) {
    *constant *= e.b;
    factors(e.a, constant, syms);
  } else if (e.op == Op::kMul) {
    factors(e.a, constant, syms);
    factors(e.b, constant, syms);
  } else {
    syms->push_back(d);
  }
}

void SymbolTable::assume_equal(int64_t a, int64_t b) {
  if (a == b || a == kUnknownDim || b == kUnknownDim) return;
  if (a < b) std::swap(a, b);
  const Assumption x{Assumption::Kind::kEqual, a, b};
  if (std::find(assumptions_.begin(), assumptions_.end(), x) == assumptions_.end()) assumptions_.push_back(x);
}

void SymbolTable::assume_divisible(int64_t a, int64_t b) {
  if (a == kUnknownDim || b == kUnknownDim) return;
  const Assumption x{Assumption::Kind::kDivisible, a, b};
  if (std::find(assumptions_.begin(), assumptions_.end(), x) == assumptions_.end()) assumptions_.push_back(x);
}

void SymbolTable::assume_at_least(int64_t a, int64_t k) {
  if (!is_symbolic(a)) return;
  const Assumption x{Assumption::Kind::kAtLeast, a, k};
  if (std::find(assumptions_.begin(), assumptions_.end(), x) == assumptions_.end()) assumptions_.push_back(x);
}

Status SymbolTable::evaluate(const std::vector<Shape>& inputs, SymbolValues* out) const {
  std::vector<int64_t>& v = out->values_;
  v.resize(exprs_.size());
  auto value = [&](int64_t d) { return is_symbolic(d) ? v[static_cast<size_t>(-d - 2)] : d; };
  auto overflow = [] { return invalid_argument("a dimension overflows 64 bits"); };
  for (size_t i = 0; i < exprs_.size(); ++i) {
    const Expr& e = exprs_[i];
    int64_t r = 0;
    switch (e.op) {
      case Op::kInput:
        if (e.a < 0 || static_cast<size_t>(e.a) >= inputs.size() || e.b < 0 ||
            static_cast<size_t>(e.b) >= inputs[static_cast<size_t>(e.a)].size()) {
          return invalid_argument(fmt::format("no axis {} on input {} of {} given", e.b, e.a, inputs.size()));
        }
        r = inputs[static_cast<size_t>(e.a)][static_cast<size_t>(e.b)];
        break;
      case Op::kAdd:
      case Op::kAddC:
        if (__builtin_add_overflow(value(e.a), e.op == Op::kAddC ? e.b : value(e.b), &r)) return overflow();
        break;
      case Op::kSub:
        if (__builtin_sub_overflow(value(e.a), value(e.b), &r)) return overflow();
        break;
      case Op::kMul:
      case Op::kMulC:
        if (__builtin_mul_overflow(value(e.a), e.op == Op::kMulC ? e.b : value(e.b), &r)) return overflow();
        break;
      case Op::kFloorDiv:
      case Op::kFloorDivC: {
        const int64_t b = e.op == Op::kFloorDivC ? e.b : value(e.b);
        if (b <= 0) return invalid_argument(fmt::format("{} divides by {}", describe(-static_cast<int64_t>(i) - 2), b));
        r = floor_div_int(value(e.a), b);
        break;
      }
      case Op::kMin:
        r = std::min(value(e.a), value(e.b));
        break;
      case Op::kMax:
        r = std::max(value(e.a), value(e.b));
        break;
      case Op::kFloorScale: {
        const double s = std::floor(static_cast<double>(value(e.a)) * std::bit_cast<float>(static_cast<uint32_t>(e.b)));
        if (!(s <= static_cast<double>(int64_t{1} << 40))) return invalid_argument("a scaled dimension overflows");
        r = static_cast<int64_t>(s);
        break;
      }
    }
    v[i] = r;
  }
  for (const Assumption& x : assumptions_) {
    const int64_t a = value(x.a);
    switch (x.kind) {
      case Assumption::Kind::kEqual:
        if (a != value(x.b)) {
          return invalid_argument(
              fmt::format("{} = {} differs from {} = {}", describe(x.a), a, describe(x.b), value(x.b)));
        }
        break;
      case Assumption::Kind::kDivisible:
        if (value(x.b) <= 0 || a % value(x.b) != 0) {
          return invalid_argument(
              fmt::format("{} = {} is not divisible by {} = {}", describe(x.a), a, describe(x.b), value(x.b)));
        }
        break;
      case Assumption::Kind::kAtLeast:
        if (a < x.b) return invalid_argument(fmt::format("{} = {} is below {}", describe(x.a), a, x.b));
        break;
    }
  }
  return Status::ok();
}

std::string SymbolTable::describe_expr(int64_t d, int depth) const {
  if (d == kUnknownDim) return "?";
  if (!is_symbolic(d)) return std::to_string(d);
  if (depth > 12) return "...";
  const Expr& e = *expr_of(d);
  auto sub_expr = [&](int64_t x) { return describe_expr(x, depth + 1); };
  switch (e.op) {
    case Op::kInput: {
      static const char* kAxes[] = {"N", "C", "H", "W"};
      if (e.a == 0 && e.b >= 0 && e.b < 4) return kAxes[e.b];
      return fmt::format("in{}[{}]", e.a, e.b);
    }
    case Op::kAdd:
      return fmt::format("({}+{})", sub_expr(e.a), sub_expr(e.b));
    case Op::kAddC:
      return e.b < 0 ? fmt::format("({}-{})", sub_expr(e.a), -e.b) : fmt::format("({}+{})", sub_expr(e.a), e.b);
    case Op::kSub:
      return fmt::format("({}-{})", sub_expr(e.a), sub_expr(e.b));
    case Op::kMul:
      return fmt::format("{}*{}", sub_expr(e.a), sub_expr(e.b));
    case Op::kMulC:
      return fmt::format("{}*{}", sub_expr(e.a), e.b);
    case Op::kFloorDiv:
      return fmt::format("{}/{}", sub_expr(e.a), sub_expr(e.b));
    case Op::kFloorDivC:
      return fmt::format("{}/{}", sub_expr(e.a), e.b);
    case Op::kMin:
      return fmt::format("min({},{})", sub_expr(e.a), sub_expr(e.b));
    case Op::kMax:
      return fmt::format("max({},{})", sub_expr(e.a), sub_expr(e.b));
    case Op::kFloorScale:
      return fmt::format("floor({}*{})", sub_expr(e.a), std::bit_cast<float>(static_cast<uint32_t>(e.b)));
  }
  return "?";
}

std::string SymbolTable::describe(int64_t d) const {
  return describe_expr(d, 0);
}

std::string SymbolTable::describe(const Shape& s) const {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "," : "") + describe(s[i]);
  return r + "]";
}

}  // namespace steadyocr::graph

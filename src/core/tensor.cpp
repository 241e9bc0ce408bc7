#include "core/tensor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <sstream>

#include "core/half.h"

namespace steadyocr {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kF16:
      return 2;
    case DType::kBF16:
      return 2;
    case DType::kI64:
      return 8;
    case DType::kI32:
      return 4;
    case DType::kU8:
      return 1;
    case DType::kBool:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kF32:
      return "f32";
    case DType::kF16:
      return "f16";
    case DType::kBF16:
      return "bf16";
    case DType::kI64:
      return "i64";
    case DType::kI32:
      return "i32";
    case DType::kU8:
      return "u8";
    case DType::kBool:
      return "bool";
  }
  return "?";
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) os << ',';
    if (s[i] < 0) {
      os << '?';
    } else {
      os << s[i];
    }
  }
  os << ']';
  return os.str();
}

std::vector<int64_t> shape_strides(const Shape& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (int i = static_cast<int>(s.size()) - 2; i >= 0; --i) st[i] = st[i + 1] * s[i + 1];
  return st;
}

Tensor Tensor::empty(DType dtype, Shape shape) {
  Tensor t;
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  t.shape_ = std::move(shape);
  size_t bytes = t.nbytes();
  size_t alloc = (bytes + 63) / 64 * 64;
  if (alloc == 0) alloc = 64;
  void* p = std::aligned_alloc(64, alloc);
  if (p == nullptr) throw std::bad_alloc();
  t.owner_ = std::shared_ptr<void>(p, [](void* q) { std::free(q); });
  t.data_ = p;
  return t;
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t = empty(dtype, std::move(shape));
  std::memset(t.data_, 0, t.nbytes());
  return t;
}

Tensor Tensor::wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner) {
  Tensor t;
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  t.shape_ = std::move(shape);
  t.data_ = data;
  t.owner_ = std::move(owner);
  return t;
}

Tensor Tensor::from_floats(Shape shape, const std::vector<float>& values) {
  Tensor t = empty(DType::kF32, std::move(shape));
  std::memcpy(t.data_, values.data(), std::min(values.size() * 4, t.nbytes()));
  return t;
}

Tensor Tensor::from_int64s(Shape shape, const std::vector<int64_t>& values) {
  Tensor t = empty(DType::kI64, std::move(shape));
  std::memcpy(t.data_, values.data(), std::min(values.size() * 8, t.nbytes()));
  return t;
}

Tensor Tensor::clone() const {
  if (!dtype_set_) return Tensor();
  Tensor t = empty(dtype_, shape_);
  if (nbytes()) std::memcpy(t.data_, data_, nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::vector<int64_t> Tensor::to_int64s() const {
  std::vector<int64_t> v(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype_) {
      case DType::kI64:
        v[i] = data<int64_t>()[i];
        break;
      case DType::kI32:
        v[i] = data<int32_t>()[i];
        break;
      case DType::kF32: {
        // Saturating: a float outside int64's range (or NaN) converted directly is undefined behaviour, and these
        // values come from model files. The callers' own limits then refuse the extreme values.
        const float f = data<float>()[i];
        if (std::isnan(f)) {
          v[i] = 0;
        } else if (f >= 9.2233720368547758e18f) {
          v[i] = std::numeric_limits<int64_t>::max();
        } else if (f <= -9.2233720368547758e18f) {
          v[i] = std::numeric_limits<int64_t>::min();
        } else {
          v[i] = static_cast<int64_t>(f);
        }
        break;
      }
      case DType::kU8:
      case DType::kBool:
        v[i] = data<uint8_t>()[i];
        break;
      default:
        v[i] = 0;
    }
  }
  return v;
}

std::vector<float> Tensor::to_floats() const {
  std::vector<float> v(static_cast<size_t>(std::max<int64_t>(numel(), 0)));
  for (size_t i = 0; i < v.size(); ++i) {
    switch (dtype_) {
      case DType::kF32:
        v[i] = data<float>()[i];
        break;
      case DType::kF16:
        v[i] = half_to_float(data<uint16_t>()[i]);
        break;
      case DType::kBF16:
        v[i] = bf16_to_float(data<uint16_t>()[i]);
        break;
      case DType::kI64:
        v[i] = static_cast<float>(data<int64_t>()[i]);
        break;
      case DType::kI32:
        v[i] = static_cast<float>(data<int32_t>()[i]);
        break;
      case DType::kU8:
      case DType::kBool:
        v[i] = data<uint8_t>()[i];
        break;
    }
  }
  return v;
}

std::string Tensor::describe() const {
  return std::string(dtype_name(dtype_)) + shape_str(shape_);
}

}  // namespace steadyocr

// Host tensors: a shape, an element type and shared, 64-byte aligned storage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace steadyocr {

enum class DType : uint8_t { kF32, kF16, kBF16, kI64, kI32, kU8, kBool };

size_t dtype_size(DType t);
const char* dtype_name(DType t);

using Shape = std::vector<int64_t>;

// Number of elements; 0 when any dimension is 0. Unknown (<0) dimensions give -1.
int64_t shape_numel(const Shape& s);
std::string shape_str(const Shape& s);
// Row-major strides in elements.
std::vector<int64_t> shape_strides(const Shape& s);

class Tensor {
 public:
  Tensor() = default;
  // Uninitialised storage for `shape`.
  static Tensor empty(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  // Views memory owned elsewhere; `owner` keeps it alive (may be null for caller-managed memory).
  static Tensor wrap(DType dtype, Shape shape, void* data, std::shared_ptr<void> owner);
  static Tensor from_floats(Shape shape, const std::vector<float>& values);
  static Tensor from_int64s(Shape shape, const std::vector<int64_t>& values);
  static Tensor scalar_f32(float v) { return from_floats({}, {v}); }

  bool defined() const { return dtype_set_; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + rank() : i]; }
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  template <typename T>
  T* data() {
    return static_cast<T*>(data_);
  }
  template <typename T>
  const T* data() const {
    return static_cast<const T*>(data_);
  }

  // What keeps the storage alive (shared by copies of this tensor); null for caller-managed memory.
  const std::shared_ptr<void>& storage() const { return owner_; }

  // Deep copy with fresh storage.
  Tensor clone() const;
  // Same storage, new shape with the same number of elements.
  Tensor reshaped(Shape shape) const;
  // Values as int64 whatever the integer/float type (for shape tensors); empty when undefined.
  std::vector<int64_t> to_int64s() const;
  // Values as floats whatever the element type (f16 and bf16 widened exactly, integers converted).
  std::vector<float> to_floats() const;
  std::string describe() const;  // "f32[1,3,48,320]"

 private:
  DType dtype_ = DType::kF32;
  bool dtype_set_ = false;
  Shape shape_;
  void* data_ = nullptr;
  std::shared_ptr<void> owner_;
};

}  // namespace steadyocr

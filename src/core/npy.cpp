#include "core/npy.h"

#include <cstring>
#include <fstream>
#include <regex>

namespace steadyocr {
namespace {

const char* descr_for(DType t) {
  switch (t) {
    case DType::kF32:
      return "<f4";
    case DType::kF16:
      return "<f2";
    case DType::kI64:
      return "<i8";
    case DType::kI32:
      return "<i4";
    case DType::kU8:
      return "|u1";
    case DType::kBool:
      return "|b1";
    default:
      return nullptr;
  }
}

bool dtype_for(const std::string& d, DType* out) {
  static const std::pair<const char*, DType> kMap[] = {{"<f4", DType::kF32}, {"<f2", DType::kF16},
                                                       {"<i8", DType::kI64}, {"<i4", DType::kI32},
                                                       {"|u1", DType::kU8},  {"|b1", DType::kBool}};
  for (auto& [k, v] : kMap) {
    if (d == k) {
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace

Result<Tensor> load_npy(const std::string& path, size_t max_bytes) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return not_found("cannot open " + path);
  char magic[8];
  if (!f.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return invalid_argument(path + " is not a .npy file (bad magic)");
  }
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint8_t b[2];
    if (!f.read(reinterpret_cast<char*>(b), 2)) return data_loss(path + ": truncated header");
    header_len = b[0] | (b[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    uint8_t b[4];
    if (!f.read(reinterpret_cast<char*>(b), 4)) return data_loss(path + ": truncated header");
    header_len = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    return unsupported(path + ": .npy version " + std::to_string(magic[6]) + " is not supported");
  }
  if (header_len > (1u << 20)) return invalid_argument(path + ": .npy header is implausibly large");
  std::string header(header_len, '\0');
  if (!f.read(header.data(), header_len)) return data_loss(path + ": truncated header");

  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']+)')"))) {
    return invalid_argument(path + ": .npy header has no descr");
  }
  DType dtype;
  if (!dtype_for(m[1], &dtype)) return unsupported(path + ": .npy dtype " + m[1].str() + " is not supported");
  if (std::regex_search(header, m, std::regex(R"('fortran_order'\s*:\s*True)"))) {
    return unsupported(path + ": Fortran-ordered .npy is not supported");
  }
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) {
    return invalid_argument(path + ": .npy header has no shape");
  }
  Shape shape;
  std::string dims = m[1];
  std::regex num(R"(\d+)");
  for (auto it = std::sregex_iterator(dims.begin(), dims.end(), num); it != std::sregex_iterator(); ++it) {
    shape.push_back(std::stoll(it->str()));
  }
  int64_t n = shape_numel(shape);
  if (n < 0 || static_cast<size_t>(n) > max_bytes / dtype_size(dtype)) {
    return resource_exhausted(path + ": tensor " + shape_str(shape) + " exceeds the size limit");
  }
  Tensor t = Tensor::empty(dtype, shape);
  if (!f.read(static_cast<char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()))) {
    return data_loss(path + ": truncated data (expected " + std::to_string(t.nbytes()) + " bytes)");
  }
  return t;
}

Status save_npy(const std::string& path, const Tensor& t) {
  const char* d = descr_for(t.dtype());
  if (d == nullptr) return unsupported(std::string("cannot write dtype ") + dtype_name(t.dtype()) + " to .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.shape().size(); ++i) {
    shape += std::to_string(t.shape()[i]);
    if (t.shape().size() == 1 || i + 1 < t.shape().size()) shape += ",";
    if (i + 1 < t.shape().size()) shape += " ";
  }
  shape += ")";
  std::string header = std::string("{'descr': '") + d + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  if (!f) return not_found("cannot write " + path);
  f.write("\x93NUMPY\x01\x00", 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  char lb[2] = {static_cast<char>(len & 0xff), static_cast<char>(len >> 8)};
  f.write(lb, 2);
  f.write(header.data(), static_cast<std::streamsize>(header.size()));
  f.write(static_cast<const char*>(t.raw()), static_cast<std::streamsize>(t.nbytes()));
  if (!f) return Status(StatusCode::kDataLoss, "failed writing " + path);
  return Status::ok();
}

}  // namespace steadyocr

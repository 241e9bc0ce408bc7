// Helpers shared by the reference kernels: input checks, axis and broadcast arithmetic, strided copies.
#include <cstring>

#include "backends/reference/kernels.h"

namespace steadyocr {
namespace reference {

Status require_present(const graph::Node& node, const Inputs& in, size_t i) {
  if (i >= in.size() || in[i] == nullptr || !in[i]->defined()) {
    return invalid_argument(fmt::format("{}: input {} is missing", node.describe(), i));
  }
  return Status::ok();
}

Status require_input(const graph::Node& node, const Inputs& in, size_t i, DType t) {
  RETURN_IF_ERROR(require_present(node, in, i));
  if (in[i]->dtype() != t) {
    return unsupported(fmt::format("{}: input {} is {}, the reference kernel needs {}", node.describe(), i,
                                   in[i]->describe(), dtype_name(t)));
  }
  return Status::ok();
}

Status require_output(const graph::Node& node, const Outputs& out, DType t) {
  if (out.empty() || !out[0].defined()) {
    return internal_error(fmt::format("{}: output not allocated", node.describe()));
  }
  if (out[0].dtype() != t) {
    return unsupported(fmt::format("{}: output is {}, the reference kernel produces {}", node.describe(),
                                   out[0].describe(), dtype_name(t)));
  }
  return Status::ok();
}

bool normalize_axis(int64_t axis, int64_t rank, int64_t* out) {
  if (axis < -rank || axis >= rank) return false;
  *out = axis < 0 ? axis + rank : axis;
  return true;
}

bool broadcast_strides(const Shape& in_shape, const Shape& out_shape, std::vector<int64_t>* strides) {
  if (in_shape.size() > out_shape.size()) return false;
  size_t off = out_shape.size() - in_shape.size();
  std::vector<int64_t> in_st = shape_strides(in_shape);
  strides->assign(out_shape.size(), 0);
  for (size_t i = 0; i < in_shape.size(); ++i) {
    int64_t d = in_shape[i], o = out_shape[off + i];
    if (d == o) {
      (*strides)[off + i] = d == 1 ? 0 : in_st[i];
    } else if (d != 1) {
      return false;
    }
  }
  return true;
}

namespace {

template <typename E>
void strided_copy_typed(const E* src, const std::vector<int64_t>& src_strides, const Shape& out_shape, E* dst) {
  const int rank = static_cast<int>(out_shape.size());
  const int64_t n = shape_numel(out_shape);
  if (n <= 0) return;
  if (rank == 0) {
    dst[0] = src[0];
    return;
  }
  const int64_t inner = out_shape[rank - 1];
  const int64_t inner_stride = src_strides[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  int64_t offset = 0;  // source offset of idx (all axes but the last)
  for (int64_t done = 0; done < n; done += inner) {
    const E* s = src + offset;
    if (inner_stride == 1) {
      std::memcpy(dst, s, static_cast<size_t>(inner) * sizeof(E));
    } else {
      for (int64_t j = 0; j < inner; ++j) dst[j] = s[j * inner_stride];
    }
    dst += inner;
    for (int a = rank - 2; a >= 0; --a) {
      offset += src_strides[a];
      if (++idx[a] < out_shape[a]) break;
      offset -= src_strides[a] * out_shape[a];
      idx[a] = 0;
    }
  }
}

}  // namespace

void strided_copy(const void* src, const std::vector<int64_t>& src_strides, const Shape& out_shape, void* dst,
                  size_t esize) {
  switch (esize) {
    case 1:
      strided_copy_typed(static_cast<const uint8_t*>(src), src_strides, out_shape, static_cast<uint8_t*>(dst));
      break;
    case 2:
      strided_copy_typed(static_cast<const uint16_t*>(src), src_strides, out_shape, static_cast<uint16_t*>(dst));
      break;
    case 4:
      strided_copy_typed(static_cast<const uint32_t*>(src), src_strides, out_shape, static_cast<uint32_t*>(dst));
      break;
    default:
      strided_copy_typed(static_cast<const uint64_t*>(src), src_strides, out_shape, static_cast<uint64_t*>(dst));
      break;
  }
}

}  // namespace reference
}  // namespace steadyocr

// Resize on the two trailing axes of NCHW, ONNX semantics (coordinate transform, nearest rounding, linear with
// the source coordinate clamped to the input, as ONNX Runtime does).
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

__device__ __forceinline__ float source_coord(int x, float scale, int in_len, int out_len, int coord) {
  switch (coord) {
    case 0:  // half_pixel
      return (x + 0.5f) / scale - 0.5f;
    case 1:  // asymmetric
      return x / scale;
    case 2:  // align_corners
      return out_len == 1 ? 0.f : x * static_cast<float>(in_len - 1) / static_cast<float>(out_len - 1);
    default:  // pytorch_half_pixel
      return out_len > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
  }
}

__device__ __forceinline__ int nearest_index(float s, int in_len, int mode) {
  float f = floorf(s);
  int i;
  switch (mode) {
    case 0:  // round_prefer_floor
      i = (s - f == 0.5f) ? static_cast<int>(f) : static_cast<int>(rintf(s));
      break;
    case 1:  // round_prefer_ceil
      i = (s - f == 0.5f) ? static_cast<int>(f) + 1 : static_cast<int>(rintf(s));
      break;
    case 2:
      i = static_cast<int>(f);
      break;
    default:
      i = static_cast<int>(ceilf(s));
      break;
  }
  return i < 0 ? 0 : (i > in_len - 1 ? in_len - 1 : i);
}

template <typename T>
__global__ void resize_kernel(const __grid_constant__ ResizeParams p, int64_t n) {
  const T* x = static_cast<const T*>(p.x);
  T* y = static_cast<T*>(p.y);
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int ox = static_cast<int>(i % p.out_w);
    int oy = static_cast<int>((i / p.out_w) % p.out_h);
    int64_t plane = i / (static_cast<int64_t>(p.out_w) * p.out_h);
    const T* src = x + plane * p.in_h * p.in_w;
    float sy = source_coord(oy, p.scale_h, p.in_h, p.out_h, p.coord);
    float sx = source_coord(ox, p.scale_w, p.in_w, p.out_w, p.coord);
    float v;
    if (p.mode == 0) {
      int iy = nearest_index(sy, p.in_h, p.nearest);
      int ix = nearest_index(sx, p.in_w, p.nearest);
      v = to_f(src[iy * p.in_w + ix]);
    } else {
      sy = fminf(fmaxf(sy, 0.f), static_cast<float>(p.in_h - 1));
      sx = fminf(fmaxf(sx, 0.f), static_cast<float>(p.in_w - 1));
      int y1 = static_cast<int>(sy), x1 = static_cast<int>(sx);
      int y2 = min(y1 + 1, p.in_h - 1), x2 = min(x1 + 1, p.in_w - 1);
      float dy1 = sy - y1, dx1 = sx - x1;
      float dy2 = 1.f - dy1, dx2 = 1.f - dx1;
      if (y1 == y2) dy1 = dy2 = 0.5f;
      if (x1 == x2) dx1 = dx2 = 0.5f;
      float v11 = to_f(src[y1 * p.in_w + x1]), v12 = to_f(src[y1 * p.in_w + x2]);
      float v21 = to_f(src[y2 * p.in_w + x1]), v22 = to_f(src[y2 * p.in_w + x2]);
      v = dy2 * (dx2 * v11 + dx1 * v12) + dy1 * (dx2 * v21 + dx1 * v22);
    }
    y[i] = from_f<T>(v);
  }
}

}  // namespace

cudaError_t launch_resize(const ResizeParams& p, cudaStream_t stream) {
  int64_t n = p.nc * p.out_h * p.out_w;
  if (n <= 0) return cudaSuccess;
  if (p.dt == Dt::kF16) {
    resize_kernel<__half><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
  } else {
    resize_kernel<float><<<blocks_for(n), kThreads, 0, stream>>>(p, n);
  }
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

// Kernels for fault injection (docs/FAULTS.md): a real illegal address and a kernel that hangs until released.
#include "backends/cuda/kernels/common.cuh"

namespace steadyocr::cuda::k {
namespace {

__global__ void illegal_address_kernel(int* p) {
  // An address no allocation covers: the write raises cudaErrorIllegalAddress and the context is lost.
  p[threadIdx.x] = 0xdead;
}

__global__ void spin_kernel(const volatile int* flag, uint64_t timeout_ns) {
  uint64_t start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (*flag == 0) {
    uint64_t now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) break;
    __nanosleep(1000);
  }
}

}  // namespace

cudaError_t launch_illegal_address(cudaStream_t stream) {
  illegal_address_kernel<<<1, 32, 0, stream>>>(reinterpret_cast<int*>(0x10));
  return cudaGetLastError();
}

cudaError_t launch_spin(const volatile int* release_flag, uint64_t timeout_ms, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(release_flag, timeout_ms * 1000000ULL);
  return cudaGetLastError();
}

}  // namespace steadyocr::cuda::k

// Kernels of the doctor's checks inside the plugin (diagnostics.cpp): a kernel whose image and result are
// checked, and fp32<->fp16 conversion for the reduced-precision check.
#pragma once

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

namespace steadyocr::cuda::diag {

// y[i] += a * x[i] for i < n.
cudaError_t launch_axpy(float a, const float* x, float* y, int n, cudaStream_t stream);
// The attributes of the axpy kernel as the driver loaded it (binaryVersion = SASS arch used, ptxVersion).
cudaError_t axpy_attributes(cudaFuncAttributes* attributes);
cudaError_t launch_to_half(const float* in, __half* out, int n, cudaStream_t stream);
cudaError_t launch_to_float(const __half* in, float* out, int n, cudaStream_t stream);

}  // namespace steadyocr::cuda::diag

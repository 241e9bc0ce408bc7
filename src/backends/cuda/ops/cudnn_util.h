// cuDNN descriptor ownership and the per-shape algorithm choice shared by Conv and ConvTranspose.
#pragma once

#include <cudnn.h>

#include <functional>
#include <string>

#include "backends/cuda/device.h"
#include "backends/cuda/plan.h"
#include "core/status.h"

namespace steadyocr::cuda {

// Owns the four descriptors of one convolution problem.
struct ConvDescriptors {
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  ConvDescriptors() = default;
  ConvDescriptors(const ConvDescriptors&) = delete;
  ConvDescriptors& operator=(const ConvDescriptors&) = delete;
  ~ConvDescriptors();
};

struct ConvProblem {
  int64_t n = 0, c = 0, h = 0, w = 0;  // x (forward input)
  int64_t k = 0, kh = 0, kw = 0;       // filter: k output channels of c/group inputs
  int64_t oh = 0, ow = 0;              // y (forward output)
  int64_t pad_h = 0, pad_w = 0, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1, group = 1;
  DType dtype = DType::kF32;
  bool backward_data = false;  // ConvTranspose: dy = the node's input, dx = its output
  std::string key() const;
  std::string family() const;  // the same layer at any batch and spatial size
};

// Fills the descriptors (NCHW; fp16 data with fp32 accumulation when dtype is f16; no TF32 in fp32).
Status make_conv_descriptors(const ConvProblem& p, ConvDescriptors* d);

// The algorithm for the problem: from the device's cache, else cuDNN's heuristics (no timing runs), the first
// candidate that is supported, deterministic and fits the workspace limit. Sets the chosen math type on d->conv.
// `handle` gives a cuDNN handle when cuDNN must be asked (heuristics, a workspace query): a problem answered from the
// device's cache asks for none.
Result<ConvAlgoChoice> choose_conv_algo(CudaDevice& dev, const std::function<Result<cudnnHandle_t>()>& handle,
                                        const ConvProblem& p, ConvDescriptors* d);

cudnnDataType_t cudnn_type(DType t);

}  // namespace steadyocr::cuda

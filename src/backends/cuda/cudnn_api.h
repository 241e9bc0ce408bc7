// cuDNN, loaded at run time: the plugin links no cuDNN, so it loads and serves (every convolution on its own
// kernels + cuBLAS) where cuDNN is missing, of another major, or built for another CUDA. The plugin is compiled
// against cudnn.h (the API's types); its functions are reached only through the table below, filled by dlsym from
// libcudnn.so.<CUDNN_MAJOR> the first time it is asked for.
#pragma once

#include <cudnn.h>

#include <string>

namespace steadyocr::cuda {

// Every cuDNN function the plugin calls. A new call site adds its function here (the build fails otherwise: the
// plugin does not link libcudnn).
// clang-format off
#define SO_CUDNN_FUNCTIONS(X) \
  X(cudnnGetVersion) \
  X(cudnnGetCudartVersion) \
  X(cudnnGetErrorString) \
  X(cudnnGetLastErrorString) \
  X(cudnnCreate) \
  X(cudnnDestroy) \
  X(cudnnSetStream) \
  X(cudnnCreateTensorDescriptor) \
  X(cudnnDestroyTensorDescriptor) \
  X(cudnnSetTensor4dDescriptor) \
  X(cudnnCreateFilterDescriptor) \
  X(cudnnDestroyFilterDescriptor) \
  X(cudnnSetFilter4dDescriptor) \
  X(cudnnCreateConvolutionDescriptor) \
  X(cudnnDestroyConvolutionDescriptor) \
  X(cudnnSetConvolution2dDescriptor) \
  X(cudnnSetConvolutionGroupCount) \
  X(cudnnSetConvolutionMathType) \
  X(cudnnGetConvolution2dForwardOutputDim) \
  X(cudnnGetConvolutionForwardAlgorithm_v7) \
  X(cudnnGetConvolutionForwardWorkspaceSize) \
  X(cudnnConvolutionForward) \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7) \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize) \
  X(cudnnConvolutionBackwardData)
// clang-format on

struct CudnnApi {
#define SO_CUDNN_FIELD(f) decltype(&::f) f = nullptr;
  SO_CUDNN_FUNCTIONS(SO_CUDNN_FIELD)
#undef SO_CUDNN_FIELD
};

// The outcome of loading cuDNN, decided once per process.
struct CudnnLoad {
  bool usable = false;
  std::string soname;   // "libcudnn.so.9"
  std::string path;     // the file that provides cudnnGetVersion (dladdr)
  size_t version = 0;   // cudnnGetVersion(), e.g. 91900
  size_t cudart = 0;    // cudnnGetCudartVersion(): the CUDA it was built for, e.g. 13000
  std::string finding;  // why it is not usable: L2_CUDNN_MISSING | L2_CUDNN_WRONG_MAJOR | L2_CUDNN_CUDA_MISMATCH
  std::string error;    // the dlopen/dlsym text or the version found, and what to do
};

// Loads libcudnn.so.<CUDNN_MAJOR> once (thread-safe) and checks it: every function of SO_CUDNN_FUNCTIONS present,
// the major the plugin was compiled against, and built for this plugin's CUDA major.
const CudnnLoad& cudnn_load();
// The table; only valid when cudnn_load().usable (callers check first: a backend with cuDNN is not created
// without it).
const CudnnApi& dnn();
// "9.19.0 (/path/libcudnn.so.9)" or "not loaded: <error>".
std::string cudnn_description();

}  // namespace steadyocr::cuda

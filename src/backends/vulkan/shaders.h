// The compute shaders, compiled to SPIR-V at build time by glslc (shaders/*.comp) and embedded in the plugin.
#pragma once

#include <cstddef>
#include <cstdint>

namespace steadyocr::vk {

enum class Shader : uint8_t {
  kUnary,
  kBinary,
  kCopy,
  kConv,
  kConvTranspose,
  kGemm,
  kGemmConv,
  kPool,
  kReduceRows,
  kReduce,
  kResize,
  kSoftmax,
  kLayerNorm,
  kCast,
  kSoftmaxRows,
  kCount
};

struct ShaderCode {
  const char* name;  // "conv", for messages and the profile
  const uint32_t* words;
  size_t bytes;
};

// The shader, compiled for fp32 tensors or (f16) for fp16 storage with fp32 arithmetic.
const ShaderCode& shader_code(Shader s, bool f16 = false);

}  // namespace steadyocr::vk

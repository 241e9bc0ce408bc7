#include "backends/vulkan/shaders.h"

#include <array>

namespace steadyocr::vk {
namespace {

// Each *.spv.inc is glslc's -mfmt=c output: a brace-enclosed list of SPIR-V words (CMakeLists.txt).
const uint32_t kUnary[] =
#include "unary.spv.inc"
    ;
const uint32_t kBinary[] =
#include "binary.spv.inc"
    ;
const uint32_t kCopy[] =
#include "copy.spv.inc"
    ;
const uint32_t kConv[] =
#include "conv.spv.inc"
    ;
const uint32_t kConvTranspose[] =
#include "conv_transpose.spv.inc"
    ;
const uint32_t kGemm[] =
#include "gemm.spv.inc"
    ;
const uint32_t kGemmConv[] =
#include "gemm_conv.spv.inc"
    ;
const uint32_t kPool[] =
#include "pool.spv.inc"
    ;
const uint32_t kReduceRows[] =
#include "reduce_rows.spv.inc"
    ;
const uint32_t kReduce[] =
#include "reduce.spv.inc"
    ;
const uint32_t kResize[] =
#include "resize.spv.inc"
    ;
const uint32_t kSoftmax[] =
#include "softmax.spv.inc"
    ;
const uint32_t kLayerNorm[] =
#include "layernorm.spv.inc"
    ;
const uint32_t kCast[] =
#include "cast.spv.inc"
    ;

#define SO_SHADER(name, words) \
  ShaderCode {                 \
    name, words, sizeof(words) \
  }
const std::array<ShaderCode, static_cast<size_t>(Shader::kCount)> kShaders = {
    SO_SHADER("unary", kUnary),
    SO_SHADER("binary", kBinary),
    SO_SHADER("copy", kCopy),
    SO_SHADER("conv", kConv),
    SO_SHADER("conv_transpose", kConvTranspose),
    SO_SHADER("gemm", kGemm),
    SO_SHADER("gemm_conv", kGemmConv),
    SO_SHADER("pool", kPool),
    SO_SHADER("reduce_rows", kReduceRows),
    SO_SHADER("reduce", kReduce),
    SO_SHADER("resize", kResize),
    SO_SHADER("softmax", kSoftmax),
    SO_SHADER("layernorm", kLayerNorm),
    SO_SHADER("cast", kCast),
};
#undef SO_SHADER

}  // namespace

const ShaderCode& shader_code(Shader s) {
  return kShaders[static_cast<size_t>(s)];
}

}  // namespace steadyocr::vk

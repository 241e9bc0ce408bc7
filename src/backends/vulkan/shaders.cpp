#include "backends/vulkan/shaders.h"

#include <array>

namespace steadyocr::vk {
namespace {

// Each *.spv.inc is glslc's -mfmt=c output: a brace-enclosed list of SPIR-V words (CMakeLists.txt); *_f16 the same
// shader compiled with -DF16 (fp16 storage, fp32 arithmetic). cast has no fp16 form (the fp16 backend casts integers
// only).

const uint32_t kUnary[] =
#include "unary.spv.inc"
    ;
const uint32_t kUnary16[] =
#include "unary_f16.spv.inc"
    ;
const uint32_t kBinary[] =
#include "binary.spv.inc"
    ;
const uint32_t kBinary16[] =
#include "binary_f16.spv.inc"
    ;
const uint32_t kCopy[] =
#include "copy.spv.inc"
    ;
const uint32_t kCopy16[] =
#include "copy_f16.spv.inc"
    ;
const uint32_t kConv[] =
#include "conv.spv.inc"
    ;
const uint32_t kConv16[] =
#include "conv_f16.spv.inc"
    ;
const uint32_t kConvTranspose[] =
#include "conv_transpose.spv.inc"
    ;
const uint32_t kConvTranspose16[] =
#include "conv_transpose_f16.spv.inc"
    ;
const uint32_t kGemm[] =
#include "gemm.spv.inc"
    ;
const uint32_t kGemm16[] =
#include "gemm_f16.spv.inc"
    ;
const uint32_t kGemmConv[] =
#include "gemm_conv.spv.inc"
    ;
const uint32_t kGemmConv16[] =
#include "gemm_conv_f16.spv.inc"
    ;
const uint32_t kPool[] =
#include "pool.spv.inc"
    ;
const uint32_t kPool16[] =
#include "pool_f16.spv.inc"
    ;
const uint32_t kReduceRows[] =
#include "reduce_rows.spv.inc"
    ;
const uint32_t kReduceRows16[] =
#include "reduce_rows_f16.spv.inc"
    ;
const uint32_t kReduce[] =
#include "reduce.spv.inc"
    ;
const uint32_t kReduce16[] =
#include "reduce_f16.spv.inc"
    ;
const uint32_t kResize[] =
#include "resize.spv.inc"
    ;
const uint32_t kResize16[] =
#include "resize_f16.spv.inc"
    ;
const uint32_t kSoftmax[] =
#include "softmax.spv.inc"
    ;
const uint32_t kSoftmax16[] =
#include "softmax_f16.spv.inc"
    ;
const uint32_t kLayerNorm[] =
#include "layernorm.spv.inc"
    ;
const uint32_t kLayerNorm16[] =
#include "layernorm_f16.spv.inc"
    ;
const uint32_t kSoftmaxRows[] =
#include "softmax_rows.spv.inc"
    ;
const uint32_t kSoftmaxRows16[] =
#include "softmax_rows_f16.spv.inc"
    ;
const uint32_t kCast[] =
#include "cast.spv.inc"
    ;

#define SO_SHADER(name, words) \
  ShaderCode {                 \
    name, words, sizeof(words) \
  }
const std::array<std::array<ShaderCode, 2>, static_cast<size_t>(Shader::kCount)> kShaders = {{
    {{SO_SHADER("unary", kUnary), SO_SHADER("unary_f16", kUnary16)}},
    {{SO_SHADER("binary", kBinary), SO_SHADER("binary_f16", kBinary16)}},
    {{SO_SHADER("copy", kCopy), SO_SHADER("copy_f16", kCopy16)}},
    {{SO_SHADER("conv", kConv), SO_SHADER("conv_f16", kConv16)}},
    {{SO_SHADER("conv_transpose", kConvTranspose), SO_SHADER("conv_transpose_f16", kConvTranspose16)}},
    {{SO_SHADER("gemm", kGemm), SO_SHADER("gemm_f16", kGemm16)}},
    {{SO_SHADER("gemm_conv", kGemmConv), SO_SHADER("gemm_conv_f16", kGemmConv16)}},
    {{SO_SHADER("pool", kPool), SO_SHADER("pool_f16", kPool16)}},
    {{SO_SHADER("reduce_rows", kReduceRows), SO_SHADER("reduce_rows_f16", kReduceRows16)}},
    {{SO_SHADER("reduce", kReduce), SO_SHADER("reduce_f16", kReduce16)}},
    {{SO_SHADER("resize", kResize), SO_SHADER("resize_f16", kResize16)}},
    {{SO_SHADER("softmax", kSoftmax), SO_SHADER("softmax_f16", kSoftmax16)}},
    {{SO_SHADER("layernorm", kLayerNorm), SO_SHADER("layernorm_f16", kLayerNorm16)}},
    {{SO_SHADER("cast", kCast), SO_SHADER("cast", kCast)}},
    {{SO_SHADER("softmax_rows", kSoftmaxRows), SO_SHADER("softmax_rows_f16", kSoftmaxRows16)}},
}};
#undef SO_SHADER

}  // namespace

const ShaderCode& shader_code(Shader s, bool f16) {
  return kShaders[static_cast<size_t>(s)][f16 ? 1 : 0];
}

}  // namespace steadyocr::vk

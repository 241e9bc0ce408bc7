// Shared by every shader of the Vulkan backend. One descriptor set layout for all: binding 0 is the dispatch's
// parameters (uint words; floats as their bits), bindings 1-5 the tensors it reads and writes (fp32, or uint words
// for the layout shaders). The host (backends/vulkan/ops.cpp) writes the parameters in the order each shader reads.
#extension GL_EXT_control_flow_attributes : enable

// The element type of float tensors: fp32, or with F16 (the vulkan-fp16 backend) fp16 storage with fp32 arithmetic:
// every load is float(...) and every store ACT(...), so only the buffers are 16-bit (StorageBuffer16BitAccess).
#ifdef F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require
#define ACT float16_t
#else
#define ACT float
#endif

layout(std430, set = 0, binding = 0) readonly buffer Params { uint p[]; };

uint pu(uint i) { return p[i]; }
int pi(uint i) { return int(p[i]); }
float pf(uint i) { return uintBitsToFloat(p[i]); }

// The flat index of this invocation for 1-D work of WG threads per workgroup; dispatches are 2-D (x at most 65535
// groups) so that large tensors fit the guaranteed limits.
uint flat_id(uint wg) {
  return (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * wg + gl_LocalInvocationID.x;
}
uint flat_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }

// Activation codes (graph::ActKind): 0 none, 1 relu, 2 sigmoid, 3 hard sigmoid, 4 hard swish, 5 clip.
float activate(float x, uint kind, float a, float b) {
  switch (kind) {
    case 1u: return max(x, 0.0);
    case 2u: return 1.0 / (1.0 + exp(-x));
    case 3u: return clamp(a * x + b, 0.0, 1.0);
    case 4u: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);
    case 5u: return clamp(x, a, b);
    default: return x;
  }
}

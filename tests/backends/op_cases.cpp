// The cross-backend op cases. Shapes are computed here from each op's formula so a case never depends on
// shape inference. Sizes are small and odd on purpose (7x13, 9x11) to hit edge handling in vectorised code.
#include "op_cases.h"

#include <fmt/format.h>

#include <limits>

#include "test_util.h"

// Cases below use designated initialisers that leave defaulted members out on purpose; GCC 12 still warns.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace steadyocr::testing {

using graph::Activation;
using graph::OpKind;
using graph::Value;

Value* CaseBuilder::input(const Shape& shape, float lo, float hi) {
  return input(random_tensor(shape, next_seed(), lo, hi));
}

Value* CaseBuilder::input(Tensor t) {
  Value* v = graph_.add_value(fmt::format("input{}", graph_.inputs().size()), t.dtype(), t.shape());
  graph_.inputs().push_back(v);
  inputs_.push_back(std::move(t));
  return v;
}

Value* CaseBuilder::weight(const Shape& shape, float lo, float hi) {
  return constant(random_tensor(shape, next_seed(), lo, hi));
}

Value* CaseBuilder::constant(Tensor t) {
  return graph_.add_constant(fmt::format("const{}", counter_++), std::move(t));
}

Value* CaseBuilder::node(OpKind op, graph::OpAttrs attrs, std::vector<Value*> inputs, const Shape& out, DType dtype) {
  const std::string name = fmt::format("{}_{}", graph::op_name(op), graph_.node_count());
  Value* y = graph_.add_value(name + "_out", dtype, out);
  graph_.add_node(op, name, std::move(inputs), {y}, std::move(attrs));
  return y;
}

CaseGraph CaseBuilder::finish(std::vector<Value*> outputs) {
  graph_.outputs() = std::move(outputs);
  graph_.set_name("op_case");
  CaseGraph c{std::move(graph_), std::move(inputs_)};
  graph_ = graph::Graph();
  inputs_.clear();
  return c;
}

namespace {

// A 1x1 convolution of `x` (NCHW) to `k` channels with bias and activation `act`: weights [k, C, 1, 1], then the
// bias [k], drawn from the builder in that order.
graph::Value* pointwise_conv(CaseBuilder& b, graph::Value* x, int64_t k, Activation act) {
  graph::ConvAttrs a;
  a.kernel = {1, 1};
  a.act = act;
  const Shape& in = x->shape;
  return b.node(OpKind::kConv, a, {x, b.weight({k, in[1], 1, 1}), b.weight({k})}, {in[0], k, in[2], in[3]});
}

int64_t conv_len(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t s, int64_t d) {
  return (in + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

struct ConvSpec {
  int64_t n = 1, c = 8, h = 7, w = 13, m = 8, kh = 3, kw = 3, group = 1;
  std::array<int64_t, 2> strides{1, 1}, dil{1, 1};
  std::array<int64_t, 4> pads{1, 1, 1, 1};
  bool bias = true, residual = false;
  Activation act;
};

OpCase conv_case(const std::string& name, ConvSpec s) {
  return {name, OpKind::kConv, [s] {
            CaseBuilder b(1);
            Value* x = b.input({s.n, s.c, s.h, s.w});
            Value* w = b.weight({s.m, s.c / s.group, s.kh, s.kw}, -0.5f, 0.5f);
            const int64_t oh = conv_len(s.h, s.pads[0], s.pads[2], s.kh, s.strides[0], s.dil[0]);
            const int64_t ow = conv_len(s.w, s.pads[1], s.pads[3], s.kw, s.strides[1], s.dil[1]);
            std::vector<Value*> ins = {x, w, s.bias ? b.weight({s.m}) : nullptr};
            if (s.residual) ins.push_back(b.input({s.n, s.m, oh, ow}));
            graph::ConvAttrs a;
            a.kernel = {s.kh, s.kw};
            a.strides = s.strides;
            a.dilations = s.dil;
            a.pads = s.pads;
            a.group = s.group;
            a.act = s.act;
            return b.finish({b.node(OpKind::kConv, a, ins, {s.n, s.m, oh, ow})});
          }};
}

struct DeconvSpec {
  int64_t n = 1, c = 8, h = 5, w = 7, m = 4, kh = 2, kw = 2, group = 1;
  std::array<int64_t, 2> strides{2, 2}, dil{1, 1}, out_pad{0, 0};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  bool bias = true;
  Activation act;
};

OpCase deconv_case(const std::string& name, DeconvSpec s) {
  return {
      name, OpKind::kConvTranspose, [s] {
        CaseBuilder b(2);
        Value* x = b.input({s.n, s.c, s.h, s.w});
        Value* w = b.weight({s.c, s.m / s.group, s.kh, s.kw}, -0.5f, 0.5f);
        const int64_t oh = (s.h - 1) * s.strides[0] - s.pads[0] - s.pads[2] + s.dil[0] * (s.kh - 1) + s.out_pad[0] + 1;
        const int64_t ow = (s.w - 1) * s.strides[1] - s.pads[1] - s.pads[3] + s.dil[1] * (s.kw - 1) + s.out_pad[1] + 1;
        graph::ConvTransposeAttrs a;
        a.kernel = {s.kh, s.kw};
        a.strides = s.strides;
        a.dilations = s.dil;
        a.pads = s.pads;
        a.output_padding = s.out_pad;
        a.group = s.group;
        a.act = s.act;
        return b.finish(
            {b.node(OpKind::kConvTranspose, a, {x, w, s.bias ? b.weight({s.m}) : nullptr}, {s.n, s.m, oh, ow})});
      }};
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i + a.size() >= out.size() ? a[i + a.size() - out.size()] : 1;
    const int64_t db = i + b.size() >= out.size() ? b[i + b.size() - out.size()] : 1;
    out[i] = std::max(da, db);
  }
  return out;
}

// A binary op with a graph input on the left and either a constant or a second input on the right.
OpCase binary_case(const std::string& name, OpKind op, Shape a, Shape c, bool c_is_input = false, float lo = -1.f,
                   float hi = 1.f) {
  return {name, op, [=] {
            CaseBuilder b(3);
            Value* x = b.input(a, lo, hi);
            // Divisors keep away from zero so NMSE measures arithmetic, not cancellation.
            const float clo = op == OpKind::kDiv ? 0.5f : -1.f, chi = op == OpKind::kDiv ? 2.f : 1.f;
            Value* y = c_is_input ? b.input(c, clo, chi) : b.weight(c, clo, chi);
            return b.finish({b.node(op, {}, {x, y}, broadcast_shape(a, c))});
          }};
}

OpCase act_case(const std::string& name, OpKind op, Activation act) {
  return {name, op, [=] {
            CaseBuilder b(4);
            Value* x = b.input({2, 5, 7, 9}, -8.f, 8.f);
            return b.finish({b.node(op, graph::ActAttrs{act}, {x}, {2, 5, 7, 9})});
          }};
}

int64_t pool_len(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t s, bool ceil_mode) {
  const int64_t span = in + p0 + p1 - k;
  int64_t o = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (o - 1) * s >= in + p0) --o;
  return o;
}

OpCase pool_case(const std::string& name, OpKind op, graph::PoolAttrs a, Shape x_shape = {2, 3, 9, 11}) {
  return {name, op, [=] {
            CaseBuilder b(5);
            Value* x = b.input(x_shape);
            Shape out = {x_shape[0], x_shape[1],
                         pool_len(x_shape[2], a.pads[0], a.pads[2], a.kernel[0], a.strides[0], a.ceil_mode),
                         pool_len(x_shape[3], a.pads[1], a.pads[3], a.kernel[1], a.strides[1], a.ceil_mode)};
            return b.finish({b.node(op, a, {x}, out)});
          }};
}

graph::PoolAttrs pool(std::array<int64_t, 2> k, std::array<int64_t, 2> s, std::array<int64_t, 4> p = {0, 0, 0, 0},
                      bool ceil_mode = false, bool include_pad = false) {
  graph::PoolAttrs a;
  a.kernel = k;
  a.strides = s;
  a.pads = p;
  a.ceil_mode = ceil_mode;
  a.count_include_pad = include_pad;
  return a;
}

OpCase resize_case(const std::string& name, graph::ResizeMode mode, graph::ResizeCoord coord,
                   graph::ResizeNearest nearest, Shape in, Shape out, bool use_scales) {
  return {name, OpKind::kResize, [=] {
            CaseBuilder b(6);
            Value* x = b.input(in);
            graph::ResizeAttrs a;
            a.mode = mode;
            a.coord = coord;
            a.nearest = nearest;
            if (use_scales) {
              for (size_t d = 0; d < in.size(); ++d) a.scales.push_back(static_cast<float>(out[d]) / in[d]);
            } else {
              a.sizes = out;
            }
            return b.finish({b.node(OpKind::kResize, a, {x}, out)});
          }};
}

// A unary data-movement op on a graph input: shape in -> shape out.
OpCase move_case(const std::string& name, OpKind op, graph::OpAttrs attrs, Shape in, Shape out) {
  return {name, op, [=] {
            CaseBuilder b(7);
            Value* x = b.input(in);
            return b.finish({b.node(op, attrs, {x}, out)});
          }};
}

OpCase matmul_case(const std::string& name, Shape a, Shape c, Shape out, bool c_is_input) {
  return {name, OpKind::kMatMul, [=] {
            CaseBuilder b(8);
            Value* x = b.input(a);
            Value* y = c_is_input ? b.input(c) : b.weight(c);
            return b.finish({b.node(OpKind::kMatMul, {}, {x, y}, out)});
          }};
}

graph::SliceAttrs slice(std::vector<int64_t> starts, std::vector<int64_t> ends, std::vector<int64_t> axes,
                        std::vector<int64_t> steps) {
  graph::SliceAttrs a;
  a.starts = std::move(starts);
  a.ends = std::move(ends);
  a.axes = std::move(axes);
  a.steps = std::move(steps);
  return a;
}

std::vector<OpCase> make_cases() {
  using graph::ResizeCoord;
  using graph::ResizeMode;
  using graph::ResizeNearest;
  std::vector<OpCase> v;
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

  // Conv: every geometry the three models use plus the edges around them, and every fused epilogue.
  v.push_back(conv_case("Conv_k3_s1_pad1111_7x13", {}));
  v.push_back(conv_case("Conv_k3_s2_pad1111_first_layer_relu",
                        {.c = 3, .h = 24, .w = 40, .m = 16, .strides = {2, 2}, .act = Activation::relu()}));
  v.push_back(
      conv_case("Conv_k3_s2_g32_dw_pad1111_hardswish",
                {.c = 32, .h = 11, .w = 15, .m = 32, .group = 32, .strides = {2, 2}, .act = Activation::hard_swish()}));
  v.push_back(conv_case(
      "Conv_k5_s21_g16_dw_pad2222",
      {.c = 16, .h = 12, .w = 9, .m = 16, .kh = 5, .kw = 5, .group = 16, .strides = {2, 1}, .pads = {2, 2, 2, 2}}));
  v.push_back(conv_case("Conv_k3_s12_g8_dw_pad1111", {.group = 8, .strides = {1, 2}}));
  // Depthwise planes wider and taller than one tile of the CUDA backends' tiled kernel (32 columns, up to 16 rows),
  // with the edges of the last tiles inside the picture, strides and asymmetric pads.
  v.push_back(conv_case("Conv_k5_g6_dw_tiles_37x83_hardswish", {.n = 2,
                                                                .c = 6,
                                                                .h = 37,
                                                                .w = 83,
                                                                .m = 6,
                                                                .kh = 5,
                                                                .kw = 5,
                                                                .group = 6,
                                                                .pads = {2, 2, 2, 2},
                                                                .act = Activation::hard_swish()}));
  v.push_back(
      conv_case("Conv_k3_s2_g5_dw_tiles_41x70", {.c = 5, .h = 41, .w = 70, .m = 5, .group = 5, .strides = {2, 2}}));
  v.push_back(conv_case("Conv_k3_s21_g4_dw_tiles_pad0120",
                        {.c = 4, .h = 19, .w = 45, .m = 4, .group = 4, .strides = {2, 1}, .pads = {0, 1, 2, 0}}));
  v.push_back(conv_case("Conv_k3_s1_pad1012_asym", {.pads = {1, 0, 1, 2}}));
  v.push_back(
      conv_case("Conv_k3_s2_pad0120_asym_stride2", {.h = 10, .w = 11, .strides = {2, 2}, .pads = {0, 1, 2, 0}}));
  v.push_back(conv_case("Conv_k3_d2_pad2222_dilation", {.h = 9, .w = 11, .dil = {2, 2}, .pads = {2, 2, 2, 2}}));
  v.push_back(conv_case("Conv_k3_d21_pad2121_dilation", {.dil = {2, 1}, .pads = {2, 1, 2, 1}}));
  v.push_back(
      conv_case("Conv_k1_batch2_sigmoid",
                {.n = 2, .c = 24, .m = 40, .kh = 1, .kw = 1, .pads = {0, 0, 0, 0}, .act = Activation::sigmoid()}));
  v.push_back(conv_case("Conv_k1_g2_hardsigmoid", {.c = 12,
                                                   .m = 6,
                                                   .kh = 1,
                                                   .kw = 1,
                                                   .group = 2,
                                                   .pads = {0, 0, 0, 0},
                                                   .act = Activation::hard_sigmoid(0.2f, 0.5f)}));
  v.push_back(conv_case("Conv_k1_s2_nopad",
                        {.c = 6, .h = 9, .w = 9, .m = 5, .kh = 1, .kw = 1, .strides = {2, 2}, .pads = {0, 0, 0, 0}}));
  v.push_back(conv_case("Conv_k13_pad0101_rec_neck",
                        {.c = 16, .h = 1, .w = 20, .m = 12, .kh = 1, .kw = 3, .pads = {0, 1, 0, 1}, .bias = false}));
  v.push_back(conv_case("Conv_k3_g4_grouped_clip06", {.c = 8, .m = 12, .group = 4, .act = Activation::clip(0, 6)}));
  v.push_back(conv_case("Conv_k3_nobias_batch3", {.n = 3, .c = 4, .m = 5, .bias = false}));
  v.push_back(
      conv_case("Conv_k1_residual", {.c = 16, .m = 16, .kh = 1, .kw = 1, .pads = {0, 0, 0, 0}, .residual = true}));
  v.push_back(conv_case("Conv_k3_residual_relu", {.residual = true, .act = Activation::relu()}));
  v.push_back(
      conv_case("Conv_k3_dw_residual_hardswish", {.group = 8, .residual = true, .act = Activation::hard_swish()}));
  // A depthwise convolution whose epilogue takes the elementwise nodes after it (GPU backends evaluate such a chain
  // in the convolution's own kernel): a scalar multiply, a per-channel add given as [1,C,1,1] and one as [C,1,1].
  v.push_back(
      {"Conv_k5_dw_hardswish_then_scalar_and_channel_ops", OpKind::kConv, [] {
         CaseBuilder b(10);
         const int64_t n = 2, c = 24, h = 12, w = 21;
         Value* x = b.input({n, c, h, w});
         graph::ConvAttrs a;
         a.kernel = {5, 5};
         a.pads = {2, 2, 2, 2};
         a.group = c;
         a.act = Activation::hard_swish();
         Value* y = b.node(OpKind::kConv, a, {x, b.weight({c, 1, 5, 5}, -0.5f, 0.5f), b.weight({c})}, {n, c, h, w});
         y = b.node(OpKind::kMul, {}, {y, b.weight({1}, 1.5f, 2.f)}, {n, c, h, w});
         y = b.node(OpKind::kAdd, {}, {y, b.weight({1, c, 1, 1})}, {n, c, h, w});
         y = b.node(OpKind::kMul, {}, {y, b.weight({c, 1, 1}, 0.5f, 2.f)}, {n, c, h, w});
         return b.finish({y});
       }});
  v.push_back(conv_case("Conv_k7_large_kernel_pad3333",
                        {.c = 3, .h = 17, .w = 19, .m = 4, .kh = 7, .kw = 7, .pads = {3, 3, 3, 3}}));
  v.push_back(conv_case("Conv_k3_big_k_c96_m72", {.c = 96, .h = 6, .w = 10, .m = 72}));

  // ConvTranspose.
  v.push_back(deconv_case("ConvTranspose_k2_s2_det_head", {}));
  v.push_back(deconv_case("ConvTranspose_k2_s2_relu_nobias", {.bias = false, .act = Activation::relu()}));
  v.push_back(
      deconv_case("ConvTranspose_k3_s2_pad1111_outpad11", {.kh = 3, .kw = 3, .out_pad = {1, 1}, .pads = {1, 1, 1, 1}}));
  v.push_back(deconv_case("ConvTranspose_k3_s2_pad1111_no_outpad", {.kh = 3, .kw = 3, .pads = {1, 1, 1, 1}}));
  v.push_back(deconv_case("ConvTranspose_k3_s2_g2_sigmoid",
                          {.c = 6, .m = 4, .kh = 3, .kw = 3, .group = 2, .act = Activation::sigmoid()}));
  v.push_back(deconv_case("ConvTranspose_k3_s1_d2_pad1021",
                          {.n = 2, .kh = 3, .kw = 3, .strides = {1, 1}, .dil = {2, 2}, .pads = {1, 0, 2, 1}}));
  v.push_back(deconv_case("ConvTranspose_k3_s3_batch2_sigmoid",
                          {.n = 2, .c = 6, .m = 5, .kh = 3, .kw = 3, .strides = {3, 3}, .act = Activation::sigmoid()}));
  v.push_back(deconv_case("ConvTranspose_k4_s21_dw",
                          {.c = 4, .m = 4, .kh = 4, .kw = 4, .group = 4, .strides = {2, 1}, .out_pad = {1, 0}}));

  // BatchNorm (the det head's running variance reaches ~1e8).
  for (float var_hi : {2.f, 1e8f}) {
    v.push_back({var_hi > 10 ? "BatchNorm_large_variance" : "BatchNorm_4d", OpKind::kBatchNorm, [var_hi] {
                   CaseBuilder b(9);
                   Value* x = b.input({2, 6, 5, 7}, -3.f, 3.f);
                   return b.finish({b.node(
                       OpKind::kBatchNorm, graph::BatchNormAttrs{1e-5f},
                       {x, b.weight({6}), b.weight({6}), b.weight({6}), b.weight({6}, 0.1f, var_hi)}, {2, 6, 5, 7})});
                 }});
  }

  // Elementwise binary ops with NumPy broadcasting.
  v.push_back(binary_case("Add_same_shape", OpKind::kAdd, {2, 3, 7, 13}, {2, 3, 7, 13}, true));
  v.push_back(binary_case("Add_bcast_C11", OpKind::kAdd, {2, 6, 7, 9}, {6, 1, 1}));
  v.push_back(binary_case("Add_bcast_N11W_both_ways", OpKind::kAdd, {2, 1, 1, 9}, {1, 4, 5, 1}, true));
  v.push_back(binary_case("Sub_bcast_scalar", OpKind::kSub, {2, 3, 5, 7}, {}));
  v.push_back(binary_case("Sub_bcast_lastdim", OpKind::kSub, {2, 20, 120}, {2, 20, 1}, true));
  v.push_back(binary_case("Mul_bcast_1", OpKind::kMul, {2, 3, 5, 7}, {1}));
  v.push_back(binary_case("Mul_bcast_NC11_se", OpKind::kMul, {2, 16, 9, 11}, {2, 16, 1, 1}, true));
  v.push_back(binary_case("Div_bcast_N11W", OpKind::kDiv, {2, 3, 4, 9}, {2, 1, 1, 9}, true));
  v.push_back(binary_case("Div_bcast_scalar", OpKind::kDiv, {2, 3, 4, 9}, {}));
  v.push_back({"Pow_exponent2_layernorm_pattern", OpKind::kPow, [] {
                 CaseBuilder b(23);
                 Value* x = b.input({2, 20, 64}, -3.f, 3.f);
                 return b.finish({b.node(OpKind::kPow, {}, {x, b.constant(Tensor::scalar_f32(2.f))}, {2, 20, 64})});
               }});
  v.push_back({"Pow_fractional_positive_base", OpKind::kPow, [] {
                 CaseBuilder b(10);
                 Value* x = b.input({3, 17}, 0.1f, 4.f);
                 Value* e = b.input({17}, -2.f, 2.f);
                 return b.finish({b.node(OpKind::kPow, {}, {x, e}, {3, 17})});
               }});
  v.push_back(
      {"Add_i64_shape_arithmetic", OpKind::kAdd, [] {
         CaseBuilder b(11);
         Value* x = b.input(Tensor::from_int64s({4}, {2, 3, 48, 160}));
         Value* y = b.constant(Tensor::from_int64s({1}, {-1}));
         Value* s = b.node(OpKind::kAdd, {}, {x, y}, {4}, DType::kI64);
         Value* m = b.node(OpKind::kMul, {}, {s, b.constant(Tensor::from_int64s({4}, {1, 2, 3, 4}))}, {4}, DType::kI64);
         Value* d = b.node(OpKind::kDiv, {}, {m, b.constant(Tensor::from_int64s({}, {2}))}, {4}, DType::kI64);
         return b.finish({b.node(OpKind::kSub, {}, {d, x}, {4}, DType::kI64)});
       }});

  // Unary.
  v.push_back({"Sqrt_positive", OpKind::kSqrt, [] {
                 CaseBuilder b(12);
                 Value* x = b.input({2, 20, 1}, 1e-3f, 5.f);
                 return b.finish({b.node(OpKind::kSqrt, {}, {x}, {2, 20, 1})});
               }});
  v.push_back(act_case("Relu", OpKind::kRelu, Activation::relu()));
  v.push_back(act_case("Sigmoid", OpKind::kSigmoid, Activation::sigmoid()));
  v.push_back(act_case("HardSigmoid_a02_b05", OpKind::kHardSigmoid, Activation::hard_sigmoid(0.2f, 0.5f)));
  v.push_back(act_case("HardSigmoid_a1of6_b05", OpKind::kHardSigmoid, Activation::hard_sigmoid(1.f / 6, 0.5f)));
  v.push_back(act_case("HardSwish", OpKind::kHardSwish, Activation::hard_swish()));
  v.push_back(act_case("Clip_0_6", OpKind::kClip, Activation::clip(0, 6)));
  v.push_back(act_case("Clip_m1_1", OpKind::kClip, Activation::clip(-1, 1)));

  // Pools.
  v.push_back(move_case("GlobalAveragePool", OpKind::kGlobalAveragePool, {}, {2, 16, 9, 11}, {2, 16, 1, 1}));
  v.push_back(
      pool_case("AveragePool_k3_s2_pad1111_excl_pad", OpKind::kAveragePool, pool({3, 3}, {2, 2}, {1, 1, 1, 1})));
  v.push_back(pool_case("AveragePool_k3_s2_pad1111_incl_pad", OpKind::kAveragePool,
                        pool({3, 3}, {2, 2}, {1, 1, 1, 1}, false, true)));
  v.push_back(pool_case("AveragePool_k32_s32_rec", OpKind::kAveragePool, pool({3, 2}, {3, 2}), {2, 8, 3, 40}));
  v.push_back(pool_case("AveragePool_k2_s2_ceil", OpKind::kAveragePool, pool({2, 2}, {2, 2}, {0, 0, 0, 0}, true)));
  v.push_back(pool_case("AveragePool_k3_s2_pad1010_ceil_incl_pad", OpKind::kAveragePool,
                        pool({3, 3}, {2, 2}, {1, 0, 1, 0}, true, true)));
  v.push_back(pool_case("MaxPool_k2_s2_cls", OpKind::kMaxPool, pool({2, 2}, {2, 2}), {2, 8, 4, 24}));
  v.push_back(pool_case("MaxPool_k3_s2_pad1111", OpKind::kMaxPool, pool({3, 3}, {2, 2}, {1, 1, 1, 1})));
  v.push_back(pool_case("MaxPool_k3_s2_pad0101_ceil", OpKind::kMaxPool, pool({3, 3}, {2, 2}, {0, 1, 0, 1}, true)));

  // Resize: every coordinate mode for nearest and linear, every nearest rounding, up and down.
  const std::pair<ResizeCoord, const char*> coords[] = {{ResizeCoord::kHalfPixel, "half_pixel"},
                                                        {ResizeCoord::kAsymmetric, "asymmetric"},
                                                        {ResizeCoord::kAlignCorners, "align_corners"},
                                                        {ResizeCoord::kPytorchHalfPixel, "pytorch_half_pixel"}};
  const std::pair<ResizeNearest, const char*> roundings[] = {{ResizeNearest::kRoundPreferFloor, "round_prefer_floor"},
                                                             {ResizeNearest::kRoundPreferCeil, "round_prefer_ceil"},
                                                             {ResizeNearest::kFloor, "floor"},
                                                             {ResizeNearest::kCeil, "ceil"}};
  for (auto [coord, cname] : coords) {
    v.push_back(resize_case(fmt::format("Resize_nearest_{}_floor_x2", cname), ResizeMode::kNearest, coord,
                            ResizeNearest::kFloor, {1, 3, 5, 7}, {1, 3, 10, 14}, true));
    v.push_back(resize_case(fmt::format("Resize_linear_{}_x2", cname), ResizeMode::kLinear, coord,
                            ResizeNearest::kFloor, {2, 3, 5, 7}, {2, 3, 10, 14}, true));
    v.push_back(resize_case(fmt::format("Resize_linear_{}_sizes_down_7x13_to_4x5", cname), ResizeMode::kLinear, coord,
                            ResizeNearest::kFloor, {1, 2, 7, 13}, {1, 2, 4, 5}, false));
  }
  for (auto [rounding, rname] : roundings) {
    v.push_back(resize_case(fmt::format("Resize_nearest_half_pixel_{}_sizes_5x7_to_8x11", rname), ResizeMode::kNearest,
                            ResizeCoord::kHalfPixel, rounding, {1, 2, 5, 7}, {1, 2, 8, 11}, false));
  }
  v.push_back(resize_case("Resize_nearest_asymmetric_floor_x4_det", ResizeMode::kNearest, ResizeCoord::kAsymmetric,
                          ResizeNearest::kFloor, {1, 4, 3, 5}, {1, 4, 12, 20}, true));

  // Data movement and shape ops.
  v.push_back({"Concat_axis1_three_inputs", OpKind::kConcat, [] {
                 CaseBuilder b(13);
                 Value* x = b.input({2, 3, 5, 7});
                 Value* y = b.input({2, 1, 5, 7});
                 Value* z = b.weight({2, 4, 5, 7});
                 return b.finish({b.node(OpKind::kConcat, graph::AxisAttrs{1}, {x, y, z}, {2, 8, 5, 7})});
               }});
  v.push_back({"Concat_axis_neg1", OpKind::kConcat, [] {
                 CaseBuilder b(14);
                 Value* x = b.input({3, 5});
                 Value* y = b.input({3, 2});
                 return b.finish({b.node(OpKind::kConcat, graph::AxisAttrs{-1}, {x, y}, {3, 7})});
               }});
  v.push_back(
      move_case("Reshape_flatten", OpKind::kReshape, graph::ReshapeAttrs{{0, -1}, false}, {2, 8, 1, 20}, {2, 160}));
  v.push_back(move_case("Squeeze_axis2", OpKind::kSqueeze, graph::AxesAttrs{{2}}, {2, 8, 1, 20}, {2, 8, 20}));
  v.push_back(move_case("Unsqueeze_axis0", OpKind::kUnsqueeze, graph::AxesAttrs{{0}}, {3, 5}, {1, 3, 5}));
  v.push_back(move_case("Identity", OpKind::kIdentity, {}, {2, 3, 4}, {2, 3, 4}));
  v.push_back(
      move_case("Transpose_0231", OpKind::kTranspose, graph::TransposeAttrs{{0, 2, 3, 1}}, {2, 3, 5, 7}, {2, 5, 7, 3}));
  v.push_back(move_case("Transpose_reverse", OpKind::kTranspose, graph::TransposeAttrs{}, {2, 3, 5}, {5, 3, 2}));
  v.push_back(move_case("Transpose_20314_rec_attention", OpKind::kTranspose, graph::TransposeAttrs{{2, 0, 3, 1, 4}},
                        {2, 20, 3, 8, 15}, {3, 2, 8, 20, 15}));
  v.push_back(move_case("Slice_negative_starts_stepped", OpKind::kSlice, slice({-4, 1}, {kMax, 100}, {1, -1}, {1, 3}),
                        {2, 9, 11}, {2, 4, 4}));
  v.push_back(move_case("Slice_negative_step", OpKind::kSlice,
                        slice({-1}, {std::numeric_limits<int64_t>::min()}, {2}, {-2}), {2, 3, 9}, {2, 3, 5}));
  v.push_back(
      move_case("Slice_axis0_rec_qkv", OpKind::kSlice, slice({1}, {2}, {0}, {}), {3, 2, 8, 20, 15}, {1, 2, 8, 20, 15}));
  v.push_back({"Slice_i64_shape", OpKind::kSlice, [] {
                 CaseBuilder b(15);
                 Value* s = b.input(Tensor::from_int64s({4}, {2, 3, 48, 160}));
                 return b.finish({b.node(OpKind::kSlice, slice({-2}, {kMax}, {0}, {}), {s}, {2}, DType::kI64)});
               }});
  v.push_back({"Shape_of_4d", OpKind::kShape, [] {
                 CaseBuilder b(16);
                 Value* x = b.input({2, 3, 5, 7});
                 return b.finish({b.node(OpKind::kShape, {}, {x}, {4}, DType::kI64)});
               }});
  v.push_back({"Cast_f32_to_i64_and_back", OpKind::kCast, [] {
                 CaseBuilder b(17);
                 Value* x = b.input({3, 11}, -50.f, 50.f);
                 Value* i = b.node(OpKind::kCast, graph::CastAttrs{DType::kI64}, {x}, {3, 11}, DType::kI64);
                 return b.finish({i, b.node(OpKind::kCast, graph::CastAttrs{DType::kF32}, {i}, {3, 11})});
               }});
  v.push_back({"Cast_f32_to_i32_u8_bool", OpKind::kCast, [] {
                 CaseBuilder b(18);
                 Value* x = b.input(Tensor::from_floats({6}, {-2.5f, -0.f, 0.f, 0.7f, 3.9f, 200.f}));
                 return b.finish({b.node(OpKind::kCast, graph::CastAttrs{DType::kI32}, {x}, {6}, DType::kI32),
                                  b.node(OpKind::kCast, graph::CastAttrs{DType::kU8}, {x}, {6}, DType::kU8),
                                  b.node(OpKind::kCast, graph::CastAttrs{DType::kBool}, {x}, {6}, DType::kBool)});
               }});

  // MatMul.
  v.push_back(matmul_case("MatMul_2d_weight", {7, 24}, {24, 13}, {7, 13}, false));
  v.push_back(matmul_case("MatMul_3d_x_2d_classifier", {2, 20, 120}, {120, 97}, {2, 20, 97}, false));
  v.push_back(matmul_case("MatMul_batched_4d_attention", {2, 8, 20, 15}, {2, 8, 15, 20}, {2, 8, 20, 20}, true));
  v.push_back(matmul_case("MatMul_batch_broadcast", {2, 1, 5, 6}, {3, 6, 4}, {2, 3, 5, 4}, true));
  v.push_back(matmul_case("MatMul_vector_rhs", {3, 5, 6}, {6}, {3, 5}, true));
  v.push_back(matmul_case("MatMul_vector_lhs", {6}, {2, 6, 4}, {2, 4}, true));

  // Softmax, ReduceMean, LayerNorm.
  v.push_back(
      move_case("Softmax_last_axis", OpKind::kSoftmax, graph::SoftmaxAttrs{-1, false}, {2, 20, 97}, {2, 20, 97}));
  // Rows as long as the recogniser's class axis (6625): backends may reduce a row with a whole workgroup.
  v.push_back(
      move_case("Softmax_long_rows", OpKind::kSoftmax, graph::SoftmaxAttrs{-1, false}, {3, 4, 700}, {3, 4, 700}));
  v.push_back(move_case("Softmax_axis1_flatten_opset11", OpKind::kSoftmax, graph::SoftmaxAttrs{1, true}, {2, 3, 4, 5},
                        {2, 3, 4, 5}));
  v.push_back(move_case("Softmax_axis1_per_axis_opset13", OpKind::kSoftmax, graph::SoftmaxAttrs{1, false}, {2, 3, 4, 5},
                        {2, 3, 4, 5}));
  v.push_back(move_case("ReduceMean_last_keepdims1", OpKind::kReduceMean, graph::ReduceAttrs{{-1}, true}, {2, 20, 120},
                        {2, 20, 1}));
  v.push_back(move_case("ReduceMean_axes12_keepdims0", OpKind::kReduceMean, graph::ReduceAttrs{{1, 2}, false},
                        {2, 3, 5, 7}, {2, 7}));
  v.push_back(
      move_case("ReduceMean_all_keepdims1", OpKind::kReduceMean, graph::ReduceAttrs{{}, true}, {3, 4, 5}, {1, 1, 1}));
  // Top1 (steadyocr's own op): over the recogniser's 6625 classes, and rows full of ties (the first index wins).
  v.push_back(move_case("Top1_rec_classes", OpKind::kTop1, {}, {2, 20, 6625}, {2, 20, 2}));
  v.push_back({"Top1_ties_take_the_first", OpKind::kTop1, [] {
                 CaseBuilder b(23);
                 Tensor t = Tensor::empty(DType::kF32, {4, 3, 301});
                 for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>((i * 7 + i / 301) % 5);
                 Value* x = b.input(std::move(t));
                 return b.finish({b.node(OpKind::kTop1, {}, {x}, {4, 3, 2})});
               }});
  // ImageLut (steadyocr's own op): every byte value through the detector's table, two pictures of odd sides.
  v.push_back({"ImageLut_det_table_every_byte", OpKind::kImageLut, [] {
                 CaseBuilder b(24);
                 Tensor t = Tensor::empty(DType::kU8, {2, 37, 23, 3});
                 for (int64_t i = 0; i < t.numel(); ++i)
                   t.data<uint8_t>()[i] = static_cast<uint8_t>((i * 97 + i / 7) & 255);
                 Value* x = b.input(std::move(t));
                 Value* lut = b.weight({3, 256}, -2.5f, 2.5f);
                 return b.finish({b.node(OpKind::kImageLut, {}, {x, lut}, {2, 3, 37, 23})});
               }});
  // Masked (a fourth byte per pixel, 0: the pixel's values are 0): the recogniser's right padding, and zero bytes
  // elsewhere in the picture are values like any other.
  v.push_back({"ImageLut_masked_rec_padding", OpKind::kImageLut, [] {
                 CaseBuilder b(25);
                 Tensor t = Tensor::empty(DType::kU8, {3, 5, 41, 4});
                 uint8_t* p = t.data<uint8_t>();
                 for (int64_t i = 0; i < t.numel() / 4; ++i) {
                   const int64_t w = i % 41, n = i / (5 * 41);
                   const bool pad = w >= 13 + 11 * n;
                   for (int c = 0; c < 3; ++c) p[4 * i + c] = pad ? 0 : static_cast<uint8_t>((i * 31 + c * 89) & 255);
                   p[4 * i + 3] = pad ? 0 : 255;
                 }
                 Value* x = b.input(std::move(t));
                 Value* lut = b.weight({3, 256}, 0.5f, 2.5f);  // no byte gives 0: only the mask does
                 return b.finish({b.node(OpKind::kImageLut, {}, {x, lut}, {3, 3, 5, 41})});
               }});
  v.push_back({"LayerNorm_last_axis_bias", OpKind::kLayerNorm, [] {
                 CaseBuilder b(19);
                 Value* x = b.input({2, 20, 120}, -3.f, 3.f);
                 return b.finish({b.node(OpKind::kLayerNorm, graph::LayerNormAttrs{-1, 1e-6f},
                                         {x, b.weight({120}), b.weight({120})}, {2, 20, 120})});
               }});
  v.push_back({"LayerNorm_axis1_no_bias", OpKind::kLayerNorm, [] {
                 CaseBuilder b(20);
                 Value* x = b.input({2, 3, 4, 5});
                 return b.finish({b.node(OpKind::kLayerNorm, graph::LayerNormAttrs{1, 1e-5f}, {x, b.weight({4, 5})},
                                         {2, 3, 4, 5})});
               }});

  // Small fused patterns as the passes leave them.
  v.push_back({"Pattern_squeeze_excite", OpKind::kGlobalAveragePool, [] {
                 CaseBuilder b(21);
                 Value* x = b.input({2, 16, 9, 11});
                 Value* p = b.node(OpKind::kGlobalAveragePool, {}, {x}, {2, 16, 1, 1});
                 graph::ConvAttrs r;
                 r.kernel = {1, 1};
                 r.act = Activation::relu();
                 Value* h = b.node(OpKind::kConv, r, {p, b.weight({4, 16, 1, 1}), b.weight({4})}, {2, 4, 1, 1});
                 graph::ConvAttrs s = r;
                 s.act = Activation::hard_sigmoid(0.2f, 0.5f);
                 Value* g = b.node(OpKind::kConv, s, {h, b.weight({16, 4, 1, 1}), b.weight({16})}, {2, 16, 1, 1});
                 return b.finish({b.node(OpKind::kMul, {}, {x, g}, {2, 16, 9, 11})});
               }});
  v.push_back({"Pattern_conv_bn_hardswish_residual", OpKind::kConv, [] {
                 CaseBuilder b(22);
                 Value* x = b.input({1, 8, 7, 13});
                 graph::ConvAttrs a;
                 a.kernel = {3, 3};
                 a.pads = {1, 1, 1, 1};
                 a.group = 8;
                 Value* c = b.node(OpKind::kConv, a, {x, b.weight({8, 1, 3, 3})}, {1, 8, 7, 13});
                 Value* n =
                     b.node(OpKind::kBatchNorm, graph::BatchNormAttrs{1e-5f},
                            {c, b.weight({8}), b.weight({8}), b.weight({8}), b.weight({8}, 0.5f, 2.f)}, {1, 8, 7, 13});
                 Value* h = b.node(OpKind::kHardSwish, graph::ActAttrs{Activation::hard_swish()}, {n}, {1, 8, 7, 13});
                 return b.finish({b.node(OpKind::kAdd, {}, {h, x}, {1, 8, 7, 13})});
               }});
  // Swish as the recogniser's exporter writes it, x * sigmoid(x * 1), after a convolution; then a residual add whose
  // first operand is read elsewhere too (the chains a backend may fuse end in an operand it reads twice).
  v.push_back({"Pattern_conv_swish_exported_residual", OpKind::kConv, [] {
                 CaseBuilder b(23);
                 const Shape s{2, 12, 5, 9};
                 Value* x = b.input({2, 6, 5, 9});
                 graph::ConvAttrs a;
                 a.kernel = {3, 3};
                 a.pads = {1, 1, 1, 1};
                 Value* c = b.node(OpKind::kConv, a, {x, b.weight({12, 6, 3, 3}), b.weight({12})}, s);
                 Value* one = b.node(OpKind::kMul, {}, {c, b.constant(Tensor::from_floats({}, {1.f}))}, s);
                 Value* sg = b.node(OpKind::kSigmoid, graph::ActAttrs{Activation::sigmoid()}, {one}, s);
                 Value* sw = b.node(OpKind::kMul, {}, {c, sg}, s);
                 Value* scaled = b.node(OpKind::kMul, {}, {sw, b.constant(Tensor::from_floats({}, {0.5f}))}, s);
                 Value* sum = b.node(OpKind::kAdd, {}, {c, scaled}, s);
                 return b.finish({sum});
               }});
  // Pointwise convolutions with per-channel epilogues over the edges of a GEMM's tiles: channels across two tiles of
  // 64 with a remainder, input channels not a multiple of the 32 a step takes, pixels not a multiple of 8 (so no
  // 16-byte loads), then few output channels over pixels in 16-byte words.
  v.push_back(
      {"Pattern_pointwise_tile_edges_lab", OpKind::kConv, [] {
         CaseBuilder b(24);
         Value* c = pointwise_conv(b, b.input({3, 40, 7, 11}), 70, Activation::hard_swish());
         Value* m = b.node(OpKind::kMul, {}, {c, b.constant(Tensor::from_floats({}, {0.75f}))}, c->shape);
         return b.finish({b.node(OpKind::kAdd, {}, {m, b.constant(Tensor::from_floats({}, {-0.25f}))}, c->shape)});
       }});
  v.push_back({"Pattern_pointwise_few_channels_wide", OpKind::kConv, [] {
                 CaseBuilder b(25);
                 return b.finish({pointwise_conv(b, b.input({2, 48, 8, 20}), 24, Activation::relu())});
               }});
  // Rows of 16-byte words over two steps of input channels, the second partial (72 = 64 + 8), two tiles of output
  // channels and of pixels, both partial.
  v.push_back({"Pattern_pointwise_words_two_steps", OpKind::kConv, [] {
                 CaseBuilder b(26);
                 Value* c = pointwise_conv(b, b.input({2, 72, 8, 12}), 70, Activation::hard_sigmoid(0.2f, 0.5f));
                 return b.finish({b.node(OpKind::kMul, {}, {c, b.constant(Tensor::from_floats({}, {2.f}))}, c->shape)});
               }});
  // Wide sums (over 128 input channels) on rows that are not 16-byte words: 78 pixels per image go as 4-byte words,
  // 68 as 8-byte ones (the recogniser's widths give such rows), each with partial tiles and a partial last step.
  v.push_back({"Pattern_pointwise_pairs_wide", OpKind::kConv, [] {
                 CaseBuilder b(27);
                 return b.finish({pointwise_conv(b, b.input({2, 144, 6, 13}), 40, Activation::hard_swish())});
               }});
  v.push_back({"Pattern_pointwise_quads_wide", OpKind::kConv, [] {
                 CaseBuilder b(28);
                 return b.finish({pointwise_conv(b, b.input({3, 136, 4, 17}), 20, Activation::relu())});
               }});
  return v;
}

}  // namespace

const std::vector<OpCase>& all_op_cases() {
  static const std::vector<OpCase> cases = make_cases();
  return cases;
}

}  // namespace steadyocr::testing

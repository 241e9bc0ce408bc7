// The reference Conv and ConvTranspose checked against hand-computed values and against naive loops
// written independently of the kernels (gather form, explicit bounds checks, no im2col).
#include <gtest/gtest.h>

#include <cmath>

#include "ref_test_util.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

using graph::Activation;
using graph::OpKind;

struct ConvCase {
  int64_t n, c, h, w, m, kh, kw, group;
  std::array<int64_t, 2> stride{1, 1}, dil{1, 1};
  std::array<int64_t, 4> pads{0, 0, 0, 0};
  bool bias = true, residual = false;
  Activation act;
};

int64_t conv_out(int64_t len, int64_t p0, int64_t p1, int64_t k, int64_t s, int64_t d) {
  return (len + p0 + p1 - d * (k - 1) - 1) / s + 1;
}

// y[n][m][oy][ox] = act(b[m] + res + sum_{c in group, i, j} x[n][c][oy*s - pt + i*d][ox*s - pl + j*d] *
// w[m][c'][i][j]).
Tensor naive_conv(const ConvCase& k, const Tensor& x, const Tensor& w, const Tensor& b, const Tensor& res) {
  const int64_t oh = conv_out(k.h, k.pads[0], k.pads[2], k.kh, k.stride[0], k.dil[0]);
  const int64_t ow = conv_out(k.w, k.pads[1], k.pads[3], k.kw, k.stride[1], k.dil[1]);
  Tensor y = Tensor::zeros(DType::kF32, {k.n, k.m, oh, ow});
  const int64_t cg = k.c / k.group, mg = k.m / k.group;
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t m = 0; m < k.m; ++m)
      for (int64_t oy = 0; oy < oh; ++oy)
        for (int64_t ox = 0; ox < ow; ++ox) {
          long double s = k.bias ? b.data<float>()[m] : 0.f;
          const int64_t g = m / mg;
          for (int64_t cc = 0; cc < cg; ++cc)
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                const int64_t iy = oy * k.stride[0] - k.pads[0] + i * k.dil[0];
                const int64_t ix = ox * k.stride[1] - k.pads[1] + j * k.dil[1];
                if (iy < 0 || ix < 0 || iy >= k.h || ix >= k.w) continue;
                const int64_t c = g * cg + cc;
                s += static_cast<long double>(x.data<float>()[((n * k.c + c) * k.h + iy) * k.w + ix]) *
                     w.data<float>()[((m * cg + cc) * k.kh + i) * k.kw + j];
              }
          const int64_t o = ((n * k.m + m) * oh + oy) * ow + ox;
          if (k.residual) s += res.data<float>()[o];
          y.data<float>()[o] = k.act.apply(static_cast<float>(s));
        }
  return y;
}

TEST(ReferenceConv, HandComputed3x3On4x4) {
  // x = 1..16 in a 4x4 plane, w = all ones except centre 2, pad 1: each output is the 3x3 neighbourhood
  // sum plus the centre once more.
  std::vector<float> xv(16);
  for (int i = 0; i < 16; ++i) xv[i] = static_cast<float>(i + 1);
  Tensor x = Tensor::from_floats({1, 1, 4, 4}, xv);
  Tensor w = Tensor::from_floats({1, 1, 3, 3}, {1, 1, 1, 1, 2, 1, 1, 1, 1});
  graph::ConvAttrs a;
  a.kernel = {3, 3};
  a.pads = {1, 1, 1, 1};
  Tensor y = reference_op(OpKind::kConv, a, {x, w, Tensor::from_floats({1}, {0.5f})}, {DType::kF32, {1, 1, 4, 4}});
  // Corner (0,0): 1+2+5+6 + 1 = 15; (1,1): sum 1..3,5..7,9..11 = 54 + 6 = 60; (3,3): 11+12+15+16 + 16 = 70.
  EXPECT_FLOAT_EQ(y.data<float>()[0], 15.5f);
  EXPECT_FLOAT_EQ(y.data<float>()[5], 60.5f);
  EXPECT_FLOAT_EQ(y.data<float>()[15], 70.5f);
  // Edge (0,1): 1+2+3+5+6+7 + 2 = 26.
  EXPECT_FLOAT_EQ(y.data<float>()[1], 26.5f);
  // Stride 2, no pad: one output per 3x3 window starting at (0,0): 54 + 6.
  graph::ConvAttrs s2 = a;
  s2.pads = {0, 0, 0, 0};
  s2.strides = {2, 2};
  Tensor z = reference_op(OpKind::kConv, s2, {x, w}, {DType::kF32, {1, 1, 1, 1}});
  EXPECT_FLOAT_EQ(z.data<float>()[0], 60.f);
}

TEST(ReferenceConv, HandComputedGroupsAndRelu) {
  // Two groups of one channel each with 1x1 kernels: channel-wise scale, then ReLU.
  Tensor x = Tensor::from_floats({1, 2, 1, 2}, {1, -2, 3, 4});
  Tensor w = Tensor::from_floats({2, 1, 1, 1}, {2, -1});
  graph::ConvAttrs a;
  a.kernel = {1, 1};
  a.group = 2;
  a.act = Activation::relu();
  Tensor y = reference_op(OpKind::kConv, a, {x, w}, {DType::kF32, {1, 2, 1, 2}});
  EXPECT_EQ(floats(y), (std::vector<float>{2, 0, 0, 0}));
}

class ReferenceConvVsNaive : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ReferenceConvVsNaive, Matches) {
  const ConvCase& k = GetParam();
  Tensor x = random_tensor({k.n, k.c, k.h, k.w}, 11);
  Tensor w = random_tensor({k.m, k.c / k.group, k.kh, k.kw}, 12);
  Tensor b = random_tensor({k.m}, 13);
  const int64_t oh = conv_out(k.h, k.pads[0], k.pads[2], k.kh, k.stride[0], k.dil[0]);
  const int64_t ow = conv_out(k.w, k.pads[1], k.pads[3], k.kw, k.stride[1], k.dil[1]);
  Tensor res = random_tensor({k.n, k.m, oh, ow}, 14);
  graph::ConvAttrs a;
  a.kernel = {k.kh, k.kw};
  a.strides = k.stride;
  a.dilations = k.dil;
  a.pads = k.pads;
  a.group = k.group;
  a.act = k.act;
  std::vector<Tensor> ins = {x, w, k.bias ? b : Tensor()};
  if (k.residual) ins.push_back(res);
  Tensor y = reference_op(OpKind::kConv, a, ins, {DType::kF32, {k.n, k.m, oh, ow}});
  Tensor e = naive_conv(k, x, w, b, res);
  Comparison c = compare(y, e);
  EXPECT_LT(c.nmse, 1e-12) << c.describe();
  EXPECT_LT(c.max_abs_diff, 1e-5) << c.describe();
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ReferenceConvVsNaive,
    ::testing::Values(
        ConvCase{1, 3, 7, 13, 8, 3, 3, 1, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false, Activation{}},
        ConvCase{2, 6, 9, 9, 4, 3, 3, 2, {2, 2}, {1, 1}, {1, 0, 1, 2}, true, false, Activation{}},
        ConvCase{1, 8, 11, 10, 8, 5, 5, 8, {2, 1}, {1, 1}, {2, 2, 2, 2}, true, false, Activation::hard_swish()},
        ConvCase{1, 4, 12, 12, 6, 3, 3, 1, {1, 1}, {2, 3}, {2, 3, 2, 3}, false, true, Activation::sigmoid()},
        ConvCase{2, 16, 5, 7, 24, 1, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true, Activation::clip(0.f, 0.5f)},
        ConvCase{1, 5, 6, 17, 7, 1, 3, 1, {1, 1}, {1, 1}, {0, 1, 0, 1}, true, false, Activation{}},
        ConvCase{1,
                 3,
                 300,
                 7,
                 5,
                 3,
                 3,
                 1,
                 {1, 2},
                 {1, 1},
                 {0, 1, 2, 0},
                 true,
                 false,
                 Activation::hard_sigmoid(0.2f, 0.5f)}));

// ConvTranspose as a gather: y[oy][ox] sums x[iy][ix] * w[c][m][i][j] over every (iy, i) with
// iy*s - pt + i*d == oy (and the same for columns).
TEST(ReferenceConvTranspose, MatchesGatherForm) {
  struct Case {
    int64_t n, c, h, w, m, kh, kw, group, s0, s1, d0, d1, pt, pl, pb, pr, op0, op1;
  };
  for (const Case& k : {Case{1, 4, 5, 6, 6, 2, 2, 1, 2, 2, 1, 1, 0, 0, 0, 0, 0, 0},
                        Case{2, 4, 3, 4, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1},
                        Case{1, 3, 4, 3, 2, 3, 2, 1, 2, 1, 2, 1, 0, 1, 2, 0, 1, 0}}) {
    const int64_t oh = (k.h - 1) * k.s0 - k.pt - k.pb + k.d0 * (k.kh - 1) + k.op0 + 1;
    const int64_t ow = (k.w - 1) * k.s1 - k.pl - k.pr + k.d1 * (k.kw - 1) + k.op1 + 1;
    const int64_t mg = k.m / k.group, cg = k.c / k.group;
    Tensor x = random_tensor({k.n, k.c, k.h, k.w}, 21);
    Tensor w = random_tensor({k.c, mg, k.kh, k.kw}, 22);
    Tensor b = random_tensor({k.m}, 23);
    graph::ConvTransposeAttrs a;
    a.kernel = {k.kh, k.kw};
    a.strides = {k.s0, k.s1};
    a.dilations = {k.d0, k.d1};
    a.pads = {k.pt, k.pl, k.pb, k.pr};
    a.output_padding = {k.op0, k.op1};
    a.group = k.group;
    a.act = Activation::relu();
    Tensor y = reference_op(OpKind::kConvTranspose, a, {x, w, b}, {DType::kF32, {k.n, k.m, oh, ow}});
    Tensor e = Tensor::zeros(DType::kF32, {k.n, k.m, oh, ow});
    for (int64_t n = 0; n < k.n; ++n)
      for (int64_t m = 0; m < k.m; ++m)
        for (int64_t oy = 0; oy < oh; ++oy)
          for (int64_t ox = 0; ox < ow; ++ox) {
            double s = b.data<float>()[m];
            const int64_t g = m / mg, mm = m % mg;
            for (int64_t cc = 0; cc < cg; ++cc)
              for (int64_t i = 0; i < k.kh; ++i)
                for (int64_t j = 0; j < k.kw; ++j) {
                  const int64_t ty = oy + k.pt - i * k.d0, tx = ox + k.pl - j * k.d1;
                  if (ty % k.s0 || tx % k.s1) continue;
                  const int64_t iy = ty / k.s0, ix = tx / k.s1;
                  if (ty < 0 || tx < 0 || iy >= k.h || ix >= k.w) continue;
                  const int64_t c = g * cg + cc;
                  s += static_cast<double>(x.data<float>()[((n * k.c + c) * k.h + iy) * k.w + ix]) *
                       w.data<float>()[((c * mg + mm) * k.kh + i) * k.kw + j];
                }
            e.data<float>()[((n * k.m + m) * oh + oy) * ow + ox] = std::max(static_cast<float>(s), 0.f);
          }
    Comparison c = compare(y, e);
    EXPECT_LT(c.nmse, 1e-12) << c.describe();
  }
}

TEST(ReferenceConvTranspose, HandComputedStride2) {
  // Each input pixel stamps the 2x2 kernel scaled by itself into its own 2x2 output block.
  Tensor x = Tensor::from_floats({1, 1, 1, 2}, {1, 10});
  Tensor w = Tensor::from_floats({1, 1, 2, 2}, {1, 2, 3, 4});
  graph::ConvTransposeAttrs a;
  a.kernel = {2, 2};
  a.strides = {2, 2};
  Tensor y = reference_op(OpKind::kConvTranspose, a, {x, w}, {DType::kF32, {1, 1, 2, 4}});
  EXPECT_EQ(floats(y), (std::vector<float>{1, 2, 10, 20, 3, 4, 30, 40}));
}

TEST(ReferenceConv, WrongOutputShapeIsAnError) {
  graph::ConvAttrs a;
  a.kernel = {3, 3};
  std::vector<Tensor> out;
  Status s = run_reference_op(OpKind::kConv, a, {random_tensor({1, 2, 5, 5}, 1), random_tensor({4, 2, 3, 3}, 2)},
                              {{DType::kF32, {1, 4, 5, 5}}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("[1,4,3,3]"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace steadyocr::testing

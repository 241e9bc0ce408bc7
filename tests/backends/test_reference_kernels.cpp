// Hand-computed checks of the reference kernels that do arithmetic besides Conv: BatchNorm, activations,
// pools, Resize, Softmax, MatMul, ReduceMean, LayerNorm. These test the oracle itself.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ref_test_util.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

using graph::Activation;
using graph::OpKind;

Tensor plane(int64_t h, int64_t w, float start = 1.f) {
  std::vector<float> v(static_cast<size_t>(h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = start + static_cast<float>(i);
  return Tensor::from_floats({1, 1, h, w}, v);
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-6f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(ReferenceKernels, BatchNormPerChannel) {
  Tensor x = Tensor::from_floats({1, 2, 1, 2}, {1, 2, 3, 4});
  Tensor scale = Tensor::from_floats({2}, {2, 1}), bias = Tensor::from_floats({2}, {0.5f, -1});
  Tensor mean = Tensor::from_floats({2}, {1, 3}), var = Tensor::from_floats({2}, {4, 0.25f});
  Tensor y = reference_op(OpKind::kBatchNorm, graph::BatchNormAttrs{0.f}, {x, scale, bias, mean, var},
                          {DType::kF32, {1, 2, 1, 2}});
  // Channel 0: (x-1)/2*2+0.5; channel 1: (x-3)/0.5*1-1.
  expect_near_all(floats(y), {0.5f, 1.5f, -1.f, 1.f});
}

TEST(ReferenceKernels, Activations) {
  Tensor x = Tensor::from_floats({6}, {-4, -3, -0.5f, 0, 1, 4});
  expect_near_all(floats(reference_op(OpKind::kRelu, graph::ActAttrs{Activation::relu()}, {x}, {DType::kF32, {6}})),
                  {0, 0, 0, 0, 1, 4});
  expect_near_all(
      floats(reference_op(OpKind::kHardSwish, graph::ActAttrs{Activation::hard_swish()}, {x}, {DType::kF32, {6}})),
      {0, 0, -0.5f * 2.5f / 6, 0, 1 * 4.f / 6, 4});
  expect_near_all(floats(reference_op(OpKind::kHardSigmoid, graph::ActAttrs{Activation::hard_sigmoid(0.2f, 0.5f)}, {x},
                                      {DType::kF32, {6}})),
                  {0, 0, 0.4f, 0.5f, 0.7f, 1});
  expect_near_all(
      floats(reference_op(OpKind::kSigmoid, graph::ActAttrs{Activation::sigmoid()}, {x}, {DType::kF32, {6}})),
      {0.01798621f, 0.04742587f, 0.37754067f, 0.5f, 0.73105858f, 0.98201379f});
  expect_near_all(
      floats(reference_op(OpKind::kClip, graph::ActAttrs{Activation::clip(-1, 2)}, {x}, {DType::kF32, {6}})),
      {-1, -1, -0.5f, 0, 1, 2});
  // Opset-11 Clip: bounds as inputs override the attributes; an omitted bound is unbounded.
  expect_near_all(floats(reference_op(OpKind::kClip, graph::ActAttrs{Activation::clip(-1, 2)},
                                      {x, Tensor::scalar_f32(0.f), Tensor()}, {DType::kF32, {6}})),
                  {0, 0, 0, 0, 1, 2});
  expect_near_all(
      floats(reference_op(OpKind::kSqrt, {}, {Tensor::from_floats({3}, {0, 2.25f, 16})}, {DType::kF32, {3}})),
      {0, 1.5f, 4});
}

TEST(ReferenceKernels, GlobalAveragePool) {
  Tensor x = Tensor::from_floats({1, 2, 2, 2}, {1, 2, 3, 4, -1, -1, -1, 5});
  expect_near_all(floats(reference_op(OpKind::kGlobalAveragePool, {}, {x}, {DType::kF32, {1, 2, 1, 1}})), {2.5f, 0.5f});
}

TEST(ReferenceKernels, AveragePoolCountIncludePad) {
  // 3x3 plane 1..9, kernel 2x2, stride 1, pads 1 on every side -> 4x4 output.
  graph::PoolAttrs a;
  a.kernel = {2, 2};
  a.pads = {1, 1, 1, 1};
  Tensor x = plane(3, 3);
  Tensor ex = reference_op(OpKind::kAveragePool, a, {x}, {DType::kF32, {1, 1, 4, 4}});
  // Corner sees only x[0][0]=1; top edge (0,1) sees 1,2; centre (1,1) sees 1,2,4,5.
  EXPECT_FLOAT_EQ(ex.data<float>()[0], 1.f);
  EXPECT_FLOAT_EQ(ex.data<float>()[1], 1.5f);
  EXPECT_FLOAT_EQ(ex.data<float>()[5], 3.f);
  a.count_include_pad = true;
  Tensor in = reference_op(OpKind::kAveragePool, a, {x}, {DType::kF32, {1, 1, 4, 4}});
  EXPECT_FLOAT_EQ(in.data<float>()[0], 0.25f);
  EXPECT_FLOAT_EQ(in.data<float>()[1], 0.75f);
  EXPECT_FLOAT_EQ(in.data<float>()[5], 3.f);
}

TEST(ReferenceKernels, AveragePoolCeilMode) {
  // 5 columns, kernel 2 stride 2: floor gives 2 windows, ceil 3; the last window holds only column 4.
  graph::PoolAttrs a;
  a.kernel = {1, 2};
  a.strides = {1, 2};
  a.ceil_mode = true;
  Tensor x = plane(1, 5);
  expect_near_all(floats(reference_op(OpKind::kAveragePool, a, {x}, {DType::kF32, {1, 1, 1, 3}})), {1.5f, 3.5f, 5.f});
  // count_include_pad never counts the part of a ceil window beyond the (unpadded) input.
  a.count_include_pad = true;
  expect_near_all(floats(reference_op(OpKind::kAveragePool, a, {x}, {DType::kF32, {1, 1, 1, 3}})), {1.5f, 3.5f, 5.f});
  // The rec model's 3x2/3x2 average pool without pads.
  graph::PoolAttrs r;
  r.kernel = {3, 2};
  r.strides = {3, 2};
  Tensor y = reference_op(OpKind::kAveragePool, r, {plane(3, 4)}, {DType::kF32, {1, 1, 1, 2}});
  expect_near_all(floats(y), {(1 + 2 + 5 + 6 + 9 + 10) / 6.f, (3 + 4 + 7 + 8 + 11 + 12) / 6.f});
}

TEST(ReferenceKernels, MaxPoolPadsAreMinusInfinity) {
  Tensor x = Tensor::from_floats({1, 1, 2, 2}, {-5, -6, -7, -8});
  graph::PoolAttrs a;
  a.kernel = {2, 2};
  a.strides = {2, 2};
  a.pads = {1, 1, 1, 1};
  // Every window holds one real (negative) value and three pads: pads must not win as 0.
  expect_near_all(floats(reference_op(OpKind::kMaxPool, a, {x}, {DType::kF32, {1, 1, 2, 2}})), {-5, -6, -7, -8});
  graph::PoolAttrs b;
  b.kernel = {2, 2};
  b.strides = {2, 2};
  expect_near_all(floats(reference_op(OpKind::kMaxPool, b, {plane(2, 4)}, {DType::kF32, {1, 1, 1, 2}})), {6, 8});
}

TEST(ReferenceKernels, ResizeNearestAsymmetricFloor) {
  graph::ResizeAttrs a;
  a.mode = graph::ResizeMode::kNearest;
  a.coord = graph::ResizeCoord::kAsymmetric;
  a.nearest = graph::ResizeNearest::kFloor;
  a.scales = {1, 1, 2, 2};
  Tensor y = reference_op(OpKind::kResize, a, {plane(2, 2)}, {DType::kF32, {1, 1, 4, 4}});
  expect_near_all(floats(y), {1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4});
  // Downscale by 3 columns -> 1: asymmetric floor takes column 0.
  a.scales = {1, 1, 1, 1.f / 3};
  expect_near_all(floats(reference_op(OpKind::kResize, a, {plane(1, 3)}, {DType::kF32, {1, 1, 1, 1}})), {1});
}

TEST(ReferenceKernels, ResizeNearestRoundingModes) {
  // 1 x 4 -> 1 x 6 with sizes (scale 1.5). half_pixel coordinates: (i+0.5)/1.5-0.5 = -1/6, 0.5, 7/6, 11/6, 2.5, 19/6.
  graph::ResizeAttrs a;
  a.mode = graph::ResizeMode::kNearest;
  a.coord = graph::ResizeCoord::kHalfPixel;
  a.sizes = {1, 1, 1, 6};
  Tensor x = plane(1, 4);
  a.nearest = graph::ResizeNearest::kRoundPreferFloor;
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 6}})), {1, 1, 2, 3, 3, 4});
  a.nearest = graph::ResizeNearest::kRoundPreferCeil;
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 6}})), {1, 2, 2, 3, 4, 4});
  a.nearest = graph::ResizeNearest::kFloor;
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 6}})), {1, 1, 2, 2, 3, 4});
  a.nearest = graph::ResizeNearest::kCeil;
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 6}})), {1, 2, 3, 3, 4, 4});
}

TEST(ReferenceKernels, ResizeLinearCoordinateModes) {
  Tensor x = Tensor::from_floats({1, 1, 1, 2}, {1, 2});
  graph::ResizeAttrs a;
  a.mode = graph::ResizeMode::kLinear;
  a.scales = {1, 1, 1, 2};
  a.coord = graph::ResizeCoord::kHalfPixel;  // -0.25 (clamped), 0.25, 0.75, 1.25 (clamped)
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 4}})), {1, 1.25f, 1.75f, 2});
  a.coord = graph::ResizeCoord::kPytorchHalfPixel;
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 4}})), {1, 1.25f, 1.75f, 2});
  a.coord = graph::ResizeCoord::kAlignCorners;  // 0, 1/3, 2/3, 1
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 4}})), {1, 4.f / 3, 5.f / 3, 2});
  a.coord = graph::ResizeCoord::kAsymmetric;  // 0, 0.5, 1, 1.5 (clamped)
  expect_near_all(floats(reference_op(OpKind::kResize, a, {x}, {DType::kF32, {1, 1, 1, 4}})), {1, 1.5f, 2, 2});
  // Bilinear in 2-D: 2x2 -> 3x3 align_corners puts the mean at the centre.
  a.coord = graph::ResizeCoord::kAlignCorners;
  a.scales = {};
  a.sizes = {1, 1, 3, 3};
  Tensor y = reference_op(OpKind::kResize, a, {plane(2, 2)}, {DType::kF32, {1, 1, 3, 3}});
  expect_near_all(floats(y), {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4});
  // pytorch_half_pixel with an output length of 1 samples coordinate 0.
  a.coord = graph::ResizeCoord::kPytorchHalfPixel;
  a.sizes = {1, 1, 1, 1};
  expect_near_all(floats(reference_op(OpKind::kResize, a, {plane(2, 2)}, {DType::kF32, {1, 1, 1, 1}})), {1});
}

TEST(ReferenceKernels, SoftmaxKnownValuesAndBothSemantics) {
  Tensor x = Tensor::from_floats({1, 3}, {1, 2, 3});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{-1, true}, {x}, {DType::kF32, {1, 3}})),
                  {0.09003057f, 0.24472847f, 0.66524096f});
  // Large inputs stay finite (max subtracted).
  Tensor big = Tensor::from_floats({2}, {1000, 1000});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{0, false}, {big}, {DType::kF32, {2}})),
                  {0.5f, 0.5f});
  // [2,2]: axis 0 per-axis softmax normalises columns; the opset<13 form flattens everything into one row.
  Tensor m = Tensor::from_floats({2, 2}, {0, 0, std::log(3.f), 0});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{0, false}, {m}, {DType::kF32, {2, 2}})),
                  {0.25f, 0.5f, 0.75f, 0.5f});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{0, true}, {m}, {DType::kF32, {2, 2}})),
                  {1.f / 6, 1.f / 6, 0.5f, 1.f / 6});
  // axis 1 of [1,2,2]: flatten -> one softmax over 4 values; per-axis -> over the middle axis per column.
  Tensor t = m.reshaped({1, 2, 2});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{1, true}, {t}, {DType::kF32, {1, 2, 2}})),
                  {1.f / 6, 1.f / 6, 0.5f, 1.f / 6});
  expect_near_all(floats(reference_op(OpKind::kSoftmax, graph::SoftmaxAttrs{-2, false}, {t}, {DType::kF32, {1, 2, 2}})),
                  {0.25f, 0.5f, 0.75f, 0.5f});
}

TEST(ReferenceKernels, MatMulShapes) {
  Tensor a = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_floats({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_near_all(floats(reference_op(OpKind::kMatMul, {}, {a, b}, {DType::kF32, {2, 2}})), {58, 64, 139, 154});
  Tensor v = Tensor::from_floats({3}, {1, 0, -1});
  expect_near_all(floats(reference_op(OpKind::kMatMul, {}, {a, v}, {DType::kF32, {2}})), {-2, -2});
  expect_near_all(floats(reference_op(OpKind::kMatMul, {}, {v, b}, {DType::kF32, {2}})), {-4, -4});
  // Batch broadcast: [2,1,2,3] x [3,3,2] -> [2,3,2,2]; check one block by hand against the 2-D result.
  Tensor a4 = random_tensor({2, 1, 2, 3}, 5), b3 = random_tensor({3, 3, 2}, 6);
  Tensor y = reference_op(OpKind::kMatMul, {}, {a4, b3}, {DType::kF32, {2, 3, 2, 2}});
  for (int n = 0; n < 2; ++n)
    for (int bb = 0; bb < 3; ++bb)
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
          double s = 0;
          for (int k = 0; k < 3; ++k)
            s += static_cast<double>(a4.data<float>()[(n * 2 + i) * 3 + k]) * b3.data<float>()[(bb * 3 + k) * 2 + j];
          EXPECT_NEAR(y.data<float>()[((n * 3 + bb) * 2 + i) * 2 + j], s, 1e-6);
        }
}

TEST(ReferenceKernels, ReduceMeanKeepdims) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 4, 5, 9});
  Tensor k = reference_op(OpKind::kReduceMean, graph::ReduceAttrs{{-1}, true}, {x}, {DType::kF32, {2, 1}});
  expect_near_all(floats(k), {2, 6});
  Tensor d = reference_op(OpKind::kReduceMean, graph::ReduceAttrs{{0}, false}, {x}, {DType::kF32, {3}});
  expect_near_all(floats(d), {2.5f, 3.5f, 6});
  Tensor all = reference_op(OpKind::kReduceMean, graph::ReduceAttrs{{}, false}, {x}, {DType::kF32, {}});
  expect_near_all(floats(all), {4});
  Tensor mid = reference_op(OpKind::kReduceMean, graph::ReduceAttrs{{1}, true}, {random_tensor({2, 3, 4}, 3)},
                            {DType::kF32, {2, 1, 4}});
  EXPECT_EQ(mid.shape(), (Shape{2, 1, 4}));
}

TEST(ReferenceKernels, LayerNormTrailingAxes) {
  Tensor x = Tensor::from_floats({2, 3}, {1, 2, 3, 10, 12, 14});
  Tensor scale = Tensor::from_floats({3}, {1, 2, 3}), bias = Tensor::from_floats({3}, {0, 0, 1});
  Tensor y = reference_op(OpKind::kLayerNorm, graph::LayerNormAttrs{-1, 0.f}, {x, scale, bias}, {DType::kF32, {2, 3}});
  const float r = 1.f / std::sqrt(2.f / 3.f);
  expect_near_all(floats(y), {-r, 0, 3 * r + 1, -r, 0, 3 * r + 1}, 1e-5f);
  // axis 1 of [1,2,2]: normalise over 4 values with a [2,2] scale; no bias.
  Tensor z = reference_op(OpKind::kLayerNorm, graph::LayerNormAttrs{1, 0.f},
                          {Tensor::from_floats({1, 2, 2}, {1, 3, 1, 3}), Tensor::from_floats({2, 2}, {1, 1, 2, 2})},
                          {DType::kF32, {1, 2, 2}});
  expect_near_all(floats(z), {-1, 1, -2, 2}, 1e-5f);
}

}  // namespace
}  // namespace steadyocr::testing

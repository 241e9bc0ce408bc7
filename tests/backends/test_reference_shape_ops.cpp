// Hand-computed checks of the reference kernels that move data without arithmetic (Shape, Cast, Slice,
// Concat, Reshape family, Transpose) plus the broadcasting binary ops: the oracle's own tests.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ref_test_util.h"
#include "test_util.h"

namespace steadyocr::testing {
namespace {

using graph::OpKind;

Tensor iota(Shape shape, float start = 0.f) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = start + static_cast<float>(i);
  return t;
}

TEST(ReferenceShapeOps, ShapeGivesI64Dims) {
  Tensor y = reference_op(OpKind::kShape, {}, {Tensor::zeros(DType::kF32, {2, 3, 5})}, {DType::kI64, {3}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(y.dtype(), DType::kI64);
}

TEST(ReferenceShapeOps, CastBothWays) {
  Tensor f = Tensor::from_floats({5}, {-2.7f, -0.5f, 0.f, 1.9f, 300.f});
  EXPECT_EQ(ints(reference_op(OpKind::kCast, graph::CastAttrs{DType::kI64}, {f}, {DType::kI64, {5}})),
            (std::vector<int64_t>{-2, 0, 0, 1, 300}));
  EXPECT_EQ(ints(reference_op(OpKind::kCast, graph::CastAttrs{DType::kI32}, {f}, {DType::kI32, {5}})),
            (std::vector<int64_t>{-2, 0, 0, 1, 300}));
  EXPECT_EQ(ints(reference_op(OpKind::kCast, graph::CastAttrs{DType::kBool}, {f}, {DType::kBool, {5}})),
            (std::vector<int64_t>{1, 1, 0, 1, 1}));
  EXPECT_EQ(ints(reference_op(OpKind::kCast, graph::CastAttrs{DType::kU8}, {f}, {DType::kU8, {5}})),
            (std::vector<int64_t>{0, 0, 0, 1, 255}));
  Tensor i = Tensor::from_int64s({3}, {-7, 0, int64_t{1} << 40});
  EXPECT_EQ(floats(reference_op(OpKind::kCast, graph::CastAttrs{DType::kF32}, {i}, {DType::kF32, {3}})),
            (std::vector<float>{-7.f, 0.f, 1099511627776.f}));
  Tensor i32 = reference_op(OpKind::kCast, graph::CastAttrs{DType::kI32}, {i}, {DType::kI32, {3}});
  EXPECT_EQ(i32.data<int32_t>()[0], -7);
  EXPECT_EQ(i32.data<int32_t>()[2], std::numeric_limits<int32_t>::max());
  Tensor back = reference_op(OpKind::kCast, graph::CastAttrs{DType::kI64}, {i32}, {DType::kI64, {3}});
  EXPECT_EQ(ints(back)[0], -7);
}

TEST(ReferenceShapeOps, SliceNegativeClampedStepped) {
  Tensor x = iota({3, 10});
  graph::SliceAttrs a;
  a.starts = {-1, 1};
  a.ends = {std::numeric_limits<int64_t>::max(), 100};
  a.axes = {0, -1};
  a.steps = {1, 3};
  // Row 2, columns 1,4,7.
  EXPECT_EQ(floats(reference_op(OpKind::kSlice, a, {x}, {DType::kF32, {1, 3}})), (std::vector<float>{21, 24, 27}));
  graph::SliceAttrs r;
  r.starts = {100};
  r.ends = {std::numeric_limits<int64_t>::min()};
  r.axes = {1};
  r.steps = {-4};
  // Columns 9,5,1 of every row, walking backwards from the clamped start.
  EXPECT_EQ(floats(reference_op(OpKind::kSlice, r, {x}, {DType::kF32, {3, 3}})),
            (std::vector<float>{9, 5, 1, 19, 15, 11, 29, 25, 21}));
  graph::SliceAttrs e;
  e.starts = {5};
  e.ends = {2};
  e.axes = {1};
  Tensor empty = reference_op(OpKind::kSlice, e, {x}, {DType::kF32, {3, 0}});
  EXPECT_EQ(empty.numel(), 0);
}

TEST(ReferenceShapeOps, SliceI64FromInputs) {
  // The exported rec model slices Shape outputs; before folding the bounds are inputs, not attributes.
  Tensor shape = Tensor::from_int64s({4}, {2, 3, 48, 160});
  Tensor y = reference_op(OpKind::kSlice, graph::SliceAttrs{},
                          {shape, Tensor::from_int64s({1}, {-2}), Tensor::from_int64s({1}, {4})}, {DType::kI64, {2}});
  EXPECT_EQ(ints(y), (std::vector<int64_t>{48, 160}));
}

TEST(ReferenceShapeOps, SliceRejectsWrongOutputShape) {
  graph::SliceAttrs a;
  a.starts = {0};
  a.ends = {2};
  std::vector<Tensor> out;
  Status s = run_reference_op(OpKind::kSlice, a, {iota({4})}, {{DType::kF32, {3}}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Slice 'node'"), std::string::npos) << s.message();
}

TEST(ReferenceShapeOps, ConcatNegativeAxisAndI64) {
  Tensor a = iota({2, 1, 2}), b = iota({2, 2, 2}, 100.f);
  EXPECT_EQ(floats(reference_op(OpKind::kConcat, graph::AxisAttrs{-2}, {a, b}, {DType::kF32, {2, 3, 2}})),
            (std::vector<float>{0, 1, 100, 101, 102, 103, 2, 3, 104, 105, 106, 107}));
  Tensor s1 = Tensor::from_int64s({1}, {0}), s2 = Tensor::from_int64s({2}, {-1, 120});
  EXPECT_EQ(ints(reference_op(OpKind::kConcat, graph::AxisAttrs{0}, {s1, s2}, {DType::kI64, {3}})),
            (std::vector<int64_t>{0, -1, 120}));
}

TEST(ReferenceShapeOps, ReshapeFamilyCopiesIntoOutputShape) {
  Tensor x = iota({2, 3});
  for (OpKind op : {OpKind::kReshape, OpKind::kSqueeze, OpKind::kUnsqueeze, OpKind::kIdentity}) {
    Tensor y = reference_op(op, {}, {x}, {DType::kF32, {3, 1, 2}});
    EXPECT_EQ(y.shape(), (Shape{3, 1, 2}));
    EXPECT_EQ(floats(y), floats(x));
    EXPECT_NE(y.raw(), x.raw());
  }
  std::vector<Tensor> out;
  EXPECT_EQ(run_reference_op(OpKind::kReshape, {}, {x}, {{DType::kF32, {4}}}, &out).code(),
            StatusCode::kInvalidArgument);
}

TEST(ReferenceShapeOps, TransposePermAndReverse) {
  Tensor x = iota({2, 3, 4});
  Tensor y = reference_op(OpKind::kTranspose, graph::TransposeAttrs{{2, 0, 1}}, {x}, {DType::kF32, {4, 2, 3}});
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 3; ++j) EXPECT_EQ(y.data<float>()[k * 6 + i * 3 + j], x.data<float>()[i * 12 + j * 4 + k]);
  Tensor r = reference_op(OpKind::kTranspose, graph::TransposeAttrs{}, {x}, {DType::kF32, {4, 3, 2}});
  EXPECT_EQ(r.data<float>()[1 * 6 + 2 * 2 + 1], x.data<float>()[1 * 12 + 2 * 4 + 1]);
  EXPECT_EQ(r.data<float>()[3 * 6 + 0 * 2 + 1], x.data<float>()[1 * 12 + 0 * 4 + 3]);
}

TEST(ReferenceBinary, BroadcastPatterns) {
  Tensor x = iota({2, 3, 2, 2});
  Tensor c = Tensor::from_floats({3, 1, 1}, {10, 20, 30});
  Tensor y = reference_op(OpKind::kAdd, {}, {x, c}, {DType::kF32, {2, 3, 2, 2}});
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < 3; ++ch)
      for (int k = 0; k < 4; ++k) {
        int i = (n * 3 + ch) * 4 + k;
        EXPECT_EQ(y.data<float>()[i], static_cast<float>(i + 10 * (ch + 1)));
      }
  Tensor s = Tensor::scalar_f32(2.f);
  EXPECT_EQ(floats(reference_op(OpKind::kSub, {}, {s, Tensor::from_floats({3}, {1, 2, 3})}, {DType::kF32, {3}})),
            (std::vector<float>{1, 0, -1}));
  // [N,1,1,W] * [1,C,H,1] broadcasts both ways.
  Tensor a = Tensor::from_floats({2, 1, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = Tensor::from_floats({1, 2, 1, 1}, {10, 100});
  Tensor m = reference_op(OpKind::kMul, {}, {a, b}, {DType::kF32, {2, 2, 1, 3}});
  EXPECT_EQ(floats(m), (std::vector<float>{10, 20, 30, 100, 200, 300, 40, 50, 60, 400, 500, 600}));
  EXPECT_EQ(floats(reference_op(OpKind::kDiv, {}, {Tensor::from_floats({2}, {1, 3}), Tensor::from_floats({1}, {4})},
                                {DType::kF32, {2}})),
            (std::vector<float>{0.25f, 0.75f}));
}

TEST(ReferenceBinary, PowMatchesStdPow) {
  Tensor x = Tensor::from_floats({4}, {-1.5f, 0.3f, 2.f, 7.1f});
  Tensor two = Tensor::scalar_f32(2.f), half = Tensor::scalar_f32(0.5f);
  std::vector<float> sq = floats(reference_op(OpKind::kPow, {}, {x, two}, {DType::kF32, {4}}));
  std::vector<float> rt = floats(reference_op(OpKind::kPow, {}, {x, half}, {DType::kF32, {4}}));
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(sq[i], std::pow(x.data<float>()[i], 2.f));
    if (i == 0) {
      EXPECT_TRUE(std::isnan(rt[i]));
    } else {
      EXPECT_EQ(rt[i], std::pow(x.data<float>()[i], 0.5f));
    }
  }
  // An integer exponent tensor with a float base.
  EXPECT_EQ(floats(reference_op(OpKind::kPow, {}, {x, Tensor::from_int64s({}, {3})}, {DType::kF32, {4}}))[2], 8.f);
}

TEST(ReferenceBinary, I64ShapeArithmetic) {
  Tensor a = Tensor::from_int64s({3}, {48, -7, 160});
  Tensor b = Tensor::from_int64s({1}, {2});
  EXPECT_EQ(ints(reference_op(OpKind::kDiv, {}, {a, b}, {DType::kI64, {3}})), (std::vector<int64_t>{24, -3, 80}));
  EXPECT_EQ(ints(reference_op(OpKind::kMul, {}, {a, b}, {DType::kI64, {3}})), (std::vector<int64_t>{96, -14, 320}));
  EXPECT_EQ(ints(reference_op(OpKind::kAdd, {}, {a, b}, {DType::kI64, {3}})), (std::vector<int64_t>{50, -5, 162}));
  EXPECT_EQ(ints(reference_op(OpKind::kSub, {}, {a, b}, {DType::kI64, {3}})), (std::vector<int64_t>{46, -9, 158}));
  std::vector<Tensor> out;
  Status s = run_reference_op(OpKind::kDiv, {}, {a, Tensor::from_int64s({1}, {0})}, {{DType::kI64, {3}}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
}

TEST(ReferenceBinary, MismatchedShapesAreAnError) {
  std::vector<Tensor> out;
  Status s = run_reference_op(OpKind::kAdd, {}, {iota({2, 3}), iota({2})}, {{DType::kF32, {2, 3}}}, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("broadcast"), std::string::npos) << s.message();
}

TEST(ReferenceBinary, LargeBroadcastMatchesNaiveLoop) {
  Tensor x = random_tensor({2, 8, 33, 65}, 1);
  Tensor c = random_tensor({8, 1, 65}, 2);
  Tensor y = reference_op(OpKind::kMul, {}, {x, c}, {DType::kF32, {2, 8, 33, 65}});
  for (int n = 0; n < 2; ++n)
    for (int ch = 0; ch < 8; ++ch)
      for (int h = 0; h < 33; ++h)
        for (int w = 0; w < 65; ++w) {
          int64_t i = ((n * 8 + ch) * 33 + h) * 65 + w;
          ASSERT_EQ(y.data<float>()[i], x.data<float>()[i] * c.data<float>()[ch * 65 + w]);
        }
}

}  // namespace
}  // namespace steadyocr::testing

// Detection input: the picture resized so its longer side is at most `limit_side` and both sides are
// multiples of 32 (at least 32), normalised with ImageNet mean/std in BGR order, as NCHW float.
#pragma once

#include <opencv2/core.hpp>

#include "core/tensor.h"

namespace steadyocr::pipeline {

struct DetInput {
  Tensor tensor;  // f32 [1, 3, input_h, input_w]: the resized picture at the top left, zeros beyond
  int src_h = 0, src_w = 0;
  int resized_h = 0, resized_w = 0;
  int input_h = 0, input_w = 0;  // resized sides padded up to the bucket (equal to them without one)
};

// The detector's input size for a picture of src_w x src_h (PaddleOCR's "max" limit type).
cv::Size det_input_size(int src_w, int src_h, int limit_side);

// Resizes (bilinear) and normalises an 8-bit BGR picture. With `pad_multiple` > 0 the tensor's sides are padded
// (zeros after normalisation, right and bottom) up to multiples of it, so pictures of many sizes share a few input
// shapes.
DetInput det_preprocess(const cv::Mat& bgr, int limit_side = 960, int pad_multiple = 0);

}  // namespace steadyocr::pipeline

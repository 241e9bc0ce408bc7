// Detection input: the picture resized so its longer side is at most `limit_side` and both sides are
// multiples of 32 (at least 32), normalised with ImageNet mean/std in BGR order, as NCHW float.
#pragma once

#include <opencv2/core.hpp>

#include "core/tensor.h"

namespace steadyocr::pipeline {

struct DetInput {
  Tensor tensor;  // f32 [1, 3, resized_h, resized_w]
  int src_h = 0, src_w = 0;
  int resized_h = 0, resized_w = 0;
};

// The detector's input size for a picture of src_w x src_h (PaddleOCR's "max" limit type).
cv::Size det_input_size(int src_w, int src_h, int limit_side);

// Resizes (bilinear) and normalises an 8-bit BGR picture.
DetInput det_preprocess(const cv::Mat& bgr, int limit_side = 960);

}  // namespace steadyocr::pipeline

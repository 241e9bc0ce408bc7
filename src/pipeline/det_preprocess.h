// Detection input: the picture resized so its longer side is at most `limit_side` and both sides are
// multiples of 32 (at least 32), normalised with ImageNet mean/std in BGR order, as NCHW float.
#pragma once

#include <opencv2/core.hpp>

#include "core/tensor.h"

namespace steadyocr::pipeline {

// What det_preprocess hands the detector.
enum class DetTensor {
  kNormalized,  // f32 [1, 3, input_h, input_w]: normalised on the host
  kBytes,       // u8 [1, resized_h, resized_w, 3]: the resized picture, for a model that starts with ImageLut
};

struct DetInput {
  Tensor tensor;  // kNormalized: the resized picture at the top left, zeros beyond; kBytes: the resized picture
  int src_h = 0, src_w = 0;
  int resized_h = 0, resized_w = 0;
  int input_h = 0, input_w = 0;  // resized sides padded up to the bucket (equal to them without one)
};

// The detector's input size for a picture of src_w x src_h (PaddleOCR's "max" limit type).
cv::Size det_input_size(int src_w, int src_h, int limit_side);

// Resizes (bilinear) and normalises an 8-bit BGR picture. With `pad_multiple` > 0 the tensor's sides are padded
// (zeros after normalisation, right and bottom) up to multiples of it, so pictures of many sizes share a few input
// shapes.
// kBytes ignores `pad_multiple` (no byte normalises to zero).
DetInput det_preprocess(const cv::Mat& bgr, int limit_side = 960, int pad_multiple = 0,
                        DetTensor kind = DetTensor::kNormalized);

// The normalisation det_preprocess applies, as a table: f32 [3, 256], row c = (v / 255 - mean[c]) / std[c] for the
// byte v of channel c (BGR order). The device path (ImageLut) reads the same floats.
Tensor det_normalize_table();

}  // namespace steadyocr::pipeline

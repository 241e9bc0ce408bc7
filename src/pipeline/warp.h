// Perspective warp of 8-bit pictures with bicubic interpolation and the edge repeated: the same bytes as OpenCV's
// cv::warpPerspective(src, dst, m, size, INTER_CUBIC, BORDER_REPLICATE), which the text-line crops used, in less time
// (OpenCV's 8-bit bicubic remap is a generic scalar loop over channels; here three channels inside the picture take
// SSE2's 16-bit multiply-adds over pairs of rows).
//
// The arithmetic is OpenCV's, so the bytes are equal: the inverse matrix by cv::invert; each output pixel's source
// position in double, rounded to 1/32 pixel (its block's first column's position plus the column's offset, as
// OpenCV's blocks of 32 x 32 pixels add them); the 4 x 4 weights of that 1/32 position from OpenCV's 15-bit table
// (the products of the 1-D cubic weights, a = -0.75, rounded and corrected to sum exactly 2^15); exact int32 sums;
// one rounding. tests/pipeline/test_warp.cpp compares the two byte for byte over many quads, sizes and channels.
#pragma once

#include <opencv2/core.hpp>

namespace steadyocr::pipeline {

// `src` (CV_8UC1..CV_8UC4) warped by the 3x3 matrix `m` (source to output, CV_64F or CV_32F, as
// cv::getPerspectiveTransform gives) to `size` (both sides > 0). Throws std::invalid_argument on other input.
cv::Mat warp_perspective_cubic(const cv::Mat& src, const cv::Mat& m, cv::Size size);

}  // namespace steadyocr::pipeline

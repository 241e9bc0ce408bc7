// Lanczos-4 resize of 8-bit pictures, the same bytes as OpenCV's cv::resize(src, dst, size, 0, 0, INTER_LANCZOS4)
// and several times faster: OpenCV's 8-bit Lanczos-4 is a scalar loop (707 us for a 300 x 25 -> 576 x 48 line on the
// 2-core machine), and the recogniser resizes every text line with it.
//
// The arithmetic is OpenCV's fixed point, so the bytes are equal, not merely close: the 8 weights of each output
// column and row are the Lanczos-4 kernel at the pixel centre's fraction (float), normalised to sum 1 and rounded to
// 11 bits; the columns' weighted sums are exact int32, the rows' weighted sums of those too (below 2^31 for any
// picture), and the only rounding
// is the last one (add 2^21, shift right by 22, clamp to 0..255). Taps beyond the picture repeat its edge pixel.
// Because every sum before the last rounding is exact, the order of the sums is free: this code keeps each
// source row's column pass once and runs the row pass over whole rows (vectorised), where OpenCV goes row by row.
// tests/pipeline/test_lanczos.cpp compares the two byte for byte over many sizes, both ways, 1 to 4 channels.
#pragma once

#include <opencv2/core.hpp>

namespace steadyocr::pipeline {

// `src` (CV_8UC1..CV_8UC4, any step) resized to `size` (both sides > 0) into `dst` (allocated as needed).
void lanczos4_resize(const cv::Mat& src, cv::Mat& dst, cv::Size size);

}  // namespace steadyocr::pipeline

// Text-line crops: a perspective warp of each detected quad to an upright rectangle.
#pragma once

#include <opencv2/core.hpp>

#include "pipeline/db_postprocess.h"

namespace steadyocr::pipeline {

// Warps the quad (TL, TR, BR, BL) of `image` to a width x height rectangle (bicubic, replicated border),
// width/height being the longer of the opposite sides; turned 90 degrees counter-clockwise when the
// result is at least 1.5 times taller than wide (vertical text). Empty when the quad is degenerate.
// An upright quad with whole-pixel corners inside the picture (most of a document's lines: DB's boxes are rounded to
// whole pixels) is copied instead of warped: the same pixels (a whole-pixel shift's bicubic weights are 0, 1, 0, 0)
// at a fraction of the cost (tests/pipeline/test_recognition_steps.cpp compares the two).
cv::Mat crop_text_region(const cv::Mat& image, const Quad& quad);
// What crop_text_region(image, quad) costs, relative to other quads' (the output's pixels, a warp's ~30 times a
// copy's: 40 against 1.4 ns per pixel on the 2-core machine with OpenCV's warp; pipeline/warp.cpp's is ~2.3 times
// faster, which moves the order only between a warp and a copy 13 to 30 times its size): the crops of a page
// start the dearest first.
double crop_cost(const cv::Mat& image, const Quad& quad);
// The warp itself, for every quad.
cv::Mat warp_text_region(const cv::Mat& image, const Quad& quad);

}  // namespace steadyocr::pipeline

#include "pipeline/det_preprocess.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>

namespace steadyocr::pipeline {

cv::Size det_input_size(int src_w, int src_h, int limit_side) {
  int longer = std::max(src_h, src_w);
  double ratio = longer > limit_side ? static_cast<double>(limit_side) / longer : 1.0;
  // Round half to even, as Python's round() does, so sizes match the reference exactly.
  auto side = [&](int s) { return std::max(static_cast<int>(std::nearbyint(s * ratio / 32) * 32), 32); };
  return {side(src_w), side(src_h)};
}

namespace {

// Each channel's 256 normalised values, computed once by the expression the loop used per pixel (the same floats:
// (v / 255 - mean) / std), so a pixel costs a table read instead of two divisions.
const std::array<std::array<float, 256>, 3>& normalize_lut() {
  static const auto kLut = [] {
    const float mean[3] = {0.485f, 0.456f, 0.406f};
    const float std[3] = {0.229f, 0.224f, 0.225f};
    std::array<std::array<float, 256>, 3> t{};
    for (int c = 0; c < 3; ++c) {
      for (int v = 0; v < 256; ++v) t[c][v] = (static_cast<float>(v) / 255.0f - mean[c]) / std[c];
    }
    return t;
  }();
  return kLut;
}

}  // namespace

Tensor det_normalize_table() {
  Tensor t = Tensor::empty(DType::kF32, {3, 256});
  const auto& lut = normalize_lut();
  for (int c = 0; c < 3; ++c) std::copy(lut[c].begin(), lut[c].end(), t.data<float>() + c * 256);
  return t;
}

DetInput det_preprocess(const cv::Mat& bgr, int limit_side, int pad_multiple, DetTensor kind) {
  CV_Assert(bgr.type() == CV_8UC3);
  DetInput in;
  in.src_h = bgr.rows;
  in.src_w = bgr.cols;
  cv::Size size = det_input_size(bgr.cols, bgr.rows, limit_side);
  in.resized_h = size.height;
  in.resized_w = size.width;
  if (kind == DetTensor::kBytes) {
    // The resize writes straight into the tensor (a cv::Mat over its bytes): no second copy.
    in.input_h = size.height;
    in.input_w = size.width;
    in.tensor = Tensor::empty(DType::kU8, {1, size.height, size.width, 3});
    cv::Mat dst(size, CV_8UC3, in.tensor.data<uint8_t>());
    if (size == bgr.size()) {
      bgr.copyTo(dst);
    } else {
      cv::resize(bgr, dst, size, 0, 0, cv::INTER_LINEAR);
    }
    CV_Assert(dst.data == in.tensor.data<uint8_t>());  // resize kept the tensor's memory
    return in;
  }
  cv::Mat resized;
  if (size == bgr.size()) {
    resized = bgr;
  } else {
    cv::resize(bgr, resized, size, 0, 0, cv::INTER_LINEAR);
  }
  const auto& lut = normalize_lut();
  const int h = size.height;
  auto padded = [&](int s) { return pad_multiple > 0 ? (s + pad_multiple - 1) / pad_multiple * pad_multiple : s; };
  in.input_h = padded(size.height);
  in.input_w = padded(size.width);
  const int w = in.input_w;
  in.tensor = Tensor::empty(DType::kF32, {1, 3, in.input_h, w});
  float* dst = in.tensor.data<float>();
  const size_t plane = static_cast<size_t>(in.input_h) * w;
  if (in.input_h != size.height || in.input_w != size.width) std::fill(dst, dst + 3 * plane, 0.f);
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = resized.ptr<uint8_t>(y);
    float* d0 = dst + static_cast<size_t>(y) * w;
    float* d1 = d0 + plane;
    float* d2 = d1 + plane;
    for (int x = 0; x < size.width; ++x) {
      d0[x] = lut[0][row[3 * x]];
      d1[x] = lut[1][row[3 * x + 1]];
      d2[x] = lut[2][row[3 * x + 2]];
    }
  }
  return in;
}

}  // namespace steadyocr::pipeline

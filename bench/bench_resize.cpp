// The recogniser's line resize (Lanczos-4 to height 48): OpenCV's cv::resize(INTER_LANCZOS4) against ours
// (pipeline/lanczos.cpp, the same bytes), one thread, on line shapes of the evaluation sets (a short word, a receipt
// line enlarged, a long line shrunk). Each benchmark's label says which. And the crops' bicubic perspective warp:
// cv::warpPerspective(INTER_CUBIC, BORDER_REPLICATE) against ours (pipeline/warp.cpp, the same bytes).
//   build/bench/steadyocr_bench --benchmark_filter='Resize|Warp'
#include <benchmark/benchmark.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "pipeline/lanczos.h"
#include "pipeline/warp.h"

namespace steadyocr {
namespace {

struct LineShape {
  int sw, sh, dw, dh;
};
constexpr LineShape kShapes[] = {{60, 20, 144, 48}, {120, 40, 144, 48}, {300, 25, 576, 48}, {800, 60, 640, 48}};

cv::Mat line_picture(const LineShape& s) {
  cv::Mat m(s.sh, s.sw, CV_8UC3);
  cv::randu(m, 0, 256);
  return m;
}

void resize_case(benchmark::State& state, bool ours) {
  cv::setNumThreads(1);
  const LineShape& s = kShapes[state.range(0)];
  const cv::Mat src = line_picture(s);
  cv::Mat dst;
  for (auto _ : state) {
    if (ours) {
      pipeline::lanczos4_resize(src, dst, {s.dw, s.dh});
    } else {
      cv::resize(src, dst, {s.dw, s.dh}, 0, 0, cv::INTER_LANCZOS4);
    }
    benchmark::DoNotOptimize(dst.data);
  }
  state.SetLabel(std::to_string(s.sw) + "x" + std::to_string(s.sh) + " -> " + std::to_string(s.dw) + "x" +
                 std::to_string(s.dh));
}

void BM_ResizeLanczosOpenCv(benchmark::State& state) {
  resize_case(state, false);
}
void BM_ResizeLanczosOurs(benchmark::State& state) {
  resize_case(state, true);
}
BENCHMARK(BM_ResizeLanczosOpenCv)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ResizeLanczosOurs)->DenseRange(0, 3)->Unit(benchmark::kMicrosecond);

// A slightly rotated 500 x 26 line (short: 120 x 20) of a 800 x 1000 page, cut to an upright rectangle.
void warp_case(benchmark::State& state, bool ours) {
  cv::setNumThreads(1);
  cv::Mat page(1000, 800, CV_8UC3);
  cv::randu(page, 0, 256);
  const bool long_line = state.range(0) == 1;
  const int w = long_line ? 500 : 120, h = long_line ? 26 : 20;
  const cv::Point2f quad[4] = {
      {100.3f, 200.7f}, {100.3f + w, 200.7f + w * 0.03f}, {99.5f + w, 200.7f + w * 0.03f + h}, {99.5f, 200.7f + h}};
  const cv::Point2f rect[4] = {
      {0, 0}, {static_cast<float>(w), 0}, {static_cast<float>(w), static_cast<float>(h)}, {0, static_cast<float>(h)}};
  const cv::Mat m = cv::getPerspectiveTransform(quad, rect);
  cv::Mat dst;
  for (auto _ : state) {
    if (ours) {
      dst = pipeline::warp_perspective_cubic(page, m, {w, h});
    } else {
      cv::warpPerspective(page, dst, m, {w, h}, cv::INTER_CUBIC, cv::BORDER_REPLICATE);
    }
    benchmark::DoNotOptimize(dst.data);
  }
  state.SetLabel(std::to_string(w) + "x" + std::to_string(h) + " line");
}

void BM_WarpCubicOpenCv(benchmark::State& state) {
  warp_case(state, false);
}
void BM_WarpCubicOurs(benchmark::State& state) {
  warp_case(state, true);
}
BENCHMARK(BM_WarpCubicOpenCv)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_WarpCubicOurs)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace steadyocr

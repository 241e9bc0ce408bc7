// The recogniser's line resize (Lanczos-4 to height 48): OpenCV's cv::resize(INTER_LANCZOS4) against ours
// (pipeline/lanczos.cpp, the same bytes), one thread, on line shapes of the evaluation sets (a short word, a receipt
// line enlarged, a long line shrunk). Each benchmark's label says which.
//   build/bench/steadyocr_bench --benchmark_filter=Resize
#include <benchmark/benchmark.h>

#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>

#include "pipeline/lanczos.h"

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

}  // namespace
}  // namespace steadyocr

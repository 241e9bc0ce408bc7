// libFuzzer target: DB post-processing (threshold, contours, min-area boxes, box score, Clipper unclip, ordering)
// and the text-line crops on arbitrary probability maps, options and quads. NaN, infinities and values outside
// [0, 1] included: the detector's output is a float tensor and a faulty backend can produce anything.
#include <fuzzer/FuzzedDataProvider.h>

#include <opencv2/core/utility.hpp>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "pipeline/crop.h"
#include "pipeline/db_postprocess.h"

using namespace steadyocr::pipeline;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  cv::setNumThreads(1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  const int map_h = in.ConsumeIntegralInRange(1, 96);
  const int map_w = in.ConsumeIntegralInRange(1, 96);
  // The picture the boxes are scaled to, and cropped from: small enough that a crop (warpPerspective, as costly as
  // its area) stays cheap, large enough for the scaling to matter.
  const int src_h = in.ConsumeIntegralInRange(1, 256);
  const int src_w = in.ConsumeIntegralInRange(1, 256);
  DbOptions o;
  o.thresh = in.ConsumeFloatingPointInRange(-0.5f, 1.5f);
  o.box_thresh = in.ConsumeFloatingPointInRange(-0.5, 1.5);
  o.unclip_ratio = in.ConsumeFloatingPointInRange(0.0, 4.0);
  o.max_candidates = in.ConsumeIntegralInRange(0, 2000);
  o.min_size = in.ConsumeIntegralInRange(0, 8);
  const bool raw_floats = in.ConsumeBool();
  std::vector<float> prob(static_cast<size_t>(map_h) * map_w, 0.f);
  for (float& p : prob) {
    if (in.remaining_bytes() == 0) break;
    // Mostly probabilities from one byte (shapes the contour finder can work on), or any float bit pattern.
    p = raw_floats && in.remaining_bytes() >= 4 ? in.ConsumeFloatingPoint<float>()
                                                : in.ConsumeIntegral<uint8_t>() / 255.f;
  }
  std::vector<DetBox> boxes = db_postprocess(prob.data(), map_h, map_w, src_h, src_w, o);
  for (const DetBox& b : boxes) {
    for (const cv::Point2f& p : b.quad) {
      if (!std::isfinite(p.x) || !std::isfinite(p.y)) std::abort();
      if (p.x < 0 || p.y < 0 || p.x > src_w || p.y > src_h) std::abort();  // boxes are clipped to the picture
    }
  }
  // Crops of the boxes found and of quads straight from the input.
  cv::Mat image(src_h, src_w, CV_8UC3, cv::Scalar(200, 100, 50));
  for (size_t i = 0; i < boxes.size() && i < 3; ++i) {
    cv::Mat c = crop_text_region(image, boxes[i].quad);
    if (!c.empty() && (c.type() != CV_8UC3 || c.cols > 20000 || c.rows > 20000)) std::abort();
  }
  // At most two: a crop costs as much as its area (warpPerspective), and the pipeline's quads lie inside the
  // picture, so coordinates stay near it.
  for (int k = 0; k < 2 && in.remaining_bytes() >= 8 * sizeof(float); ++k) {
    Quad q;
    for (cv::Point2f& p : q) {
      p.x = in.ConsumeFloatingPointInRange(-32.f, 160.f);
      p.y = in.ConsumeFloatingPointInRange(-32.f, 160.f);
    }
    cv::Mat c = crop_text_region(image, q);
    if (!c.empty() && c.type() != CV_8UC3) std::abort();
    (void)order_clockwise(q);
  }
  return 0;
}

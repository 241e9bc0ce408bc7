#include "pipeline/handler.h"

#include <opencv2/core/utility.hpp>

#include <cstdlib>

#include "core/parallel.h"
#include "core/timer.h"

namespace steadyocr::pipeline {

std::vector<ImageReply> read_images(const Pipeline& pipeline, const std::vector<ImageRequest>& requests,
                                    const DecodeLimits& limits, const Visualizer* vis) {
  std::vector<ImageReply> replies(requests.size());
  std::vector<Result<DecodedImage>> decoded(requests.size(), Result<DecodedImage>(internal_error("not decoded")));
  std::vector<double> decode_ms(requests.size());
  parallel_for_each(static_cast<int64_t>(requests.size()), [&](int64_t i) {
    Stopwatch sw;
    decoded[i] = decode_image(requests[i].data, requests[i].size, limits);
    decode_ms[i] = sw.elapsed_ms();
  });
  std::vector<cv::Mat> images;
  std::vector<ImageOptions> options;
  std::vector<size_t> index;
  bool changed = false;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (!decoded[i].is_ok()) {
      replies[i].result = decoded[i].status();
      continue;
    }
    images.push_back(decoded[i]->bgr);
    options.push_back(requests[i].options);
    changed |= !requests[i].options.empty();
    index.push_back(i);
  }
  std::vector<Result<OcrResult>> results = pipeline.run_many(images, changed ? &options : nullptr);
  for (size_t k = 0; k < results.size(); ++k) {
    const size_t i = index[k];
    ImageReply& r = replies[i];
    if (results[k].is_ok()) {
      StageTimes& t = results[k]->timings;
      t.decode = decode_ms[i];
      t.total += decode_ms[i];
    }
    r.result = std::move(results[k]);
  }
  parallel_for_each(static_cast<int64_t>(requests.size()), [&](int64_t i) {
    ImageReply& r = replies[i];
    if (requests[i].vis_format.empty() || !r.result.is_ok()) return;
    if (!vis) {
      r.vis_status = internal_error("no visualiser was given to draw the picture");
      return;
    }
    auto bytes = vis->encode(requests[i].vis_format, decoded[i]->bgr, r.result->lines);
    if (bytes.is_ok()) {
      r.vis = std::move(*bytes);
    } else {
      r.vis_status = bytes.status();
    }
  });
  return replies;
}

int set_image_threads(int threads) {
  const char* env = std::getenv("OPENCV_FOR_THREADS_NUM");
  if (env == nullptr || *env == '\0') cv::setNumThreads(threads);
  return cv::getNumThreads();
}

}  // namespace steadyocr::pipeline

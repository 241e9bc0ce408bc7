#include "pipeline/warm_up.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>

#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "pipeline/det_preprocess.h"

namespace steadyocr::pipeline {

std::vector<Shape> det_warm_shapes(const PipelineOptions& options) {
  std::vector<Shape> shapes;
  const int b = options.det_bucket;
  if (b <= 0 || options.det_limit_side < 32) return shapes;
  // The longer side of a large picture after the resize (a multiple of 32), then padded to the bucket.
  const cv::Size full = det_input_size(options.det_limit_side * 4, options.det_limit_side, options.det_limit_side);
  const int longer = (full.width + b - 1) / b * b;
  for (int s = b; s <= longer; s += b) {
    shapes.push_back({1, 3, longer, s});
    if (s != longer) shapes.push_back({1, 3, s, longer});
  }
  return shapes;
}

std::vector<Shape> rec_warm_shapes(const PipelineOptions& options) {
  std::vector<Shape> shapes;
  const RecOptions& r = options.rec;
  const int batch = std::max(r.batch, 1);
  // Short lines all come out exactly min_width wide; merged (merge_rows) and padded (pad_rows), they make calls of
  // step, 2 * step, ... rows at that width: the one recognition width every page meets.
  if (r.merge_rows > 0 && r.pad_rows > 0) {
    const int step = std::max(r.pad_rows, batch);
    for (int rows = 2 * step; rows <= r.merge_rows; rows += step) shapes.push_back({rows, 3, r.height, r.min_width});
  }
  if (r.width_bucket <= 0) {
    if (!shapes.empty()) shapes.insert(shapes.begin(), Shape{batch, 3, r.height, r.min_width});
    return shapes;
  }
  for (int w = r.min_width; w <= std::max(options.warm_rec_max_width, r.min_width); w += r.width_bucket) {
    shapes.push_back({batch, 3, r.height, w});
  }
  return shapes;
}

cv::Mat synthetic_page(int width, int height) {
  cv::Mat page(height, width, CV_8UC3, cv::Scalar(245, 245, 245));
  const int line = std::max(8, height / 40);
  for (int y = line; y + line < height; y += 2 * line) {
    int x = line;
    while (x + line < width) {
      int word = line * (2 + (x / line + y / line) % 5);
      cv::rectangle(page, cv::Rect(x, y, std::min(word, width - x - line), line), cv::Scalar(40, 40, 40), cv::FILLED);
      x += word + line;
    }
  }
  return page;
}

cv::Mat synthetic_line(int width, int height) {
  cv::Mat crop(height, width, CV_8UC3, cv::Scalar(245, 245, 245));
  for (int x = height / 4; x + height / 2 < width; x += height / 2) {
    cv::rectangle(crop, cv::Rect(x, height / 4, std::max(2, height / 6), height / 2), cv::Scalar(30, 30, 30),
                  cv::FILLED);
  }
  return crop;
}

Status warm_up_models(runtime::Model* det, runtime::Model* rec, const PipelineOptions& options) {
  struct Job {
    runtime::Model* model;
    Shape shape;
  };
  std::vector<Job> jobs;
  if (det && options.mode != OcrMode::kRecOnly) {
    for (const Shape& s : det_warm_shapes(options)) jobs.push_back({det, s});
  }
  if (rec && options.mode != OcrMode::kDetOnly) {
    for (const Shape& s : rec_warm_shapes(options)) jobs.push_back({rec, s});
  }
  if (jobs.empty()) return Status::ok();
  Stopwatch sw;
  std::mutex mu;
  Status first_error;
  parallel_for_each(static_cast<int64_t>(jobs.size()), [&](int64_t i) {
    const Job& j = jobs[i];
    Tensor input;
    if (j.model == det) {
      // The warm shapes are the detector's f32 [1, 3, H, W] buckets (--det-bucket); bytes only go without a bucket.
      DetInput in = det_preprocess(synthetic_page(static_cast<int>(j.shape[3]), static_cast<int>(j.shape[2])),
                                   options.det_limit_side, options.det_bucket,
                                   options.det_bytes ? DetTensor::kBytes : DetTensor::kNormalized);
      input = in.tensor;
    } else {
      const int n = static_cast<int>(j.shape[0]), h = static_cast<int>(j.shape[2]), w = static_cast<int>(j.shape[3]);
      input = rec_input(options.rec.bytes, n, h, w, n);
      cv::Mat line = synthetic_line(w, h);
      for (int k = 0; k < n; ++k) rec_fill_row(input, k, line, RecInterp::kLinear);
    }
    // The recogniser's warm shapes are f32 [N, 3, H, W]; its bytes are u8 [N, H, W, 4].
    const Shape want = j.model == rec && options.rec.bytes ? Shape{j.shape[0], j.shape[2], j.shape[3], 4} : j.shape;
    Status s = input.shape() == want
                   ? j.model->warm_up(input, options.plan_instances, 2)
                   : internal_error("warm-up input " + input.describe() + " for " + shape_str(j.shape));
    if (!s.is_ok()) {
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.is_ok()) first_error = s;
    }
  });
  RETURN_IF_ERROR(first_error);
  log::info("pipeline", "planned {} bucketed shapes x {} instances at load in {:.0f} ms", jobs.size(),
            options.plan_instances, sw.elapsed_ms());
  return Status::ok();
}

}  // namespace steadyocr::pipeline

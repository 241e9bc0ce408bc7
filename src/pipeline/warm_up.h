// Planning the bucketed input shapes before the first request: with det_bucket and rec.width_bucket set, the
// shapes a pipeline will see are few and known, and a GPU backend plans (and captures) each once at load instead
// of on some request's time.
#pragma once

#include <opencv2/core.hpp>

#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "pipeline/pipeline.h"
#include "runtime/model.h"

namespace steadyocr::pipeline {

// Detector input shapes [1, 3, H, W] of pictures whose longer side reaches the limit: both orientations, the
// shorter side every bucket up to the longer. Empty without det_bucket.
std::vector<Shape> det_warm_shapes(const PipelineOptions& options);
// Recognition input shapes [batch, 3, height, W], W every width bucket up to warm_rec_max_width. Empty without
// rec.width_bucket.
std::vector<Shape> rec_warm_shapes(const PipelineOptions& options);

// A page-like picture (dark bars of text height on white) and a text-line-like crop, so that reduced-precision
// calibration, if it happens here, sees realistic activations.
cv::Mat synthetic_page(int width, int height);
cv::Mat synthetic_line(int width, int height);

// Plans every warm shape of `det` and `rec` (either may be null) with options.plan_instances instances each, two runs
// per instance (the second captures a CUDA graph), shapes in parallel.
Status warm_up_models(runtime::Model* det, runtime::Model* rec, const PipelineOptions& options);

}  // namespace steadyocr::pipeline

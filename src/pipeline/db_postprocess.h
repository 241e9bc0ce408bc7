// DB (differentiable binarisation) post-processing: from the detector's probability map to text boxes in
// the original picture's coordinates, PaddleOCR's DBPostProcess semantics ("fast" box score, quads).
#pragma once

#include <opencv2/core.hpp>

#include <array>
#include <vector>

namespace steadyocr::pipeline {

// Four corners: top-left, top-right, bottom-right, bottom-left.
using Quad = std::array<cv::Point2f, 4>;

struct DetBox {
  Quad quad;
  float score = 0;  // mean probability inside the box before unclipping
};

struct DbOptions {
  float thresh = 0.3f;        // probability that marks a pixel as text
  double box_thresh = 0.6;    // minimum mean probability inside a candidate
  double unclip_ratio = 1.5;  // how far boxes grow: area * ratio / perimeter
  int max_candidates = 1000;
  int min_size = 3;  // shorter side below which candidates are dropped (unclipped boxes: min_size + 2)
};

// Boxes found in `prob` (map_h x map_w floats) scaled to a src_w x src_h picture, sorted in reading order.
std::vector<DetBox> db_postprocess(const float* prob, int map_h, int map_w, int src_h, int src_w,
                                   const DbOptions& options = {});

// --- steps, exposed for tests ---

// Min-area rectangle of `points` with corners ordered as PaddleOCR's get_mini_boxes; *short_side gets its
// shorter side.
Quad mini_box(cv::InputArray points, float* short_side);
// Mean of `prob` inside the polygon (filled with integer-truncated corners), PaddleOCR's box_score_fast.
double box_score_fast(const cv::Mat& prob, const Quad& quad);
// Grows the quad by distance area * ratio / perimeter with round joins (Clipper), as a polygon.
std::vector<cv::Point2f> unclip(const Quad& quad, double ratio);
// Orders four corners clockwise from the top-left (smallest x + y).
Quad order_clockwise(const Quad& quad);
// Sorts top-to-bottom, then left-to-right among boxes whose tops are within 10 pixels.
void sort_reading_order(std::vector<DetBox>& boxes);

}  // namespace steadyocr::pipeline

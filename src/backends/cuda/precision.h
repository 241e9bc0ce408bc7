// Reduced precision that stays correct: per-layer choice verified against fp32 on a real input.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/plan.h"
#include "backends/cuda/plan_builder.h"
#include "graph/ir.h"

namespace steadyocr::cuda {

struct CalibrationResult {
  std::set<std::string> f32_nodes;  // nodes that stay fp32
  int f16_nodes = 0;
  double output_nmse = 0;  // reduced-precision output vs fp32, on the calibration input
  bool all_f32 = false;    // no reduced-precision plan met the bar: the model runs in fp32
  std::string summary;
};

// Runs the graph once in fp32 and in fp16 (every value kept), compares each value, and moves to fp32 the nodes
// whose output leaves fp16's safe range or whose error jumps well above their inputs' error; repeats until the
// output matches fp32 (NMSE below 3e-4, or every value within 2e-3 x max(1, peak): probability maps) or falls
// back to all-fp32. `start` = nodes already kept in fp32; `base` = the options every plan of the backend shares
// (own_conv), so the calibration runs the kernels the model will run.
Result<CalibrationResult> calibrate_precision(CudaDevice& dev, cudnnHandle_t cudnn, const ExecContext& ctx,
                                              const graph::Graph& g, const std::vector<Tensor>& inputs,
                                              const std::set<std::string>& start, const PlanOptions& base);

}  // namespace steadyocr::cuda

// JSON codecs of the pipeline's option structs, beside the structs: every field, so an options struct crosses the
// worker pipe (or a config file) whole. Missing fields keep their defaults.
#pragma once

#include <nlohmann/json.hpp>

#include "pipeline/image_decode.h"
#include "pipeline/pipeline.h"

namespace steadyocr::pipeline {

NLOHMANN_JSON_SERIALIZE_ENUM(OcrMode, {{OcrMode::kFull, "full"},
                                       {OcrMode::kDetOnly, "det_only"},
                                       {OcrMode::kRecOnly, "rec_only"}})
NLOHMANN_JSON_SERIALIZE_ENUM(ExecutionProfile, {{ExecutionProfile::kAuto, "auto"},
                                                {ExecutionProfile::kHost, "host"},
                                                {ExecutionProfile::kDevice, "device"}})
NLOHMANN_JSON_SERIALIZE_ENUM(RecInterp, {{RecInterp::kLinear, "linear"},
                                         {RecInterp::kCubic, "cubic"},
                                         {RecInterp::kLanczos, "lanczos"}})
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ModelPaths, det, rec, cls, dict)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DbOptions, thresh, box_thresh, unclip_ratio, max_candidates, min_size)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecOptions, height, min_width, batch, width_bucket, pad_batch,
                                                merge_rows, interp)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ClsOptions, height, width, batch, thresh)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PipelineOptions, mode, use_cls, det_limit_side, det_bucket, db, rec,
                                                cls, drop_score, execution, plan_instances, warm_up, warm_rec_max_width)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DecodeLimits, max_side, max_pixels, max_file_bytes)

}  // namespace steadyocr::pipeline

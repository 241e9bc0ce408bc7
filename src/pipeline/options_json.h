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
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(RecOptions, height, min_width, batch, width_bucket, pad_rows,
                                                merge_rows, interp)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ClsOptions, height, width, batch, thresh)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PipelineOptions::Batching, enabled, det_images, rec_rows, cls_rows,
                                                slots)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PipelineOptions, mode, use_cls, det_limit_side, det_bucket, db, rec,
                                                cls, drop_score, load_cls, execution, plan_instances, host_groups,
                                                plan_cache, rec_top1, rec_concurrent_calls, det_device_normalize,
                                                rec_device_normalize, symbolic_plans, warm_up, warm_rec_max_width,
                                                batching)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DecodeLimits, max_side, max_pixels, max_file_bytes, max_jpeg_scans,
                                                decode_deadline_ms)

// ImageOptions: only the fields that are set, by their PipelineOptions names; absent fields stay unset.
inline void to_json(nlohmann::json& j, const ImageOptions& o) {
  j = nlohmann::json::object();
  if (o.mode) j["mode"] = *o.mode;
  if (o.use_cls) j["use_cls"] = *o.use_cls;
  if (o.det_thresh) j["det_thresh"] = *o.det_thresh;
  if (o.det_box_thresh) j["det_box_thresh"] = *o.det_box_thresh;
  if (o.unclip_ratio) j["unclip_ratio"] = *o.unclip_ratio;
  if (o.drop_score) j["drop_score"] = *o.drop_score;
  if (o.rec_interp) j["rec_interp"] = *o.rec_interp;
}
inline void from_json(const nlohmann::json& j, ImageOptions& o) {
  o = ImageOptions{};
  if (j.contains("mode")) o.mode = j.at("mode").get<OcrMode>();
  if (j.contains("use_cls")) o.use_cls = j.at("use_cls").get<bool>();
  if (j.contains("det_thresh")) o.det_thresh = j.at("det_thresh").get<float>();
  if (j.contains("det_box_thresh")) o.det_box_thresh = j.at("det_box_thresh").get<double>();
  if (j.contains("unclip_ratio")) o.unclip_ratio = j.at("unclip_ratio").get<double>();
  if (j.contains("drop_score")) o.drop_score = j.at("drop_score").get<float>();
  if (j.contains("rec_interp")) o.rec_interp = j.at("rec_interp").get<RecInterp>();
}

}  // namespace steadyocr::pipeline

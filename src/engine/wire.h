// What crosses the worker pipe, beside the frames of ipc.h: statuses with their findings (every status code,
// both ways), OCR results, and the engine's options (engine/options.h has their codec).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "core/status.h"
#include "pipeline/pipeline.h"

namespace steadyocr::engine {

// {"code": "DEVICE_FAULT", "message": "...", "finding": {"code", "detail", "fix"}} (finding only when present).
nlohmann::json status_to_json(const Status& s);
// The status again; a malformed object is a kDataLoss naming what is wrong, never a silent OK.
Status status_from_json(const nlohmann::json& j);

// The model calls that read an image (batching across callers): {"det_images", "rec_calls", "rec_rows", "rec_shared"}.
nlohmann::json call_stats_to_json(const pipeline::CallStats& c);
nlohmann::json ocr_result_to_json(const pipeline::OcrResult& r);
Result<pipeline::OcrResult> ocr_result_from_json(const nlohmann::json& j);

}  // namespace steadyocr::engine

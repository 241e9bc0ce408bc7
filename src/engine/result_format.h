// Output formats of OCR results: one JSON object keyed by image name (what ocr_eval.py reads), JSON Lines,
// TSV and plain text.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/ladder.h"
#include "pipeline/pipeline.h"

namespace steadyocr::engine {

enum class OutputFormat { kJson, kJsonl, kTsv, kText };

// Parses "json|jsonl|tsv|text"; false on anything else.
bool parse_output_format(const std::string& name, OutputFormat* out);

// One input's outcome: its result, or the error that stopped it (then `result` holds what is known:
// backend and timings so far).
struct ImageOutcome {
  std::string name;  // key in the output (the file's base name unless two inputs share it)
  std::string path;
  bool ok = true;
  std::string error;
  pipeline::OcrResult result;  // result.backend: the backend the models ran on
  std::string rung;            // the rung of the ladder that read it
  std::string gpu;             // with several GPUs, the engine's GPU that read it ("" otherwise)
  // Moves on the backend ladder while this image ran (step downs and climbs), each with its reason code.
  std::vector<LadderEvent> fallbacks;
};

// A ladder move: {"from", "to", "reason", "detail", "fix", "climb", "time"} (+ "gpu" with several GPUs), as results,
// /readyz and the bindings show it.
nlohmann::ordered_json event_to_json(const LadderEvent& e);
// One GPU of several: {"gpu", "device", "name", "in_service", "rung", "in_flight", "images_ok", "images_failed",
// "last_inference_age_ms"} (+ "out_of_service": its standing events, when it is out), as /readyz and the bindings show
// it.
nlohmann::ordered_json gpu_state_to_json(const GpuState& g);

// {"lines": [{"text", "score", "box"}], "backend", "rung", "fallbacks": [...], "timings_ms": {...}} (+ "error" when
// it failed).
nlohmann::ordered_json outcome_to_json(const ImageOutcome& outcome);

// The whole output document in `format` (UTF-8; ends with a newline unless empty).
std::string format_outcomes(const std::vector<ImageOutcome>& outcomes, OutputFormat format);

// One image's part of a streamable format (jsonl, tsv, text): what format_outcomes writes for it. The TSV
// header is separate.
std::string format_outcome(const ImageOutcome& outcome, OutputFormat format);
std::string tsv_header();

}  // namespace steadyocr::engine

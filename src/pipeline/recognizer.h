// Text recognition (PP-OCR CRNN/SVTR with CTC head): crops batched by aspect ratio, resized to the model's
// height, normalised to [-1, 1], zero-padded on the right, then greedy CTC over the dictionary.
#pragma once

#include <opencv2/core.hpp>

#include <memory>
#include <optional>
#include <vector>

#include "core/status.h"
#include "pipeline/ctc_decode.h"
#include "pipeline/dictionary.h"
#include "pipeline/time_profile.h"
#include "runtime/model.h"

namespace steadyocr::pipeline {

// How recognition crops are resized to the model's height. Nearly every crop is enlarged (median 29-33 px to 48):
// bilinear (PaddleOCR's cv2.INTER_LINEAR) blurs the narrow gaps between Latin words and the recogniser then drops the
// spaces; Lanczos-4 keeps them (docs/BENCHMARKS.md: every metric per mode on every set).
enum class RecInterp { kLinear, kCubic, kLanczos };
// "linear|cubic|lanczos"; false on anything else.
bool parse_rec_interp(const std::string& name, RecInterp* out);
const char* rec_interp_name(RecInterp interp);

struct RecOptions {
  int height = 48;      // model input height
  int min_width = 320;  // a batch is at least this wide
  int batch = 6;        // crops per model run
  // Batch widths above min_width rounded up to min_width + k * width_bucket (0: exact, as PaddleOCR). Few distinct
  // input shapes, so GPU backends plan (and capture) each width once instead of for nearly every batch.
  int width_bucket = 0;
  // Rows of a model call rounded up to a multiple of this with blank rows (results unchanged: rows are independent;
  // 0 or 1: none), so fewer distinct input shapes reach the backend. The blank rows are computed like the others.
  // -1: the execution profile's default (Pipeline::load: none on either; docs/BENCHMARKS.md, "Recognition rows
  // without padding").
  int pad_rows = -1;
  // Consecutive batches that come out the same width (after sorting, most short lines are exactly min_width wide)
  // run as one model call of up to this many rows (0: off). Each row is still the crop normalised at its own
  // batch's width, so the rows are the same as PaddleOCR's; only the number of calls (and new shapes) drops.
  int merge_rows = 0;
  // Resize of each crop to `height`. Lanczos-4 (the default) keeps the gaps between Latin words that bilinear blurs
  // away; linear is PaddleOCR's exact semantics (docs/BENCHMARKS.md: every metric per mode on every set).
  RecInterp interp = RecInterp::kLanczos;
  // The model returns Top1 pairs f32 [batch, steps, 2] (largest probability, its class) instead of every class's
  // probability: set by Pipeline::load when the recogniser was loaded with a top-1 output (device profile).
  bool top1 = false;
  // An image's recognition calls go out at once, each on its own thread (the device profile: a GPU backend overlaps
  // them on its streams, so one image's calls take about as long as its longest), instead of one after another.
  // Where the caller already runs one image per thread (SerialScope), they go one after another either way.
  bool concurrent_calls = false;
  // The model takes each row's bytes, u8 [rows, height, width, 4] (BGR and a mask byte: 255 on the crop, 0 on the
  // padding), and normalises them on its backend with rec_normalize_table() (the same floats): set by Pipeline::load
  // when the recogniser was loaded so (device profile, where the backend runs ImageLut). A third of the bytes cross
  // and the host's normalisation pass goes away.
  bool bytes = false;
};

// Writes one crop into `dst` (3 x height x width floats, CHW): resized (`interp`) to `height` rows keeping its
// aspect ratio (ceil), capped at `width` columns, scaled to [-1, 1], zeros to the right.
void rec_normalize(const cv::Mat& crop, int height, int width, float* dst, RecInterp interp = RecInterp::kLinear);

// rec_normalize's table: f32 [3, 256], every byte's value in [-1, 1] (the same for each channel).
Tensor rec_normalize_table();

// Writes one crop into `dst` (height x width x 4 bytes, HWC): resized as rec_normalize does, its BGR bytes with a mask
// byte of 255, zeros to the right (mask 0: the model's ImageLut makes those values 0, rec_normalize's padding).
void rec_bytes(const cv::Mat& crop, int height, int width, uint8_t* dst, RecInterp interp = RecInterp::kLinear);

// A call's input: f32 [rows, 3, height, width] or, with `bytes`, u8 [rows, height, width, 4]; the rows from
// `filled_rows` on are zeros (padding rows), the others for rec_fill_row to write: a crop into row `row` (rec_normalize
// or rec_bytes by the input's type).
Tensor rec_input(bool bytes, int64_t rows, int height, int width, int64_t filled_rows);
void rec_fill_row(Tensor& input, int64_t row, const cv::Mat& crop, RecInterp interp);

// Input width of a batch whose widest crop has aspect ratio `max_ratio` (width / height), bucketed as configured.
int rec_batch_width(double max_ratio, const RecOptions& options);

class Recognizer {
 public:
  Recognizer(std::shared_ptr<runtime::Runner> model, Dictionary dict, RecOptions options)
      : model_(std::move(model)), dict_(std::move(dict)), options_(options) {}

  // Reads each crop (8-bit BGR); the results follow the crops' order. Fails when the model fails or its
  // output does not match the dictionary. `calls`, when given, gets one entry per model call made. `interp`
  // overrides the options' resize for this call (a request's own rec_interp). `times`, when given, gets the host
  // work around the calls (prep, finish) and each call's profile.
  Result<std::vector<RecText>> recognize(const std::vector<cv::Mat>& crops,
                                         std::vector<runtime::CallInfo>* calls = nullptr,
                                         std::optional<RecInterp> interp = std::nullopt,
                                         ModelTimes* times = nullptr) const;

  const Dictionary& dictionary() const { return dict_; }
  const RecOptions& options() const { return options_; }
  runtime::Runner& model() const { return *model_; }

 private:
  std::shared_ptr<runtime::Runner> model_;
  Dictionary dict_;
  RecOptions options_;
};

struct ClsOptions {
  int height = 48;
  int width = 192;
  int batch = 6;
  float thresh = 0.9f;  // a crop is turned when "upside down" wins with more than this probability
};

// The text-direction classifier: turns crops read upside down by 180 degrees.
class AngleClassifier {
 public:
  AngleClassifier(std::shared_ptr<runtime::Runner> model, ClsOptions options)
      : model_(std::move(model)), options_(options) {}

  // Rotates in place the crops classified as upside down; returns how many were turned. `times` as for recognize.
  Result<int> apply(std::vector<cv::Mat>& crops, ModelTimes* times = nullptr) const;

 private:
  std::shared_ptr<runtime::Runner> model_;
  ClsOptions options_;
};

}  // namespace steadyocr::pipeline

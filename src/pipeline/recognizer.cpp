#include "pipeline/recognizer.h"

#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>

#include "core/parallel.h"
#include "core/timer.h"
#include "pipeline/lanczos.h"

namespace steadyocr::pipeline {

namespace {

// The 256 normalised values, by the expression the loop used per pixel ((v / 255 - 0.5) / 0.5: the same floats).
const std::array<float, 256>& normalize_lut() {
  static const auto kLut = [] {
    std::array<float, 256> t{};
    for (int v = 0; v < 256; ++v) t[v] = (static_cast<float>(v) / 255.0f - 0.5f) / 0.5f;
    return t;
  }();
  return kLut;
}

// The crop resized to `height` rows keeping its aspect ratio (ceil), capped at `width`; empty when nothing is left.
cv::Mat rec_resize(const cv::Mat& crop, int height, int width, RecInterp interp) {
  double want = std::ceil(static_cast<double>(height * crop.cols) / static_cast<double>(crop.rows));
  int resized_w = want > width ? width : static_cast<int>(want);
  if (resized_w <= 0) return {};
  cv::Mat resized;
  if (interp == RecInterp::kLanczos) {
    lanczos4_resize(crop, resized, cv::Size(resized_w, height));  // OpenCV's bytes, ~5 times faster (lanczos.h)
    return resized;
  }
  cv::resize(crop, resized, cv::Size(resized_w, height), 0, 0,
             interp == RecInterp::kCubic ? cv::INTER_CUBIC : cv::INTER_LINEAR);
  return resized;
}

}  // namespace

void rec_normalize(const cv::Mat& crop, int height, int width, float* dst, RecInterp interp) {
  const size_t plane = static_cast<size_t>(height) * width;
  const cv::Mat resized = rec_resize(crop, height, width, interp);
  if (resized.empty()) {
    std::fill(dst, dst + 3 * plane, 0.f);
    return;
  }
  const int resized_w = resized.cols;
  const std::array<float, 256>& lut = normalize_lut();
  for (int y = 0; y < height; ++y) {
    const uint8_t* row = resized.ptr<uint8_t>(y);
    float* d0 = dst + static_cast<size_t>(y) * width;
    float* d1 = d0 + plane;
    float* d2 = d1 + plane;
    for (int x = 0; x < resized_w; ++x) {
      d0[x] = lut[row[3 * x]];
      d1[x] = lut[row[3 * x + 1]];
      d2[x] = lut[row[3 * x + 2]];
    }
    for (float* d : {d0, d1, d2}) std::fill(d + resized_w, d + width, 0.f);  // zeros to the right
  }
}

Tensor rec_normalize_table() {
  Tensor t = Tensor::empty(DType::kF32, {3, 256});
  for (int c = 0; c < 3; ++c) std::copy_n(normalize_lut().data(), 256, t.data<float>() + c * 256);
  return t;
}

void rec_bytes(const cv::Mat& crop, int height, int width, uint8_t* dst, RecInterp interp) {
  const cv::Mat resized = rec_resize(crop, height, width, interp);
  const int resized_w = resized.empty() ? 0 : resized.cols;
  for (int y = 0; y < height; ++y) {
    uint8_t* d = dst + static_cast<size_t>(y) * width * 4;
    if (resized_w > 0) {
      const uint8_t* row = resized.ptr<uint8_t>(y);
      for (int x = 0; x < resized_w; ++x) {
        d[4 * x] = row[3 * x];
        d[4 * x + 1] = row[3 * x + 1];
        d[4 * x + 2] = row[3 * x + 2];
        d[4 * x + 3] = 255;
      }
    }
    std::memset(d + 4 * resized_w, 0, static_cast<size_t>(width - resized_w) * 4);  // mask 0 to the right
  }
}

Tensor rec_input(bool bytes, int64_t rows, int height, int width, int64_t filled_rows) {
  Tensor t = bytes ? Tensor::empty(DType::kU8, {rows, height, width, 4})
                   : Tensor::empty(DType::kF32, {rows, 3, height, width});
  const size_t row_bytes = t.nbytes() / static_cast<size_t>(std::max<int64_t>(rows, 1));
  const int64_t from = std::clamp<int64_t>(filled_rows, 0, rows);
  std::memset(static_cast<char*>(t.raw()) + static_cast<size_t>(from) * row_bytes, 0,
              static_cast<size_t>(rows - from) * row_bytes);
  return t;
}

void rec_fill_row(Tensor& input, int64_t row, const cv::Mat& crop, RecInterp interp) {
  if (input.dtype() == DType::kU8) {
    const int h = static_cast<int>(input.dim(1)), w = static_cast<int>(input.dim(2));
    rec_bytes(crop, h, w, input.data<uint8_t>() + static_cast<size_t>(row) * h * w * 4, interp);
  } else {
    const int h = static_cast<int>(input.dim(2)), w = static_cast<int>(input.dim(3));
    rec_normalize(crop, h, w, input.data<float>() + static_cast<size_t>(row) * 3 * h * w, interp);
  }
}

int rec_batch_width(double max_ratio, const RecOptions& options) {
  double ratio = std::max(options.min_width / static_cast<double>(options.height), max_ratio);
  int width = static_cast<int>(options.height * ratio);
  if (options.width_bucket > 0 && width > options.min_width) {
    const int over = width - options.min_width;
    width = options.min_width + (over + options.width_bucket - 1) / options.width_bucket * options.width_bucket;
  }
  return width;
}

Result<std::vector<RecText>> Recognizer::recognize(const std::vector<cv::Mat>& crops,
                                                   std::vector<runtime::CallInfo>* calls,
                                                   std::optional<RecInterp> interp_override, ModelTimes* times) const {
  ModelTimes local;
  ModelTimes& t = times ? *times : local;
  const RecInterp interp = interp_override.value_or(options_.interp);
  std::vector<RecText> out(crops.size());
  if (crops.empty()) return out;
  std::vector<double> ratio(crops.size());
  for (size_t i = 0; i < crops.size(); ++i) ratio[i] = crops[i].cols / static_cast<double>(crops[i].rows);
  // Similar widths share a batch, so little of each batch is padding.
  std::vector<size_t> order(crops.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratio[a] < ratio[b]; });

  const int h = options_.height;
  const size_t batch = static_cast<size_t>(std::max(options_.batch, 1));
  // PaddleOCR's batches (`batch` crops in ratio order, as wide as their widest crop), then same-width neighbours
  // merged into one call where configured.
  struct Group {
    size_t start, n;
    int width;
  };
  std::vector<Group> groups;
  const size_t merge = static_cast<size_t>(std::max(options_.merge_rows, 0));
  for (size_t start = 0; start < order.size(); start += batch) {
    const size_t n = std::min(batch, order.size() - start);
    double max_ratio = 0;
    for (size_t k = 0; k < n; ++k) max_ratio = std::max(max_ratio, ratio[order[start + k]]);
    const int w = rec_batch_width(max_ratio, options_);
    if (!groups.empty() && groups.back().width == w && groups.back().n + n <= merge) {
      groups.back().n += n;
    } else {
      groups.push_back({start, n, w});
    }
  }
  // The inputs are made a wave of groups at a time (one parallel region over every crop of the wave, not one per
  // group: a group holds a few crops, and its slowest resize kept the other cores waiting), the waves bounded in bytes.
  // The calls then go one after another, or at once with concurrent_calls.
  constexpr size_t kWaveBytes = size_t{32} << 20;
  std::vector<Tensor> inputs(groups.size());
  std::vector<runtime::CallInfo> group_call(groups.size());
  std::vector<double> group_finish(groups.size(), 0);
  std::vector<std::pair<size_t, size_t>> rows_of;  // (group, row) of each crop in the wave
  // A group's call and its decoding, once its input is made. Touches only its own entries (and its rows of `out`).
  auto run_group = [&](size_t gi) -> Status {
    const Group& g = groups[gi];
    const size_t start = g.start, n = g.n;
    Tensor input = std::move(inputs[gi]);
    const int64_t rows = input.dim(0);
    ASSIGN_OR_RETURN(Tensor probs, model_->run_call(input, &group_call[gi]));
    Stopwatch finish;
    if (probs.dtype() != DType::kF32 || probs.rank() != 3 || probs.dim(0) != rows) {
      return internal_error("recognition model returned " + probs.describe() + " for input " + input.describe() +
                            "; expected f32[batch, steps, classes]");
    }
    if (options_.top1 && probs.dim(2) != 2) {
      return internal_error("recognition model returned " + probs.describe() +
                            "; its top-1 output should be f32[batch, steps, 2]");
    }
    if (!options_.top1 && probs.dim(2) != dict_.num_classes()) {
      return invalid_argument("recognition model outputs " + std::to_string(probs.dim(2)) + " classes but dictionary " +
                              dict_.path() + " gives " + std::to_string(dict_.num_classes()) + " (" +
                              std::to_string(dict_.num_classes() - 2) +
                              " lines + blank + space); pass the dictionary that belongs to the model with --dict");
    }
    const int steps = static_cast<int>(probs.dim(1)), classes = static_cast<int>(probs.dim(2));
    const float* p = probs.data<float>();
    for (size_t k = 0; k < n; ++k) {
      const float* row = p + k * static_cast<size_t>(steps) * classes;
      out[order[start + k]] =
          options_.top1 ? ctc_greedy_decode_top1(row, steps, dict_) : ctc_greedy_decode(row, steps, classes, dict_);
    }
    group_finish[gi] = finish.elapsed_ms();
    return Status::ok();
  };
  for (size_t wave = 0, g_idx = 0; g_idx < groups.size(); wave = g_idx) {
    Stopwatch prep;
    size_t bytes = 0;
    rows_of.clear();
    for (; g_idx < groups.size() && (g_idx == wave || bytes < kWaveBytes); ++g_idx) {
      const Group& g = groups[g_idx];
      const size_t pad = static_cast<size_t>(std::max(options_.pad_rows, 1));
      const size_t rows = (g.n + pad - 1) / pad * pad;
      inputs[g_idx] = rec_input(options_.bytes, static_cast<int64_t>(rows), h, g.width, static_cast<int64_t>(g.n));
      for (size_t k = 0; k < g.n; ++k) rows_of.emplace_back(g_idx, k);
      bytes += inputs[g_idx].nbytes();
    }
    // Dynamic scheduling: the crops come in ratio order, so equal chunks would give the widest ones to one thread.
    parallel_for_each(static_cast<int64_t>(rows_of.size()), [&](int64_t i) {
      const auto [gi, k] = rows_of[static_cast<size_t>(i)];
      const Group& g = groups[gi];
      rec_fill_row(inputs[gi], static_cast<int64_t>(k), crops[order[g.start + k]], interp);
    });
    t.prep += prep.elapsed_ms();
    const size_t n_groups = g_idx - wave;
    if (options_.concurrent_calls && n_groups > 1) {
      std::vector<Status> status(n_groups);
      // One thread per call, whatever the cores free now: the calls wait on the device, they do not compute.
      parallel_for_each(
          static_cast<int64_t>(n_groups), [&](int64_t i) { status[i] = run_group(wave + i); },
          static_cast<int>(n_groups));
      for (const Status& st : status) RETURN_IF_ERROR(st);
    } else {
      for (size_t gi = wave; gi < g_idx; ++gi) RETURN_IF_ERROR(run_group(gi));
    }
    for (size_t gi = wave; gi < g_idx; ++gi) {
      if (calls) calls->push_back(group_call[gi]);
      t.add_call(group_call[gi].profile);
      t.finish += group_finish[gi];
    }
  }
  return out;
}

Result<int> AngleClassifier::apply(std::vector<cv::Mat>& crops, ModelTimes* times) const {
  ModelTimes local;
  ModelTimes& t = times ? *times : local;
  int turned = 0;
  const int h = options_.height, w = options_.width;
  const size_t batch = static_cast<size_t>(std::max(options_.batch, 1));
  for (size_t start = 0; start < crops.size(); start += batch) {
    Stopwatch prep;
    const size_t n = std::min(batch, crops.size() - start);
    Tensor input = Tensor::empty(DType::kF32, {static_cast<int64_t>(n), 3, h, w});
    float* base = input.data<float>();
    for (size_t k = 0; k < n; ++k) rec_normalize(crops[start + k], h, w, base + k * 3 * h * w);
    t.prep += prep.elapsed_ms();
    runtime::CallInfo call;
    ASSIGN_OR_RETURN(Tensor probs, model_->run_call(input, &call));
    t.add_call(call.profile);
    Stopwatch finish;
    if (probs.dtype() != DType::kF32 || probs.rank() != 2 || probs.dim(0) != static_cast<int64_t>(n) ||
        probs.dim(1) < 2) {
      return internal_error("angle classifier returned " + probs.describe() + " for input " + input.describe() +
                            "; expected f32[batch, 2]");
    }
    const int64_t classes = probs.dim(1);
    const float* p = probs.data<float>();
    for (size_t k = 0; k < n; ++k) {
      const float* row = p + k * classes;
      int64_t best = std::max_element(row, row + classes) - row;
      if (best == 1 && row[1] > options_.thresh) {
        cv::rotate(crops[start + k], crops[start + k], cv::ROTATE_180);
        ++turned;
      }
    }
    t.finish += finish.elapsed_ms();
  }
  return turned;
}

}  // namespace steadyocr::pipeline

// Per-model latency of the three PP-OCR models on every backend in this build (Google Benchmark):
// det at typical page sizes, rec at the pipeline's batch of 6 and two widths, cls at its batch.
// The first run (planning) is excluded; inputs are image-like. Threads: OMP_NUM_THREADS or all cores.
//   build/bench/steadyocr_bench --benchmark_filter=cpu --benchmark_format=json > out.json
#include <benchmark/benchmark.h>

#include <cmath>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "runtime/backend_registry.h"
#include "runtime/model.h"

namespace steadyocr {
namespace {

std::string models_dir() {
  if (const char* e = std::getenv("STEADYOCR_MODELS")) return e;
  return std::string(STEADYOCR_SOURCE_DIR) + "/models";
}

// Smooth gradients with a little texture, in the range the normalised pipeline inputs have.
Tensor image_like(const Shape& s) {
  Tensor t = Tensor::empty(DType::kF32, s);
  float* p = t.data<float>();
  const int64_t w = s[3], hw = s[2] * w;
  for (int64_t i = 0; i < t.numel(); ++i) {
    const int64_t x = i % w, y = (i % hw) / w;
    p[i] = 1.2f * std::sin(0.05f * x) * std::cos(0.07f * y) + 0.3f * std::sin(0.9f * (x + 3 * y));
  }
  return t;
}

struct ModelCase {
  const char* label;
  const char* file;
  Shape shape;
};

void run_model(benchmark::State& state, const std::string& backend_name, const ModelCase& mc) {
  auto backend = runtime::create_backend(backend_name);
  if (!backend.is_ok()) {
    state.SkipWithError(backend.status().to_string().c_str());
    return;
  }
  auto model = runtime::Model::load(models_dir() + "/" + mc.file, backend.value());
  if (!model.is_ok()) {
    state.SkipWithError(model.status().to_string().c_str());
    return;
  }
  Tensor x = image_like(mc.shape);
  auto warm = (*model)->run(x);  // plans this shape
  if (!warm.is_ok()) {
    state.SkipWithError(warm.status().to_string().c_str());
    return;
  }
  for (auto _ : state) {
    auto out = (*model)->run(x);
    benchmark::DoNotOptimize(out);
  }
  state.counters["batch"] = static_cast<double>(mc.shape[0]);
}

const ModelCase kCases[] = {
    {"det_736x960", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 736, 960}},
    {"det_960x640", "ch_PP-OCRv4_det_infer.onnx", {1, 3, 960, 640}},
    {"rec_6x48x320", "ch_PP-OCRv4_rec_infer.onnx", {6, 3, 48, 320}},
    {"rec_6x48x800", "ch_PP-OCRv4_rec_infer.onnx", {6, 3, 48, 800}},
    {"cls_6x48x192", "ch_ppocr_mobile_v2.0_cls_infer.onnx", {6, 3, 48, 192}},
};

const bool kRegistered = [] {
  for (const std::string& b : runtime::available_backends()) {
    for (const ModelCase& mc : kCases) {
      auto* bm = benchmark::RegisterBenchmark(("model/" + b + "/" + mc.label).c_str(),
                                              [b, mc](benchmark::State& st) { run_model(st, b, mc); });
      bm->Unit(benchmark::kMillisecond)->UseRealTime();
      // The reference backend takes seconds per det page: a few iterations are enough.
      if (b == "reference") bm->Iterations(2);
    }
  }
  return true;
}();

}  // namespace
}  // namespace steadyocr

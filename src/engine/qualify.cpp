// Qualification of a rung: the doctor's pre-flight for GPU rungs, the models loaded with fault injection and
// out-of-memory recovery around them, and the numerical self-test against the reference backend.
#include <algorithm>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <random>
#include <tuple>

#include "backends/reference/reference_backend.h"
#include "core/compare.h"
#include "core/log.h"
#include "doctor/knowledge_base.h"
#include "doctor/layers.h"
#include "engine/reference_cache.h"
#include "engine/rung.h"
#include "pipeline/det_preprocess.h"
#include "pipeline/recognizer.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda_plugin.h"
#include "runtime/vulkan_plugin.h"

namespace steadyocr::engine {
namespace {

Tensor self_test_input(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(DType::kF32, shape);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

// The detector's self-test input: two lines of dark text on white, preprocessed like a page. On noise the detector's
// map is ~0 everywhere (sigmoid saturated), where a relative error measures nothing; text gives it a real map.
// `kind`: the host's floats, or the bytes for a detector that normalises on its backend (ImageLut).
Tensor det_self_test_input(pipeline::DetTensor kind = pipeline::DetTensor::kNormalized) {
  cv::Mat page(96, 320, CV_8UC3, cv::Scalar(245, 245, 245));
  cv::putText(page, "steadyocr 2026", {10, 38}, cv::FONT_HERSHEY_SIMPLEX, 1.0, cv::Scalar(20, 20, 20), 2, cv::LINE_AA);
  cv::putText(page, "self-test 0123", {10, 80}, cv::FONT_HERSHEY_DUPLEX, 0.9, cv::Scalar(40, 30, 30), 2, cv::LINE_AA);
  return pipeline::det_preprocess(page, 320, 0, kind).tensor;
}

// A recogniser that takes bytes (pipeline::RecOptions::bytes): random rows of u8 [N, H, W, 4] for the f32 [N, 3, H, W]
// `shape`, each row's crop a different width (mask 255) and zeros after it (mask 0), and the floats they stand for
// (pipeline::rec_normalize_table(), 0 on the padding), which the reference reads.
std::pair<Tensor, Tensor> rec_bytes_self_test_input(const Shape& shape, uint32_t seed) {
  const int64_t n = shape[0], h = shape[2], w = shape[3];
  Tensor bytes = Tensor::empty(DType::kU8, {n, h, w, 4}), floats = Tensor::empty(DType::kF32, shape);
  const Tensor table = pipeline::rec_normalize_table();
  std::mt19937 rng(seed);
  for (int64_t b = 0; b < n; ++b) {
    const int64_t crop_w = std::max<int64_t>(1, w - b * w / (2 * n));
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        uint8_t* px = bytes.data<uint8_t>() + ((b * h + y) * w + x) * 4;
        const bool on = x < crop_w;
        for (int c = 0; c < 3; ++c) {
          px[c] = on ? static_cast<uint8_t>(rng() & 0xff) : 0;
          floats.data<float>()[((b * 3 + c) * h + y) * w + x] = on ? table.data<float>()[c * 256 + px[c]] : 0.f;
        }
        px[3] = on ? 255 : 0;
      }
    }
  }
  return {std::move(bytes), std::move(floats)};
}

// The self-test's failure: the finding names the doctor's level that finds the kernel at fault.
Status self_test_mismatch(const std::string& msg) {
  return Status(StatusCode::kDeviceError, msg,
                {"SELF_TEST_MISMATCH", msg,
                 "run `steadyocr doctor --level 3` (it compares every kernel with the reference and names the one "
                 "that differs)"});
}

// The reference backend's output for `x` (the same model imported again, its plain kernels).
Result<Tensor> reference_output(const runtime::Model& model, const Tensor& x) {
  auto ref_model = runtime::Model::load(model.path(), std::shared_ptr<Backend>(make_reference_backend()));
  if (!ref_model.is_ok()) return ref_model.status();
  return (*ref_model)->run(x);
}

Status judge_self_test(const std::string& stage, const runtime::Model& model, const Tensor& x, Tensor got, Tensor want,
                       double tolerance, bool bytes, const std::string& note, std::string* summary);

// Runs `model` on a fixed input and compares with the same model on the reference backend (its output kept in
// `cache` between processes; a disagreement with a kept output is judged again against a fresh one).
Status self_test_model(const std::string& stage, runtime::Model& model, const Shape& shape, double tolerance,
                       ReferenceCache& cache, std::string* summary) {
  Tensor x = stage == "det" ? det_self_test_input() : self_test_input(shape, 20261130);
  // A model that takes bytes gets them (the detector: the same page; the recogniser: random rows and padding); the
  // reference reads the host's floats of them.
  const bool bytes = model.options().image_lut.defined();
  Tensor run_input = x;
  if (bytes && stage == "det") {
    run_input = det_self_test_input(pipeline::DetTensor::kBytes);
  } else if (bytes) {
    std::tie(run_input, x) = rec_bytes_self_test_input(shape, 20261130);
  }
  ASSIGN_OR_RETURN(Tensor got, model.run(run_input));
  if (std::optional<Tensor> kept = cache.find(model.graph().source_digest(), stage, x)) {
    std::string attempt;
    if (judge_self_test(stage, model, x, got, *kept, tolerance, bytes, ", reference kept", &attempt).is_ok()) {
      *summary += attempt;
      return Status::ok();
    }
    log::warn("engine", "self-test: {} on {} disagrees with the kept reference output {}; computing it again", stage,
              model.backend_name(), cache.path_for(model.graph().source_digest(), stage, x));
  }
  ASSIGN_OR_RETURN(Tensor want, reference_output(model, x));
  Status s = judge_self_test(stage, model, x, got, want, tolerance, bytes, "", summary);
  if (s.is_ok()) cache.keep(model.graph().source_digest(), stage, x, want);
  return s;
}

// Compares a rung's output with the reference's: nmse within `tolerance` (top-1 outputs: each step's class holds the
// reference's largest probability). Appends the figures to `summary`.
Status judge_self_test(const std::string& stage, const runtime::Model& model, const Tensor& x, Tensor got, Tensor want,
                       double tolerance, bool bytes, const std::string& note, std::string* summary) {
  std::string top1_note;
  if (model.options().top1_output) {
    // The model returns top-1 pairs: each value against the reference's largest probability (nmse), and each class
    // must hold (within the tolerance) the reference's largest probability: a near tie may pick either.
    const int64_t classes = want.dim(-1), rows = want.numel() / classes;
    if (got.numel() != 2 * rows) {
      return internal_error("self-test: " + stage + " top-1 output is " + got.describe() + " for " + want.describe());
    }
    Tensor got_values = Tensor::empty(DType::kF32, {rows}), want_values = Tensor::empty(DType::kF32, {rows});
    int64_t off = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = got.data<float>() + 2 * r;
      const float* row = want.data<float>() + r * classes;
      const float best = *std::max_element(row, row + classes);
      const int64_t c = static_cast<int64_t>(g[1]);
      if (c < 0 || c >= classes || !(row[c] >= best - 1e-3f)) ++off;
      got_values.data<float>()[r] = g[0];
      want_values.data<float>()[r] = best;
    }
    if (off > 0) {
      return self_test_mismatch(
          fmt::format("self-test: {} top-1 classes on {} differ from the reference in {} of {} "
                      "steps",
                      stage, model.backend_name(), off, rows));
    }
    got = std::move(got_values);
    want = std::move(want_values);
    top1_note = fmt::format(", top-1 of {} steps", rows);
  }
  double e = compare_tensors(got, want).nmse;
  *summary += fmt::format("{} {} nmse={:.2e} (tolerance {:.0e}{}{}", stage, shape_str(x.shape()), e, tolerance,
                          top1_note, note);
  if (stage == "det") {
    int64_t text = 0;
    for (int64_t i = 0; i < want.numel(); ++i) text += want.data<float>()[i] > 0.3f;
    *summary += fmt::format(", {} text pixels{}", text, bytes ? ", from the picture's bytes" : "");
  }
  *summary += "); ";
  if (!(e <= tolerance)) {
    return self_test_mismatch(
        fmt::format("self-test: {} model output on {} differs from the reference (nmse {:.3e} > "
                    "{:.0e})",
                    stage, model.backend_name(), e, tolerance));
  }
  return Status::ok();
}

}  // namespace

doctor::Layer1Facts facts_for_device(doctor::Layer1Facts facts, const std::string& device) {
  if (device.rfind("GPU-", 0) != 0) return facts;  // the process's own view, or a MIG instance (its worker checks)
  auto& devs = facts.driver.devices;
  auto it = std::find_if(devs.begin(), devs.end(), [&](const doctor::DriverDevice& d) { return d.uuid == device; });
  if (it == devs.end()) return facts;
  doctor::DriverDevice one = *it;
  devs = {one};
  facts.driver.device_count = 1;
  auto& nv = facts.nvml.devices;
  nv.erase(std::remove_if(nv.begin(), nv.end(), [&](const doctor::NvmlDevice& n) { return n.uuid != device; }),
           nv.end());
  return facts;
}

Status gpu_preflight(const std::string& device) {
  const auto& kb = doctor::KnowledgeBase::builtin();
  doctor::Layer1Facts l1 = facts_for_device(doctor::probe_layer1(), device);
  std::vector<doctor::CheckResult> checks = doctor::evaluate_layer1(l1);
  bool l1_ok = true;
  for (auto& c : checks) l1_ok &= c.status != doctor::CheckStatus::kFail;
  if (l1_ok) {
    auto l2 = doctor::evaluate_layer2(doctor::probe_layer2(l1.driver, /*query_runtime=*/false,
                                                           /*every_plugin=*/false));
    checks.insert(checks.end(), l2.begin(), l2.end());
  }
  for (auto& c : checks) {
    if (c.status != doctor::CheckStatus::kFail) continue;
    doctor::annotate(c, kb);
    return Status(StatusCode::kUnavailable, c.summary,
                  {c.code.empty() ? "DOCTOR_" + c.check : c.code, c.summary, c.fix});
  }
  return Status::ok();
}

Status vulkan_preflight(bool on_ladder) {
  const runtime::VulkanPluginStatus& st = runtime::vulkan_plugin_status();
  if (!st.loaded || st.devices.empty()) {
    const std::string code = !st.finding.empty() ? st.finding : "L2_VULKAN_PLUGIN_MISSING";
    return Status(StatusCode::kUnavailable, st.error, {code, st.error, ""});
  }
  std::string why;
  if (on_ladder && runtime::vulkan_ladder_device(&why) < 0) {
    return Status(StatusCode::kUnavailable, why, {"L1_VULKAN_CPU_DEVICE_ONLY", why, ""});
  }
  return Status::ok();
}

Result<std::unique_ptr<pipeline::Pipeline>> build_rung_pipeline(const std::string& backend_name,
                                                                const EngineOptions& options,
                                                                const std::shared_ptr<FaultInjector>& injector,
                                                                std::string* self_test_summary) {
  std::shared_ptr<Backend> backend;
  bool cuda = backend_name.rfind("cuda", 0) == 0;
  if (cuda) {
    std::string precision = "fp32";
    bool cudnn = true;
    if (!runtime::parse_cuda_backend_name(backend_name, &precision, &cudnn)) {
      return invalid_argument("unknown CUDA rung '" + backend_name + "'");
    }
    const auto budget = static_cast<size_t>(gpu_mem_budget_mb(options, backend_name));
    auto config = runtime::cuda_backend_config(precision, budget << 20);
    if (budget > 0) {
      log::info("engine", "{}: device memory budget {} MiB ({}); runs wait for memory rather than exceed it",
                backend_name, budget,
                options.gpu_mem_mb == kGpuMemAuto ? "the default; --gpu-mem 0: none" : "--gpu-mem");
    } else {
      log::info("engine", "{}: no device memory budget (--gpu-mem 0)", backend_name);
    }
    config.cudnn = config.cudnn && cudnn;
    // One execution lane per image in flight in the worker (CUDA rungs run in workers only), made before serving.
    config.lanes = worker_jobs(options, backend_name) + 2;
    ASSIGN_OR_RETURN(backend, runtime::create_cuda_backend(config));
    // Faults on a real device are real: the plugin launches the faulting kernel / fails the allocation.
    injector->set_device_hook([](const std::string& kind) {
      std::string k = kind == "sticky" || kind == "launch_failure" ? "illegal_address" : kind;
      if (k != "oom" && k != "illegal_address" && k != "hang" && k != "no_kernel_image" && k != "cudnn_not_supported") {
        return false;
      }
      // A hang must outlast the supervisor's watchdog (the plugin's own release is a safety net).
      Status s = runtime::set_cuda_fault(k == "hang" ? "hang@any:1,timeout_ms=600000" : k + "@any:1");
      if (!s.is_ok()) log::warn("fault", "could not arm {} in the CUDA plugin: {}", k, s.message());
      return s.is_ok();
    });
  } else if (backend_name.rfind("vulkan", 0) == 0) {
    runtime::BackendOptions bo;
    bo.gpu_memory_budget_bytes = static_cast<size_t>(gpu_mem_budget_mb(options, backend_name)) << 20;
    ASSIGN_OR_RETURN(backend, runtime::create_backend(backend_name, bo));
  } else {
    ASSIGN_OR_RETURN(backend, runtime::create_backend(backend_name));
  }
  std::map<std::string, std::shared_ptr<runtime::Model>> models;
  auto wrap = [&](const std::string& stage, std::shared_ptr<runtime::Model> m) -> std::shared_ptr<runtime::Runner> {
    models[stage] = m;
    std::shared_ptr<runtime::Runner> r = m;
    if (!injector->empty()) r = std::make_shared<FaultInjectingRunner>(stage, r, injector);
    return std::make_shared<OomResilientRunner>(
        stage, r, [m] { m->clear_plans(); }, options.retry);
  };
  pipeline::PipelineOptions pipeline_options = options.pipeline;
  pipeline_options.cache_dir = options.cache_dir;
  ASSIGN_OR_RETURN(std::unique_ptr<pipeline::Pipeline> p,
                   pipeline::Pipeline::load(options.models, backend, pipeline_options, wrap));
  if (options.self_test && backend_name != "reference") {
    // Reduced precision is judged by a looser bound; fp32 backends must match the oracle closely.
    double tol = backend_name.find("fp16") != std::string::npos ? 2e-3 : 1e-5;
    std::string summary;
    ReferenceCache cache(options.cache_dir);
    for (const auto& [stage, shape] :
         {std::pair<const char*, Shape>{"det", {1, 3, 64, 96}}, {"rec", {2, 3, 48, 96}}, {"cls", {1, 3, 48, 192}}}) {
      if (models.count(stage)) RETURN_IF_ERROR(self_test_model(stage, *models[stage], shape, tol, cache, &summary));
    }
    if (self_test_summary) *self_test_summary = summary;
    log::info("engine", "{} self-test passed: {}", backend_name, summary);
  }
  return p;
}

}  // namespace steadyocr::engine

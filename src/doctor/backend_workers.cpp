// Layer 4 on the backend: N workers, each with its own PreparedGraph (its own stream and buffers), run the
// same graph at once under a watchdog and must agree with a serial run; and device memory must stay flat
// over repeated identical runs.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "core/compare.h"
#include "doctor/device_checks.h"
#include "doctor/test_graphs.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/model.h"

namespace steadyocr::doctor {

namespace {
using Clock = std::chrono::steady_clock;
constexpr double kNmseWorkers = 1e-6;    // the same graph run concurrently vs serially
constexpr int64_t kGrowthLimitMib = 16;  // free device memory may wander this much over identical runs

// The rec model at 48x320 when --models holds it (a real workload), else the synthetic worker graph.
Result<TestGraph> workload(const std::string& models_dir) {
  std::string rec = models_dir + "/ch_PP-OCRv4_rec_infer.onnx";
  if (!models_dir.empty()) {
    auto g = graph::import_onnx(rec);
    if (g.is_ok()) {
      TestGraph tg;
      tg.name = "ch_PP-OCRv4_rec_infer.onnx [1,3,48,320]";
      tg.graph = std::move(g).value();
      const graph::PassOptions passes = runtime::reference_pass_options();
      RETURN_IF_ERROR(graph::specialize(tg.graph, {{1, 3, 48, 320}}, passes));
      RETURN_IF_ERROR(graph::optimize(tg.graph, passes));
      tg.inputs.push_back(random_values({1, 3, 48, 320}, 5));
      return tg;
    }
  }
  return make_worker_graph();
}

struct WorkerState {
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  std::vector<int> done;  // per worker: 0 running, 1 finished
  std::vector<std::string> errors;
  std::vector<double> worst_nmse;
  std::vector<double> ms;
};
}  // namespace

ChildCheckResult check_backend_workers(const PluginFacts& plugin, const nlohmann::json& args) {
  int device = args.value("device", 0);
  int workers = std::max(1, args.value("workers", 4));
  int iterations = std::max(1, args.value("iterations", 20));
  int deadline_ms = args.value("deadline_ms", 30000);
  auto backend = create_plugin_backend(plugin, device, "fp32", 0);
  if (!backend.is_ok()) {
    return make_child_result("fail", "L3_BACKEND_UNAVAILABLE", backend.status().message(),
                             {{"error", backend.status().message()}});
  }
  auto tg_result = workload(args.value("models_dir", ""));
  if (!tg_result.is_ok()) {
    return make_child_result("skipped", "DOCTOR_CHECK_FAILED_TO_RUN", tg_result.status().message(),
                             {{"error", tg_result.status().message()}});
  }
  auto tg = std::make_shared<TestGraph>(std::move(tg_result).value());

  // Serial baseline and the memory-flatness measurement on one plan.
  ChildCheckResult memory;
  memory.check = "backend_memory";
  std::vector<Tensor> expected;
  auto prepared = (*backend)->prepare(tg->graph);
  Status s = prepared.is_ok() ? Status::ok() : prepared.status();
  for (int i = 0; i < 3 && s.is_ok(); ++i) s = (*prepared)->run(tg->inputs, &expected);
  if (!s.is_ok()) {
    return make_child_result("fail", "L4_STREAM_ERROR", "serial run failed: " + s.to_string(),
                             {{"error", s.to_string()}, {"graph", tg->name}});
  }
  auto before = free_device_bytes(plugin, device);
  std::vector<Tensor> out;
  for (int i = 0; i < iterations && s.is_ok(); ++i) s = (*prepared)->run(tg->inputs, &out);
  auto after = free_device_bytes(plugin, device);
  if (!before.is_ok() || !after.is_ok() || !s.is_ok()) {
    std::string why = !s.is_ok()        ? s.to_string()
                      : !before.is_ok() ? before.status().message()
                                        : after.status().message();
    memory =
        make_child_result("skipped", "DOCTOR_CHECK_FAILED_TO_RUN", "memory not measured: " + why, {{"error", why}});
  } else {
    int64_t growth_mib = (*before - *after) >> 20;
    nlohmann::json ev = {{"graph", tg->name},
                         {"iterations", iterations},
                         {"free_before_mib", *before >> 20},
                         {"free_after_mib", *after >> 20},
                         {"growth_mib", growth_mib},
                         {"limit_mib", kGrowthLimitMib}};
    memory =
        growth_mib > kGrowthLimitMib
            ? make_child_result("fail", "L4_MEMORY_GROWTH",
                                fmt::format("free memory fell {} MiB over {} runs", growth_mib, iterations), ev)
            : make_child_result("pass", "",
                                fmt::format("free memory flat over {} runs ({:+} MiB)", iterations, -growth_mib), ev);
    memory.check = "backend_memory";
  }

  // Concurrent workers, each with its own plan; the state outlives this function if a worker hangs.
  auto state = std::make_shared<WorkerState>();
  state->done.assign(workers, 0);
  state->errors.assign(workers, "");
  state->worst_nmse.assign(workers, 0.0);
  state->ms.assign(workers, 0.0);
  std::shared_ptr<Backend> be = *backend;
  auto ref = std::make_shared<std::vector<Tensor>>(expected);
  auto t0 = Clock::now();
  for (int w = 0; w < workers; ++w) {
    std::thread([state, be, tg, ref, w, iterations] {
      auto start = Clock::now();
      std::string error;
      double worst = 0;
      auto plan = be->prepare(tg->graph);
      if (!plan.is_ok()) error = "prepare: " + plan.status().to_string();
      std::vector<Tensor> outputs;
      for (int i = 0; i < iterations && error.empty(); ++i) {
        Status st = (*plan)->run(tg->inputs, &outputs);
        if (!st.is_ok())
          error = fmt::format("run {}: {}", i, st.to_string());
        else
          worst = std::max(worst, compare_tensors(outputs.front(), ref->front()).nmse);
      }
      std::lock_guard<std::mutex> lock(state->mu);
      state->errors[w] = error;
      state->worst_nmse[w] = worst;
      state->ms[w] = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      state->done[w] = 1;
      ++state->finished;
      state->cv.notify_all();
    }).detach();
  }
  std::unique_lock<std::mutex> lock(state->mu);
  bool all = state->cv.wait_until(lock, t0 + std::chrono::milliseconds(deadline_ms),
                                  [&] { return state->finished == workers; });
  nlohmann::json ev = {{"graph", tg->name},          {"workers", workers},     {"iterations", iterations},
                       {"deadline_ms", deadline_ms}, {"worker_ms", state->ms}, {"worst_nmse", state->worst_nmse},
                       {"nmse_limit", kNmseWorkers}};
  ChildCheckResult streams;
  if (!all) {
    std::vector<int> stuck;
    for (int w = 0; w < workers; ++w)
      if (!state->done[w]) stuck.push_back(w);
    ev["stuck"] = stuck.size();
    ev["stuck_workers"] = stuck;
    streams = make_child_result(
        "fail", "L4_STREAM_HANG",
        fmt::format("{} of {} workers still running after {} ms", stuck.size(), workers, deadline_ms), ev);
  } else {
    std::string first_error;
    double worst = 0;
    for (int w = 0; w < workers; ++w) {
      if (first_error.empty() && !state->errors[w].empty())
        first_error = fmt::format("worker {}: {}", w, state->errors[w]);
      worst = std::max(worst, state->worst_nmse[w]);
    }
    if (!first_error.empty()) {
      ev["error"] = first_error;
      streams = make_child_result("fail", "L4_STREAM_ERROR", first_error, ev);
    } else if (worst > kNmseWorkers) {
      ev["what"] = fmt::format("{} workers x {} runs of {}: worst nmse {:.3g} vs the serial run (limit {:.0e})",
                               workers, iterations, tg->name, worst, kNmseWorkers);
      streams = make_child_result("fail", "L4_CONCURRENCY_MISMATCH", ev["what"].get<std::string>(), ev);
    } else {
      double slowest = *std::max_element(state->ms.begin(), state->ms.end());
      streams = make_child_result("pass", "",
                                  fmt::format("{} workers x {} runs of {} agree with the serial run ({:.0f} ms)",
                                              workers, iterations, tg->name, slowest),
                                  ev);
    }
  }
  streams.check = "backend_workers";
  ChildCheckResult both;
  both.parts = {streams, memory};
  return both;
}

}  // namespace steadyocr::doctor

#include "engine/recovery.h"

#include <cstring>

#include "core/log.h"
#include "core/metrics.h"
#include "doctor/knowledge_base.h"

namespace steadyocr::engine {

bool is_rung_failure(const Status& s) {
  switch (s.code()) {
    case StatusCode::kDeviceFault:
    case StatusCode::kDeviceError:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kOutOfMemory:
      return true;
    default:
      return false;
  }
}

NextStep next_step(const RetryPolicy& policy, const Status& s, int attempt) {
  if (!is_rung_failure(s)) return NextStep::kDone;
  // A lost context has already been retried on restarted workers by the supervisor; a hang likewise. Other device
  // errors may be collateral of a loss the restart healed: try the same rung again first.
  const bool retried_by_supervisor = s.code() == StatusCode::kDeviceFault || s.code() == StatusCode::kDeadlineExceeded;
  if (!retried_by_supervisor && attempt < policy.attempts_per_rung) return NextStep::kRetryHere;
  return NextStep::kStepDown;
}

Finding failure_finding(const Status& s, bool gpu) {
  if (s.finding()) {
    Finding f = *s.finding();
    // A backend names the cause by its code; what to do about it is the knowledge base's.
    if (f.fix.empty()) {
      if (const doctor::KbEntry* e = doctor::KnowledgeBase::builtin().find(f.code)) f.fix = e->fix;
    }
    return f;
  }
  const std::string doctor = gpu ? "run `steadyocr doctor --level 4`; the engine re-probes the device and moves back "
                                   "when it is healthy"
                                 : "";
  switch (s.code()) {
    case StatusCode::kDeadlineExceeded:
      return {"WORKER_HANG", s.message(), doctor};
    case StatusCode::kDeviceFault:
      return {"DEVICE_FAULT", s.message(), doctor};
    case StatusCode::kOutOfMemory:
      return {"OUT_OF_MEMORY", s.message(), "raise --gpu-mem or send smaller images"};
    case StatusCode::kUnavailable:
      return {"WORKER_UNAVAILABLE", s.message(), doctor};
    default:
      return {"DEVICE_ERROR", s.message(), doctor};
  }
}

Result<Tensor> OomResilientRunner::attempt(const Tensor& input, runtime::CallInfo* info) {
  runtime::CallInfo call;
  auto r = inner_->run_call(input, &call);
  if (info) {
    const runtime::CallProfile before = info->profile;
    *info = call;
    info->profile += before;
  }
  return r;
}

Result<Tensor> OomResilientRunner::run_call(const Tensor& input, runtime::CallInfo* info) {
  if (info) *info = {};
  auto r = attempt(input, info);
  if (r.is_ok() || r.status().code() != StatusCode::kOutOfMemory) return r;
  metrics::inc("steadyocr_oom_total", {{"stage", stage_}});
  for (int retry = 0; retry < policy_.oom_retries; ++retry) {
    log::warn("runtime", "{}: out of memory on {} ({}); freeing caches and retrying", stage_, input.describe(),
              r.status().message());
    if (free_caches_) free_caches_();
    r = attempt(input, info);
    if (r.is_ok() || r.status().code() != StatusCode::kOutOfMemory) {
      if (r.is_ok()) metrics::inc("steadyocr_oom_recovered_total", {{"stage", stage_}, {"how", "retry"}});
      return r;
    }
  }
  return run_split(input, 0, info);
}

Result<Tensor> OomResilientRunner::run_split(const Tensor& input, int depth, runtime::CallInfo* info) {
  int64_t n = input.rank() ? input.dim(0) : 1;
  if (n <= 1) {
    return Status(StatusCode::kResourceExhausted,
                  stage_ + ": one item of " + input.describe() +
                      " does not fit in device memory even alone; raise --gpu-mem, use a smaller input, or run on "
                      "another backend");
  }
  log::warn("runtime", "{}: out of memory with a batch of {}; splitting it in two", stage_, n);
  std::vector<Tensor> outs;
  for (auto [b, e] : {std::pair<int64_t, int64_t>{0, n / 2}, {n / 2, n}}) {
    Tensor part = slice_batch(input, b, e);
    auto r = attempt(part, info);
    if (!r.is_ok() && r.status().code() == StatusCode::kOutOfMemory) r = run_split(part, depth + 1, info);
    if (!r.is_ok()) return r.status();
    outs.push_back(std::move(*r));
  }
  if (depth == 0) metrics::inc("steadyocr_oom_recovered_total", {{"stage", stage_}, {"how", "split"}});
  return concat_batch(outs);
}

Tensor slice_batch(const Tensor& t, int64_t begin, int64_t end) {
  Shape s = t.shape();
  s[0] = end - begin;
  Tensor out = Tensor::empty(t.dtype(), s);
  size_t row = t.nbytes() / static_cast<size_t>(std::max<int64_t>(t.dim(0), 1));
  std::memcpy(out.raw(), static_cast<const char*>(t.raw()) + row * begin, row * (end - begin));
  return out;
}

Result<Tensor> concat_batch(const std::vector<Tensor>& parts) {
  if (parts.empty()) return invalid_argument("concat_batch: nothing to concatenate");
  Shape s = parts[0].shape();
  int64_t n = 0;
  for (auto& p : parts) {
    Shape ps = p.shape();
    if (ps.size() != s.size() || !std::equal(ps.begin() + 1, ps.end(), s.begin() + 1)) {
      return internal_error("concat_batch: parts " + shape_str(ps) + " and " + shape_str(s) + " differ");
    }
    n += ps[0];
  }
  s[0] = n;
  Tensor out = Tensor::empty(parts[0].dtype(), s);
  char* dst = static_cast<char*>(out.raw());
  for (auto& p : parts) {
    std::memcpy(dst, p.raw(), p.nbytes());
    dst += p.nbytes();
  }
  return out;
}

}  // namespace steadyocr::engine

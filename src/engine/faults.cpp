#include "engine/faults.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/log.h"
#include "core/metrics.h"

namespace steadyocr::engine {
namespace {

const char* const kKinds[] = {"oom",  "oom_batch", "sticky",          "illegal_address",    "launch_failure",
                              "hang", "error",     "no_kernel_image", "cudnn_not_supported"};
const char* const kStages[] = {"det", "rec", "cls", "any"};

template <size_t N>
bool one_of(const std::string& s, const char* const (&list)[N]) {
  for (const char* k : list) {
    if (s == k) return true;
  }
  return false;
}

bool is_sticky(const std::string& kind) {
  return kind == "sticky" || kind == "illegal_address" || kind == "launch_failure";
}

}  // namespace

std::string FaultRule::describe() const {
  return (gpu >= 0 ? "gpu" + std::to_string(gpu) + "/" : std::string()) + kind + "@" + stage + ":" +
         std::to_string(nth) + (from_nth_on ? "+" : "") + (persistent ? "!" : "");
}

namespace {
int64_t now_epoch_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}
}  // namespace

bool FaultRule::expired() const {
  return until_ms > 0 && now_epoch_ms() >= until_ms;
}

Result<std::vector<FaultRule>> parse_fault_spec(const std::string& spec) {
  std::vector<FaultRule> rules;
  size_t pos = 0;
  while (pos <= spec.size()) {
    size_t comma = spec.find_first_of(",;", pos);
    std::string rule = spec.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    pos = comma == std::string::npos ? spec.size() + 1 : comma + 1;
    while (!rule.empty() && rule.back() == ' ') rule.pop_back();
    while (!rule.empty() && rule.front() == ' ') rule.erase(rule.begin());
    if (rule.empty()) continue;
    FaultRule r;
    std::string body = rule;
    if (body.rfind("gpu", 0) == 0) {
      const size_t slash = body.find('/');
      const std::string k = slash == std::string::npos ? std::string() : body.substr(3, slash - 3);
      char* end = nullptr;
      const long gpu = std::strtol(k.c_str(), &end, 10);
      if (k.empty() || *end != '\0' || gpu < 0 || gpu > 1024) {
        return invalid_argument(
            "STEADYOCR_FAULT rule '" + rule +
            "': a device prefix is 'gpuK/' with K the engine's GPU from 0, e.g. gpu1/sticky@det:2!");
      }
      r.gpu = static_cast<int>(gpu);
      body.erase(0, slash + 1);
    }
    if (size_t tilde = body.rfind('~'); tilde != std::string::npos) {
      const std::string secs = body.substr(tilde + 1);
      char* end = nullptr;
      const double s = std::strtod(secs.c_str(), &end);
      if (secs.empty() || *end != '\0' || !(s > 0) || tilde == 0 || body[tilde - 1] != '!') {
        return invalid_argument("STEADYOCR_FAULT rule '" + rule +
                                "': '~S' (heal after S seconds) follows '!' and S is a positive number, e.g. "
                                "illegal_address@det:2!~30");
      }
      r.until_ms = now_epoch_ms() + static_cast<int64_t>(s * 1000);
      body.erase(tilde);
    }
    if (!body.empty() && body.back() == '!') {
      r.persistent = true;
      body.pop_back();
    }
    size_t at = body.find('@');
    if (at == std::string::npos) {
      return invalid_argument("STEADYOCR_FAULT rule '" + rule + "' has no '@stage' (e.g. sticky@det:3)");
    }
    r.kind = body.substr(0, at);
    std::string rest = body.substr(at + 1);
    size_t colon = rest.find(':');
    r.stage = rest.substr(0, colon);
    if (colon != std::string::npos) {
      std::string n = rest.substr(colon + 1);
      if (!n.empty() && n.back() == '+') {
        r.from_nth_on = true;
        n.pop_back();
      }
      char* end = nullptr;
      r.nth = std::strtoll(n.c_str(), &end, 10);
      if (n.empty() || *end != '\0' || r.nth < 1) {
        return invalid_argument("STEADYOCR_FAULT rule '" + rule + "': call number must be a positive integer");
      }
    }
    if (!one_of(r.kind, kKinds)) {
      return invalid_argument("STEADYOCR_FAULT rule '" + rule + "': unknown kind '" + r.kind +
                              "' (oom, oom_batch, sticky, illegal_address, launch_failure, hang, error, "
                              "no_kernel_image, cudnn_not_supported)");
    }
    if (!one_of(r.stage, kStages)) {
      return invalid_argument("STEADYOCR_FAULT rule '" + rule + "': unknown stage '" + r.stage +
                              "' (det, rec, cls, any)");
    }
    rules.push_back(r);
  }
  return rules;
}

std::string fault_spec(const std::vector<FaultRule>& rules) {
  std::string out;
  for (auto& r : rules) out += (out.empty() ? "" : ",") + r.describe();
  return out;
}

std::string persistent_fault_spec(const std::vector<FaultRule>& rules) {
  std::string out;
  for (auto& r : rules) {
    if (r.persistent) out += (out.empty() ? "" : ",") + r.describe();
  }
  return out;
}

std::vector<FaultRule> faults_for_gpu(const std::vector<FaultRule>& rules, int gpu) {
  std::vector<FaultRule> out;
  for (FaultRule r : rules) {
    if (r.gpu >= 0 && r.gpu != gpu) continue;
    r.gpu = -1;
    out.push_back(r);
  }
  return out;
}

std::shared_ptr<FaultInjector> make_injector(const std::vector<FaultRule>& rules, bool inject) {
  if (!inject) return std::make_shared<FaultInjector>(std::vector<FaultRule>{});
  for (auto& r : rules) {
    if (r.until_ms > 0) {
      log::warn("fault", "fault injection armed: {} for {:.1f} s more (then the device heals)", r.describe(),
                std::max<int64_t>(0, r.until_ms - now_epoch_ms()) / 1000.0);
    } else {
      log::warn("fault", "fault injection armed: {}", r.describe());
    }
  }
  return std::make_shared<FaultInjector>(rules);
}

const FaultRule* FaultInjector::on_call(const std::string& stage, int64_t batch) {
  if (rules_.empty()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (auto& [s, c] : counts_) {
    if (s == stage) n = ++c;
  }
  if (n == 0) {
    counts_.push_back({stage, 1});
    n = 1;
  }
  for (auto& r : rules_) {
    if (r.stage != stage && r.stage != "any") continue;
    if (r.expired()) continue;  // the device healed
    if (r.kind == "oom_batch") {
      if (batch > 1 && n >= r.nth) return &r;
      continue;
    }
    if (n == r.nth || (r.from_nth_on && n > r.nth)) return &r;
  }
  return nullptr;
}

Result<Tensor> FaultInjectingRunner::run_call(const Tensor& input, runtime::CallInfo* info) {
  // After a simulated sticky fault every device call of this process fails, as on a dead context: calls that
  // start afterwards and calls that were in flight when it happened.
  auto collateral = [this] {
    return Status(StatusCode::kDeviceError, "device call failed: the context was lost by an injected sticky fault");
  };
  if (injector_->context_lost()) return collateral();
  const FaultRule* rule = injector_->on_call(stage_, input.rank() ? input.dim(0) : 1);
  if (!rule) {
    auto r = inner_->run_call(input, info);
    if (injector_->context_lost()) return collateral();
    return r;
  }
  metrics::inc("steadyocr_faults_injected_total", {{"stage", stage_}, {"kind", rule->kind}});
  log::warn("fault", "injecting {} on {} call ({})", rule->kind, stage_, rule->describe());
  const std::string& k = rule->kind;
  // On a real device the fault is real: the hook arms it in the backend and the run hits it.
  if (injector_->device_hook() && injector_->device_hook()(k)) return inner_->run_call(input, info);
  if (k == "hang") {
    // Never returns: the supervisor's watchdog must kill this process.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  if (k == "oom" || k == "oom_batch") {
    return Status(StatusCode::kOutOfMemory, "out of memory (injected " + rule->describe() + ")");
  }
  if (is_sticky(k)) {
    // The calls in flight elsewhere in this process see the loss first (a real fault surfaces at the next
    // synchronisation, often in another job): give them time to fail before this job reports it.
    injector_->lose_context();
    if (injector_->collateral()) std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    return Status(StatusCode::kDeviceFault, "device context lost: " + k + " (injected " + rule->describe() + ")");
  }
  return Status(StatusCode::kDeviceError, "device error (injected " + rule->describe() + ")");
}

}  // namespace steadyocr::engine

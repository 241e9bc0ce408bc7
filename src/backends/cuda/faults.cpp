#include "backends/cuda/faults.h"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <sstream>
#include <vector>

#include "backends/cuda/check.h"
#include "core/log.h"

namespace steadyocr::cuda::faults {
namespace {

struct Rule {
  Kind kind = Kind::kNone;
  std::string role = "any";
  int64_t at = 1;       // 1-based run of a matching model at which it fires
  bool onward = false;  // fire on every matching run from `at` on
  int64_t seen = 0;
};

std::mutex g_mu;
std::vector<Rule> g_rules;
uint64_t g_hang_ms = 30000;
volatile int* g_flag_host = nullptr;
int* g_flag_dev = nullptr;

bool parse_kind(const std::string& s, Kind* k) {
  static const std::pair<const char*, Kind> kKinds[] = {{"oom", Kind::kOom},
                                                        {"illegal_address", Kind::kIllegalAddress},
                                                        {"hang", Kind::kHang},
                                                        {"no_kernel_image", Kind::kNoKernelImage},
                                                        {"cudnn_not_supported", Kind::kCudnnNotSupported},
                                                        {"cudnn_no_algo", Kind::kCudnnNoAlgo}};
  for (const auto& [name, kind] : kKinds) {
    if (s == name) {
      *k = kind;
      return true;
    }
  }
  return false;
}

Status parse_item(const std::string& item, Rule* r, uint64_t* hang_ms) {
  // kind[@role][:N[+]][,timeout_ms=T]
  std::string body = item, opts;
  if (auto c = item.find(','); c != std::string::npos) {
    body = item.substr(0, c);
    opts = item.substr(c + 1);
  }
  std::string kind = body, rest;
  if (auto c = body.find_first_of("@:"); c != std::string::npos) {
    kind = body.substr(0, c);
    rest = body.substr(c);
  }
  if (!parse_kind(kind, &r->kind)) {
    return invalid_argument(
        fmt::format("fault '{}': unknown kind '{}' (oom, illegal_address, hang, no_kernel_image, "
                    "cudnn_not_supported, cudnn_no_algo)",
                    item, kind));
  }
  if (!rest.empty() && rest[0] == '@') {
    auto c = rest.find(':');
    r->role = rest.substr(1, c == std::string::npos ? std::string::npos : c - 1);
    rest = c == std::string::npos ? "" : rest.substr(c);
    if (r->role.empty()) return invalid_argument(fmt::format("fault '{}': empty model after '@'", item));
  }
  if (!rest.empty()) {
    std::string n = rest.substr(1);
    if (!n.empty() && n.back() == '+') {
      r->onward = true;
      n.pop_back();
    }
    char* end = nullptr;
    long long v = std::strtoll(n.c_str(), &end, 10);
    if (n.empty() || *end != '\0' || v < 1) {
      return invalid_argument(fmt::format("fault '{}': run number must be a positive integer (e.g. ':3')", item));
    }
    r->at = v;
  }
  if (!opts.empty()) {
    if (opts.rfind("timeout_ms=", 0) != 0) {
      return invalid_argument(fmt::format("fault '{}': unknown option '{}' (timeout_ms=N)", item, opts));
    }
    *hang_ms = std::strtoull(opts.c_str() + 11, nullptr, 10);
  }
  return Status::ok();
}

}  // namespace

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kNone:
      return "none";
    case Kind::kOom:
      return "oom";
    case Kind::kIllegalAddress:
      return "illegal_address";
    case Kind::kHang:
      return "hang";
    case Kind::kNoKernelImage:
      return "no_kernel_image";
    case Kind::kCudnnNotSupported:
      return "cudnn_not_supported";
    case Kind::kCudnnNoAlgo:
      return "cudnn_no_algo";
  }
  return "?";
}

Status set_spec(const std::string& spec) {
  std::vector<Rule> rules;
  uint64_t hang_ms = 30000;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ';')) {
    if (item.empty()) continue;
    Rule r;
    RETURN_IF_ERROR(parse_item(item, &r, &hang_ms));
    rules.push_back(r);
  }
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_flag_host) *g_flag_host = 1;  // release any kernel hanging on the old rules
  g_rules = std::move(rules);
  g_hang_ms = hang_ms;
  if (!g_rules.empty()) log::warn("cuda", "fault injection active: '{}'", spec);
  return Status::ok();
}

Kind on_run(const std::string& role) {
  std::lock_guard<std::mutex> lock(g_mu);
  Kind fire = Kind::kNone;
  for (Rule& r : g_rules) {
    if (r.kind == Kind::kCudnnNoAlgo) continue;  // a planning fault (on_conv_plan)
    if (r.role != "any" && r.role != role) continue;
    ++r.seen;
    if (fire == Kind::kNone && (r.seen == r.at || (r.onward && r.seen > r.at))) fire = r.kind;
  }
  if (fire == Kind::kHang && g_flag_host) *g_flag_host = 0;
  return fire;
}

bool on_conv_plan(const std::string& role) {
  std::lock_guard<std::mutex> lock(g_mu);
  bool fire = false;
  for (Rule& r : g_rules) {
    if (r.kind != Kind::kCudnnNoAlgo || (r.role != "any" && r.role != role)) continue;
    ++r.seen;
    fire |= r.seen == r.at || (r.onward && r.seen > r.at);
  }
  return fire;
}

Result<const volatile int*> hang_flag() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_flag_dev) {
    void* h = nullptr;
    SO_GPU_CHECK(cudaHostAlloc(&h, sizeof(int), cudaHostAllocMapped));
    g_flag_host = static_cast<volatile int*>(h);
    *g_flag_host = 0;
    void* d = nullptr;
    SO_GPU_CHECK(cudaHostGetDevicePointer(&d, h, 0));
    g_flag_dev = static_cast<int*>(d);
  }
  return static_cast<const volatile int*>(g_flag_dev);
}

uint64_t hang_timeout_ms() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_hang_ms;
}

}  // namespace steadyocr::cuda::faults

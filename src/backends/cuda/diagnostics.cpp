// The plugin's doctor checks (layers 3-4) behind run_check, plus their shared helpers. Each check works on
// raw CUDA/cuDNN/cuBLAS, independent of the backend, so a failure names the layer underneath it.
#include "backends/cuda/diagnostics.h"
#include "backends/cuda/cudnn_api.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>

#include "backends/cuda/check.h"
#include "backends/cuda/diagnostics_kernels.h"
#include "backends/cuda/diagnostics_util.h"
#include "backends/cuda/kernels/kernels.h"

namespace steadyocr::cuda::diag {

json Outcome::to_json() const {
  return {{"status", status}, {"code", code}, {"summary", summary}, {"evidence", evidence}};
}

namespace {
// The faults of the check running on this thread (its args' "faults").
thread_local std::string t_faults;
}  // namespace

bool fault(const std::string& name) {
  return !t_faults.empty() && ("," + t_faults + ",").find("," + name + ",") != std::string::npos;
}

std::string error_text(cudaError_t e) {
  return fmt::format("{} ({}): {}", cudaGetErrorName(e), static_cast<int>(e), cudaGetErrorString(e));
}
std::string error_text(cudnnStatus_t s) {
  if (!cudnn_load().usable) return fmt::format("cudnnStatus_t {}", static_cast<int>(s));
  return fmt::format("{} ({})", dnn().cudnnGetErrorString(s), static_cast<int>(s));
}
std::string error_text(cublasStatus_t s) {
  return fmt::format("{} ({})", cublasGetStatusName(s), static_cast<int>(s));
}

namespace {

// A failed call as a check's finding, classified like every other failure in the plugin (check.h).
Outcome failure(const GpuErrorClass& c, std::string error, json evidence) {
  Outcome o;
  o.status = "fail";
  // A missing device or an old driver is named by layers 1-2; a layer-3 check meeting one reports its failed call.
  o.code = c.status == StatusCode::kUnavailable ? "L3_CUDA_ERROR" : c.finding;
  evidence["sticky"] = c.sticky;
  if (!c.underlying.empty()) error += " (the context is lost underneath: " + c.underlying + ")";
  evidence["error"] = error;
  o.summary = error;
  o.evidence = std::move(evidence);
  return o;
}

}  // namespace

Outcome cuda_failure(cudaError_t e, const std::string& what, json evidence) {
  evidence["error_code"] = static_cast<int>(e);
  return failure(classify(e), what + ": " + error_text(e), std::move(evidence));
}

Outcome cudnn_failure(cudnnStatus_t s, const std::string& what, json evidence) {
  return failure(classify(s), what + ": " + error_text(s), std::move(evidence));
}

Outcome cublas_failure(cublasStatus_t s, const std::string& what, json evidence) {
  return failure(classify(s), what + ": " + error_text(s), std::move(evidence));
}

cudaError_t use_device(int device, json* evidence) {
  cudaError_t e = cudaSetDevice(device);
  if (e != cudaSuccess) return e;
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, device);
  if (e != cudaSuccess) return e;
  (*evidence)["device"] = device;
  (*evidence)["device_name"] = prop.name;
  (*evidence)["cc"] = fmt::format("{}.{}", prop.major, prop.minor);
  (*evidence)["cc_arch"] = std::to_string(prop.major * 10 + prop.minor);
  return cudaSuccess;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

std::string ConvShape::str() const {
  return fmt::format("x[{},{},{},{}] w[{},{},{},{}] pad {} stride {} dilation {} group {}", n, c, h, w, k, c / group, r,
                     s, pad, stride, dilation, group);
}

ConvShape conv_shape_from(const json& a) {
  ConvShape p;
  p.n = a.value("n", p.n);
  p.c = a.value("c", p.c);
  p.h = a.value("h", p.h);
  p.w = a.value("w", p.w);
  p.k = a.value("k", p.k);
  p.r = a.value("r", p.r);
  p.s = a.value("s", p.s);
  p.pad = a.value("pad", p.pad);
  p.stride = a.value("stride", p.stride);
  p.dilation = a.value("dilation", p.dilation);
  p.group = a.value("group", p.group);
  return p;
}

std::vector<float> conv_reference(const ConvShape& p, const std::vector<float>& x, const std::vector<float>& w) {
  int oh = p.out_h(), ow = p.out_w(), cg = p.c / p.group, kg = p.k / p.group;
  std::vector<float> y(static_cast<size_t>(p.n) * p.k * oh * ow);
  for (int n = 0; n < p.n; ++n)
    for (int k = 0; k < p.k; ++k)
      for (int oy = 0; oy < oh; ++oy)
        for (int ox = 0; ox < ow; ++ox) {
          double acc = 0;
          int g = k / kg;
          for (int c = 0; c < cg; ++c)
            for (int r = 0; r < p.r; ++r)
              for (int s = 0; s < p.s; ++s) {
                int iy = oy * p.stride - p.pad + r * p.dilation, ix = ox * p.stride - p.pad + s * p.dilation;
                if (iy < 0 || iy >= p.h || ix < 0 || ix >= p.w) continue;
                acc += static_cast<double>(x[((static_cast<size_t>(n) * p.c + g * cg + c) * p.h + iy) * p.w + ix]) *
                       w[((static_cast<size_t>(k) * cg + c) * p.r + r) * p.s + s];
              }
          y[((static_cast<size_t>(n) * p.k + k) * oh + oy) * ow + ox] = static_cast<float>(acc);
        }
  return y;
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) SO_GPU_TRY(cudaFree(ptr_));
}

cudaError_t DeviceBuffer::allocate(size_t bytes) {
  if (ptr_) SO_GPU_TRY(cudaFree(ptr_));
  ptr_ = nullptr;
  bytes_ = bytes;
  return cudaMalloc(&ptr_, bytes);
}

Outcome check_kernel_image(const json& args) {
  json ev;
  cudaError_t e = use_device(args.value("device", 0), &ev);
  if (e != cudaSuccess) return cuda_failure(e, "cudaSetDevice", ev);
  ev["kernel"] = "steadyocr::cuda::diag::axpy_kernel";
  ev["injected"] = fault("no_kernel_image") || fault("illegal_address");
  cudaFuncAttributes attr{};
  e = fault("no_kernel_image") ? cudaErrorNoKernelImageForDevice : axpy_attributes(&attr);
  if (e != cudaSuccess) return cuda_failure(e, "cudaFuncGetAttributes(axpy)", ev);
  ev["binary_version"] = attr.binaryVersion;  // the SASS arch the driver picked (10*major+minor)
  ev["ptx_version"] = attr.ptxVersion;
  constexpr int kN = 1 << 16;
  std::vector<float> x(kN), y(kN);
  for (int i = 0; i < kN; ++i) x[i] = static_cast<float>(i % 97), y[i] = static_cast<float>(i % 13);
  DeviceBuffer dx, dy;
  if ((e = dx.allocate(kN * sizeof(float))) != cudaSuccess) return cuda_failure(e, "cudaMalloc", ev);
  if ((e = dy.allocate(kN * sizeof(float))) != cudaSuccess) return cuda_failure(e, "cudaMalloc", ev);
  if ((e = cudaMemcpy(dx.as<float>(), x.data(), kN * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess ||
      (e = cudaMemcpy(dy.as<float>(), y.data(), kN * sizeof(float), cudaMemcpyHostToDevice)) != cudaSuccess)
    return cuda_failure(e, "cudaMemcpy to the device", ev);
  if (fault("illegal_address")) {
    // A real sticky fault: a write to an address no allocation covers.
    if ((e = k::launch_illegal_address(nullptr)) == cudaSuccess) e = cudaDeviceSynchronize();
    if (e != cudaSuccess) return cuda_failure(e, "injected illegal-address kernel", ev);
  }
  if ((e = launch_axpy(2.f, dx.as<float>(), dy.as<float>(), kN, nullptr)) != cudaSuccess)
    return cuda_failure(e, "launch axpy", ev);
  if ((e = cudaDeviceSynchronize()) != cudaSuccess) return cuda_failure(e, "cudaDeviceSynchronize after axpy", ev);
  std::vector<float> got(kN);
  if ((e = cudaMemcpy(got.data(), dy.as<float>(), kN * sizeof(float), cudaMemcpyDeviceToHost)) != cudaSuccess)
    return cuda_failure(e, "cudaMemcpy", ev);
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += got[i] != y[i] + 2.f * x[i];  // small integers: exact in fp32
  ev["wrong_elements"] = wrong;
  Outcome o;
  if (wrong) {
    o.status = "fail";
    o.code = "L3_NUMERIC_MISMATCH";
    ev["what"] = "axpy kernel";
    ev["nmse"] = "n/a";
    ev["nmse_limit"] = "exact";
    ev["max_abs_diff"] = "n/a";
    ev["non_finite"] = 0;
    o.summary = fmt::format("axpy kernel: {} of {} elements wrong (exact integers expected)", wrong, kN);
  } else {
    o.summary = fmt::format("our kernel runs: SASS sm_{} chosen for cc {} (PTX {}), {} elements exact",
                            attr.binaryVersion, ev["cc"].get<std::string>(), attr.ptxVersion, kN);
  }
  o.evidence = ev;
  return o;
}

Outcome check_mem_info(const json& args) {
  json ev;
  cudaError_t e = use_device(args.value("device", 0), &ev);
  size_t free_b = 0, total_b = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) return cuda_failure(e, "cudaMemGetInfo", ev);
  ev["free_bytes"] = free_b;
  ev["total_bytes"] = total_b;
  Outcome o;
  o.summary = fmt::format("{} MiB free of {} MiB", free_b >> 20, total_b >> 20);
  o.evidence = ev;
  return o;
}

Outcome check_budget(const json& args) {
  json ev;
  cudaError_t e = use_device(args.value("device", 0), &ev);
  size_t free_b = 0, total_b = 0;
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_b, &total_b);
  if (e != cudaSuccess) return cuda_failure(e, "cudaMemGetInfo", ev);
  int64_t asked = args.value("bytes", int64_t{0});
  // Without a configured budget, check that a working share (a quarter of free memory, at most 4 GiB) exists.
  size_t bytes = asked > 0 ? static_cast<size_t>(asked) : std::min(free_b / 4, size_t{4} << 30);
  ev["budget_mib"] = bytes >> 20;
  ev["budget_configured"] = asked > 0;
  ev["free_mib"] = free_b >> 20;
  ev["total_mib"] = total_b >> 20;
  ev["injected"] = fault("budget_unavailable");
  DeviceBuffer block;
  e = fault("budget_unavailable") ? cudaErrorMemoryAllocation : block.allocate(bytes);
  if (e == cudaSuccess) e = cudaMemset(block.as<void>(), 0, bytes);
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  Outcome o;
  if (e != cudaSuccess) {
    if (is_sticky(e)) return cuda_failure(e, "allocating the budget", ev);
    cudaGetLastError();  // clear the non-sticky allocation error
    ev["error"] = "cudaMalloc(" + std::to_string(bytes >> 20) + " MiB): " + error_text(e);
    o.status = "fail";
    o.code = "L4_BUDGET_UNAVAILABLE";
    o.summary = fmt::format("cannot allocate the {} MiB budget as one block ({} MiB free of {} MiB)", bytes >> 20,
                            free_b >> 20, total_b >> 20);
  } else {
    o.summary = fmt::format("{} MiB {}allocated and written in one block ({} MiB free of {} MiB)", bytes >> 20,
                            asked > 0 ? "budget " : "working share ", free_b >> 20, total_b >> 20);
  }
  o.evidence = ev;
  return o;
}

}  // namespace steadyocr::cuda::diag

extern "C" int so_run_check(const char* name, const char* args_json, char* result_json, size_t result_len) {
  using namespace steadyocr::cuda::diag;
  if (!result_json || result_len < 2) return 1;
  std::string check = name ? name : "";
  json args = json::parse(args_json && *args_json ? args_json : "{}", nullptr, false);
  Outcome o;
  int rc = 0;
  if (args.is_discarded() || !args.is_object()) {
    o.status = "skipped";
    o.code = "DOCTOR_CHECK_FAILED_TO_RUN";
    o.summary = "run_check: args are not a JSON object";
    rc = 1;
  } else {
    try {
      t_faults = args.contains("faults") && args["faults"].is_string() ? args["faults"].get<std::string>() : "";
      if (check == "kernel_image")
        o = check_kernel_image(args);
      else if (check == "cudnn_conv")
        o = check_cudnn_conv(args);
      else if (check == "fp16")
        o = check_fp16(args);
      else if (check == "streams")
        o = check_streams(args);
      else if (check == "memory")
        o = check_memory(args);
      else if (check == "mem_info")
        o = check_mem_info(args);
      else if (check == "budget")
        o = check_budget(args);
      else {
        o.status = "skipped";
        o.code = "DOCTOR_CHECK_FAILED_TO_RUN";
        o.summary = "run_check: unknown check '" + check + "'";
        rc = 1;
      }
    } catch (const std::exception& ex) {
      o.status = "skipped";
      o.code = "DOCTOR_CHECK_FAILED_TO_RUN";
      o.summary = std::string("run_check: exception: ") + ex.what();
      rc = 1;
    } catch (...) {
      o.status = "skipped";
      o.code = "DOCTOR_CHECK_FAILED_TO_RUN";
      o.summary = "run_check: unknown exception";
      rc = 1;
    }
    t_faults.clear();
  }
  if (o.code == "DOCTOR_CHECK_FAILED_TO_RUN") o.evidence["error"] = o.summary;
  std::string text = o.to_json().dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() + 1 > result_len) {
    Outcome small = o;
    small.evidence = {{"truncated", "evidence larger than the result buffer"}};
    text = small.to_json().dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() + 1 > result_len) return 1;
  }
  std::memcpy(result_json, text.c_str(), text.size() + 1);
  return rc;
}

// The backend contract, the same for every device (reference, oneDNN CPU, CUDA plugin).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"
#include "graph/ir.h"

namespace steadyocr {

struct DeviceInfo {
  std::string backend;       // "reference", "cpu", "cuda"
  std::string name;          // "NVIDIA H200", "x86-64 (AVX-512)"
  int64_t memory_bytes = 0;  // device memory (0 = host memory / unknown)
  std::string compute_capability;
  std::string driver_version;
  std::map<std::string, std::string> libraries;  // "cudnn" -> "9.14.0 (/usr/lib/.../libcudnn.so.9)"
};

// Where one run's time went inside the backend, as far as it can tell (milliseconds). Device backends fill it from
// their own clocks and device events; host backends leave it empty (the caller's wall clock is all there is).
struct RunProfile {
  bool measured = false;   // the fields below were measured on this run
  double acquire_ms = 0;   // host: waiting for a stream and an activation arena
  double staging_ms = 0;   // host: inputs copied into page-locked staging and their copies enqueued
  double upload_ms = 0;    // device: host-to-device copies
  double compute_ms = 0;   // device: the graph's kernels
  double download_ms = 0;  // device: device-to-host copies
  double sync_ms = 0;      // host: blocked until the device had finished the run
};

// A graph planned for one set of static input shapes. One instance serves one caller at a time
// (each worker owns its instance, with its own stream and buffers on a device).
class PreparedGraph {
 public:
  virtual ~PreparedGraph() = default;
  // Runs the whole graph on host inputs (graph input order) and writes host outputs (graph output order).
  virtual Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) = 0;
  // Where the last run's time went; read by the caller that ran it, before anyone else runs this instance.
  virtual RunProfile last_profile() const { return {}; }
  // Bytes of device/arena memory held by this plan (0 when not tracked).
  virtual size_t workspace_bytes() const { return 0; }
  // Host milliseconds the last run spent planning for its input shape (a plan for every shape evaluates its dims and,
  // for a shape new to it, places its buffers); 0 for plans made for one shape. Read like last_profile().
  virtual double last_plan_ms() const { return 0; }
  // Whether run() may be called by several threads at once (a plan for every shape that keeps instances per shape
  // inside, the CUDA backend's): the runtime then shares this one object among every call in flight instead of
  // making replicas. last_profile() and last_plan_ms() then describe the calling thread's last run.
  virtual bool concurrent() const { return false; }
};

class Backend {
 public:
  virtual ~Backend() = default;
  // Stable short name used in results, logs and --backend ("reference", "cpu", "cuda-fp32", ...).
  virtual std::string name() const = 0;
  virtual DeviceInfo device_info() const = 0;
  // Whether this backend can run the node (shapes static). Declining is never an error.
  virtual bool supports(const graph::Node& node) const = 0;
  // Plans a graph whose Value shapes are all static; the backend copies what it keeps.
  virtual Result<std::unique_ptr<PreparedGraph>> prepare(const graph::Graph& graph) = 0;
  // Plans a graph whose shapes are symbolic (graph::specialize_symbolic, then optimised) once, for every input shape
  // its symbols fit: the result's run() takes any of them and plans nothing per shape. Unsupported (the default)
  // where the backend plans per shape, or names the node it cannot run so; the runtime then instantiates the graph
  // for each new shape and calls prepare().
  virtual Result<std::unique_ptr<PreparedGraph>> prepare_symbolic(const graph::Graph& graph) {
    return unsupported("backend " + name() + " plans each input shape");
  }
};

}  // namespace steadyocr

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

// A graph planned for one set of static input shapes. One instance serves one caller at a time
// (each worker owns its instance, with its own stream and buffers on a device).
class PreparedGraph {
 public:
  virtual ~PreparedGraph() = default;
  // Runs the whole graph on host inputs (graph input order) and writes host outputs (graph output order).
  virtual Status run(const std::vector<Tensor>& inputs, std::vector<Tensor>* outputs) = 0;
  // Bytes of device/arena memory held by this plan (0 when not tracked).
  virtual size_t workspace_bytes() const { return 0; }
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
};

}  // namespace steadyocr

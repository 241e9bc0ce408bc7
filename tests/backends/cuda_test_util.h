// Shared by the CUDA backend tests: creating a backend or skipping with the reason, loading the real models.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "core/npy.h"
#include "graph/onnx_import.h"
#include "graph/passes/passes.h"
#include "runtime/backend_registry.h"
#include "runtime/cuda_plugin.h"
#include "runtime/model.h"
#include "test_util.h"

namespace steadyocr::testing {

inline std::shared_ptr<Backend> cuda_backend_or_null(const std::string& name, std::string* why, size_t budget = 0) {
  runtime::BackendOptions o;
  o.gpu_memory_budget_bytes = budget;
  auto b = runtime::create_backend(name, o);
  if (!b.is_ok()) {
    *why = b.status().to_string();
    return nullptr;
  }
  return *b;
}

// A GPU test starts with this: skips with the loader's reason where no CUDA device is usable. The _BUDGET form gives
// the backend a device memory budget (bytes; 0: none).
#define SO_CUDA_BACKEND_BUDGET_OR_SKIP(var, name, budget)                           \
  std::string so_why_##var;                                                         \
  std::shared_ptr<Backend> var = cuda_backend_or_null(name, &so_why_##var, budget); \
  if (!var) GTEST_SKIP() << name << " unavailable (no device): " << so_why_##var
#define SO_CUDA_BACKEND_OR_SKIP(var, name) SO_CUDA_BACKEND_BUDGET_OR_SKIP(var, name, 0)

// The model file, imported, specialised for `shape` and optimised as the runtime does.
inline Result<graph::Graph> optimized_model(const std::string& file, const Shape& shape) {
  ASSIGN_OR_RETURN(graph::Graph g, graph::import_onnx(models_dir() + "/" + file));
  RETURN_IF_ERROR(graph::specialize(g, {shape}, runtime::reference_pass_options()));
  RETURN_IF_ERROR(graph::optimize(g, runtime::reference_pass_options()));
  return g;
}

inline std::string golden_path(const std::string& name) {
  return shared_data_dir() + "/golden/" + name + ".npy";
}

inline Result<Tensor> golden(const std::string& name) {
  return load_npy(golden_path(name));
}

// The golden tensors are shared data (../shared/data/golden): a test that needs one skips, naming the file, where the
// shared data has none (a device bundle made without them), rather than failing.
#define SO_REQUIRE_GOLDEN(name)                                                            \
  do {                                                                                     \
    if (!::steadyocr::testing::file_exists(::steadyocr::testing::golden_path(name)))       \
      GTEST_SKIP() << ::steadyocr::testing::golden_path(name) << " not found (the golden " \
                   << "tensors of ../shared/data/golden; set STEADYOCR_SHARED_DATA)";      \
  } while (0)

constexpr const char* kDetModel = "ch_PP-OCRv4_det_infer.onnx";
constexpr const char* kRecModel = "ch_PP-OCRv4_rec_infer.onnx";
constexpr const char* kClsModel = "ch_ppocr_mobile_v2.0_cls_infer.onnx";

}  // namespace steadyocr::testing

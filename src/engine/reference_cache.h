// The self-test's reference outputs, kept on disk between processes. Computing them costs every cold process a
// quarter of a second on 2 cores (a second import of each model, the reference backend's plain kernels), more than a
// short batch of images takes. Only the reference's side is kept: the rung's own models still run and are compared at
// every start, and a rung that disagrees with a kept output is judged again against a freshly computed one before it
// fails, so the cache can only save time, never pass a kernel that is wrong.
//
// Files: <dir>/reference/<stage>-<key>.npy, the key a digest of the model file's bytes (taken at import), the input's
// shape and bytes, and this build (core/disk_cache.h: version and build IDs). Written to a temporary name and renamed
// (concurrent processes never read half a file). <dir> is the front door's choice (cache_dir_from_environment in
// core/disk_cache.h); a directory that cannot be written to only costs the time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::engine {

class ReferenceCache {
 public:
  // `dir` "": nothing is read or kept.
  explicit ReferenceCache(std::string dir) : dir_(std::move(dir)) {}
  // The kept output for `stage` of the model whose file has `model_digest` (graph::Graph::source_digest) on `input`,
  // if any and readable.
  std::optional<Tensor> find(uint64_t model_digest, const std::string& stage, const Tensor& input) const;
  // Keeps `output`; a failure is logged at debug level and otherwise ignored.
  void keep(uint64_t model_digest, const std::string& stage, const Tensor& input, const Tensor& output) const;
  // The file for these arguments ("" without a directory, or for digest 0: a graph not read from a file).
  std::string path_for(uint64_t model_digest, const std::string& stage, const Tensor& input) const;

 private:
  std::string dir_;
};

}  // namespace steadyocr::engine

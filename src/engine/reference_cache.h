// The self-test's reference outputs, kept on disk between processes. Computing them costs every cold process a
// quarter of a second on 2 cores (a second import of each model, the reference backend's plain kernels), more than a
// short batch of images takes. Only the reference's side is kept: the rung's own models still run and are compared at
// every start, and a rung that disagrees with a kept output is judged again against a freshly computed one before it
// fails, so the cache can only save time, never pass a kernel that is wrong.
//
// Files: <dir>/reference/<stage>-<key>.npy, the key a hash of the model file's bytes, the input's shape and bytes,
// and this build's version. Written to a temporary name and renamed (concurrent processes never read half a file).
// <dir> is the front door's choice (STEADYOCR_CACHE_DIR; "off" or "" for none; else $XDG_CACHE_HOME/steadyocr, else
// $HOME/.cache/steadyocr); a directory that cannot be written to only costs the time.
#pragma once

#include <optional>
#include <string>

#include "core/status.h"
#include "core/tensor.h"

namespace steadyocr::engine {

// The cache directory from the environment (the front door calls this once): "" for none.
std::string cache_dir_from_environment();

class ReferenceCache {
 public:
  // `dir` "": nothing is read or kept.
  explicit ReferenceCache(std::string dir) : dir_(std::move(dir)) {}
  // The kept output for `stage` of the model at `model_path` on `input`, if any and readable.
  std::optional<Tensor> find(const std::string& model_path, const std::string& stage, const Tensor& input);
  // Keeps `output`; a failure is logged at debug level and otherwise ignored.
  void keep(const std::string& model_path, const std::string& stage, const Tensor& input, const Tensor& output);
  // The file for these arguments ("" without a directory or when the model cannot be read).
  std::string path_for(const std::string& model_path, const std::string& stage, const Tensor& input);

 private:
  std::string dir_;
};

}  // namespace steadyocr::engine

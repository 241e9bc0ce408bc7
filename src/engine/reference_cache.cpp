#include "engine/reference_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string_view>

#include "core/content_hash.h"
#include "core/disk_cache.h"
#include "core/log.h"
#include "core/npy.h"

namespace steadyocr::engine {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxOutputBytes = size_t{256} << 20;
constexpr size_t kKeptOutputs = 32;  // files kept (the least recently written go first): ~20 MB for PP-OCR's models

}  // namespace

std::string ReferenceCache::path_for(uint64_t model_digest, const std::string& stage, const Tensor& input) const {
  if (dir_.empty() || model_digest == 0) return {};
  uint64_t h = hash_bytes(input.raw(), input.nbytes(), model_digest);
  h = hash_bytes(fmt::format("{} {} {} ref2", shape_str(input.shape()), dtype_name(input.dtype()), build_identity()),
                 h);
  return fmt::format("{}/reference/{}-{:016x}.npy", dir_, stage, h);
}

std::optional<Tensor> ReferenceCache::find(uint64_t model_digest, const std::string& stage, const Tensor& input) const {
  const std::string path = path_for(model_digest, stage, input);
  if (path.empty() || !fs::exists(path)) return std::nullopt;
  auto t = load_npy(path, kMaxOutputBytes);
  if (!t.is_ok() || t->dtype() != DType::kF32 || t->rank() < 1 || t->dim(0) != input.dim(0)) {
    log::debug("engine", "self-test: kept reference {} is not usable ({}); computing it", path,
               t.is_ok() ? t->describe() : t.status().message());
    return std::nullopt;
  }
  return std::move(t).value();
}

void ReferenceCache::keep(uint64_t model_digest, const std::string& stage, const Tensor& input,
                          const Tensor& output) const {
  const std::string path = path_for(model_digest, stage, input);
  if (path.empty()) return;
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  Status s = ec ? Status(StatusCode::kInternal, ec.message()) : save_npy(tmp, output);
  if (s.is_ok()) {
    fs::rename(tmp, path, ec);
    if (ec) s = Status(StatusCode::kInternal, ec.message());
  }
  if (!s.is_ok()) {
    fs::remove(tmp, ec);
    log::debug("engine", "self-test: could not keep the reference output in {}: {}", path, s.message());
    return;
  }
  prune_directory(fs::path(path).parent_path().string(), kKeptOutputs);
}

}  // namespace steadyocr::engine

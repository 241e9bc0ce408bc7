#include "engine/reference_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string_view>

#include "core/log.h"
#include "core/npy.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr::engine {
namespace {

namespace fs = std::filesystem;

constexpr size_t kMaxModelBytes = size_t{1} << 30;
constexpr size_t kMaxOutputBytes = size_t{256} << 20;

size_t hash_bytes(std::string_view bytes, size_t seed) {
  return std::hash<std::string_view>{}(bytes) ^ (seed + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2));
}

}  // namespace

std::string cache_dir_from_environment() {
  if (const char* d = std::getenv("STEADYOCR_CACHE_DIR")) {
    const std::string_view v(d);
    return v == "off" ? std::string() : std::string(v);
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/steadyocr";
  if (const char* h = std::getenv("HOME"); h && *h == '/') return std::string(h) + "/.cache/steadyocr";
  return {};
}

std::string ReferenceCache::path_for(const std::string& model_path, const std::string& stage, const Tensor& input) {
  if (dir_.empty()) return {};
  std::error_code ec;
  const auto size = fs::file_size(model_path, ec);
  if (ec || size > kMaxModelBytes) return {};
  std::ifstream f(model_path, std::ios::binary);
  std::string bytes(static_cast<size_t>(size), '\0');
  if (!f.read(bytes.data(), static_cast<std::streamsize>(size))) return {};
  size_t h = hash_bytes(bytes, 1);
  h = hash_bytes(std::string_view(static_cast<const char*>(input.raw()), input.nbytes()), h);
  h = hash_bytes(fmt::format("{} {} {} ref1", shape_str(input.shape()), dtype_name(input.dtype()), STEADYOCR_VERSION),
                 h);
  return fmt::format("{}/reference/{}-{:016x}.npy", dir_, stage, h);
}

std::optional<Tensor> ReferenceCache::find(const std::string& model_path, const std::string& stage,
                                           const Tensor& input) {
  const std::string path = path_for(model_path, stage, input);
  if (path.empty() || !fs::exists(path)) return std::nullopt;
  auto t = load_npy(path, kMaxOutputBytes);
  if (!t.is_ok() || t->dtype() != DType::kF32 || t->rank() < 1 || t->dim(0) != input.dim(0)) {
    log::debug("engine", "self-test: kept reference {} is not usable ({}); computing it", path,
               t.is_ok() ? t->describe() : t.status().message());
    return std::nullopt;
  }
  return std::move(t).value();
}

void ReferenceCache::keep(const std::string& model_path, const std::string& stage, const Tensor& input,
                          const Tensor& output) {
  const std::string path = path_for(model_path, stage, input);
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
  }
}

}  // namespace steadyocr::engine

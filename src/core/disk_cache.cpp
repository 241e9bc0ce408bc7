#include "core/disk_cache.h"

#include <elf.h>
#include <fmt/format.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>
#include <vector>

#include "core/content_hash.h"

#ifndef STEADYOCR_VERSION
#define STEADYOCR_VERSION "dev"
#endif

namespace steadyocr {
namespace {

namespace fs = std::filesystem;

bool is_steadyocr_object(const char* name) {
  if (name == nullptr || *name == '\0') return true;  // the executable
  const char* base = std::strrchr(name, '/');
  base = base ? base + 1 : name;
  return std::strncmp(base, "libso_", 6) == 0 || std::strncmp(base, "libsteadyocr", 12) == 0 ||
         std::strncmp(base, "steadyocr", 9) == 0 || std::strncmp(base, "_steadyocr", 10) == 0;
}

// The GNU build ID note of a loaded object, or "" when it has none.
std::string gnu_build_id(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((nh->n_namesz + 3) & ~3u);
      if (desc + nh->n_descsz > end) break;
      if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        return std::string(desc, nh->n_descsz);
      }
      p = desc + ((nh->n_descsz + 3) & ~3u);
    }
  }
  return {};
}

std::string stat_identity(const char* name) {
  struct stat st {};
  const std::string path = (name && *name) ? name : "/proc/self/exe";
  if (::stat(path.c_str(), &st) != 0) return path;
  return fmt::format("{}:{}:{}.{}", path, st.st_size, st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
}

int collect_identity(dl_phdr_info* info, size_t, void* data) {
  if (!is_steadyocr_object(info->dlpi_name)) return 0;
  auto* h = static_cast<uint64_t*>(data);
  std::string id = gnu_build_id(info);
  if (id.empty()) id = stat_identity(info->dlpi_name);
  *h = hash_bytes(id, *h);
  return 0;
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

const std::string& build_identity() {
  static const std::string id = [] {
    uint64_t h = hash_bytes(std::string_view(STEADYOCR_VERSION), 17);
    dl_iterate_phdr(collect_identity, &h);
    return fmt::format("{:016x}", h);
  }();
  return id;
}

bool write_file_atomically(const std::string& path, std::string_view bytes) {
  std::error_code ec;
  fs::create_directories(fs::path(path).parent_path(), ec);
  if (ec) return false;
  const std::string tmp = fmt::format("{}.{}.tmp", path, ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !f.flush()) {
      fs::remove(tmp, ec);
      return false;
    }
  }
  fs::rename(tmp, path, ec);
  if (ec) {
    fs::remove(tmp, ec);
    return false;
  }
  return true;
}

void prune_directory(const std::string& dir, size_t max_files) {
  std::error_code ec;
  std::vector<std::pair<fs::file_time_type, fs::path>> files;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e2;
    if (!it->is_regular_file(e2)) continue;
    files.emplace_back(it->last_write_time(e2), it->path());
  }
  if (files.size() <= max_files) return;
  std::sort(files.begin(), files.end());
  for (size_t i = 0; i + max_files < files.size(); ++i) fs::remove(files[i].second, ec);
}

}  // namespace steadyocr
